#!/usr/bin/python3
"""Writes libsvm_reference.json: an epsilon-SVR reference solution computed by
LIBSVM (through scikit-learn's sklearn.svm.SVR, Debian package python3-sklearn)
on a small deterministic data set. svr_test.go regenerates the same data set
and compares its SMO solution with this one.

Run: /usr/bin/python3 libsvm_reference.py > libsvm_reference.json
"""
import json
import math

import sklearn
from sklearn.svm import SVR

N = 30
X, Z = [], []
for i in range(N):
    a = i / (N - 1)
    b = (i * 0.6180339887498949) % 1.0
    X.append([a, b])
    Z.append(math.sin(2 * math.pi * a) + 0.5 * b * b + 0.1 * math.cos(13 * i))

cases = []
for C, eps, gamma in [(3.0, 0.1, 2.0), (100.0, 0.05, 5.0), (0.5, 0.2, 1.0)]:
    m = SVR(kernel="rbf", C=C, epsilon=eps, gamma=gamma, tol=1e-8, shrinking=False)
    m.fit(X, Z)
    tests = [[0.1, 0.2], [0.35, 0.9], [0.5, 0.5], [0.77, 0.1], [0.95, 0.66]]
    cases.append({
        "C": C, "epsilon": eps, "gamma": gamma,
        "intercept": float(m.intercept_[0]),
        "support": [int(s) for s in m.support_],
        "dual_coef": [float(c) for c in m.dual_coef_[0]],
        "tests": tests,
        "predictions": [float(p) for p in m.predict(tests)],
    })
print(json.dumps({"generator": "sklearn %s (libsvm)" % sklearn.__version__, "cases": cases}, indent=1))
