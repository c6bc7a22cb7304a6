"""Prints the side-by-side table of bench/peers/run.sh and checks agreement.

Usage: table.py TOL ROW...  where each ROW is MODEL:SIMPY_JSON:SHOAL_JSON,
and optionally --textbook SIMPY_JSON:SIMPY_FAST_JSON:SHOAL_JSON for the
speed-only line of SimPy's textbook M/M/1 model. Exits 1 if a row's mean
response times differ by more than TOL (relative to SimPy's), or if the
textbook model's per-seed means are not those of the fast SimPy model.
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def rate(x):
    return "%.3gM" % (x / 1e6) if x >= 1e6 else "%.3gk" % (x / 1e3)


def main(argv):
    tol = float(argv[0])
    rows, textbook = [], None
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--textbook":
            textbook = args.pop(0).split(":")
        else:
            rows.append(a.split(":"))
    head = ("model", "horizon (s)", "seeds", "SimPy mean (s)", "Shoal mean (s)", "rel diff",
            "SimPy req/s", "Shoal req/s", "ratio", "(wall: SimPy, Shoal, ratio)")
    lines, ok = [head], True
    for model, sp, sh in rows:
        p, s = load(sp), load(sh)
        assert p["horizon_s"] == s["horizon_s"] and p["seeds"] == s["seeds"], "horizons or seeds differ"
        diff = (s["mean_response_s"] - p["mean_response_s"]) / p["mean_response_s"]
        good = abs(diff) <= tol
        ok = ok and good
        lines.append((model, "%g" % p["horizon_s"], str(p["seeds"]),
                      "%.4f ± %.4f" % (p["mean_response_s"], p["stderr_s"]),
                      "%.4f ± %.4f" % (s["mean_response_s"], s["stderr_s"]),
                      "%+.2f%% %s" % (100 * diff, "ok" if good else "FAIL"),
                      rate(p["requests_per_s"]), rate(s["requests_per_s"]),
                      "%.1fx" % (s["requests_per_s"] / p["requests_per_s"]),
                      "(%s, %s, %.1fx)" % (rate(p["requests_per_wall_s"]), rate(s["requests_per_wall_s"]),
                                           s["requests_per_wall_s"] / p["requests_per_wall_s"])))
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    for l in lines:
        print("  ".join(c.ljust(w) for c, w in zip(l, widths)).rstrip())
    print("± is the standard error over seeds; rel diff is (Shoal - SimPy) / SimPy and must be within %g%%." % (100 * tol))
    print("req/s: simulated requests (warm-up included) per CPU second of the process on one core;")
    print("wall-clock rates in parentheses (they also count time other processes took from the core).")
    if textbook:
        t, fast, sh = (load(x) for x in textbook)
        n = t["seeds"]
        same = t["horizon_s"] == fast["horizon_s"] and t["seed"] == fast["seed"] and all(
            abs(a - b) <= 1e-9 * b for a, b in zip(t["seed_means_s"], fast["seed_means_s"][:n]))
        ok = ok and same
        print("mm1, SimPy textbook model (a process per customer, simpy.Resource), %d seeds x %g s: per-seed means %s;"
              % (n, t["horizon_s"], "identical to the fast SimPy model's" if same else "DIFFERENT from the fast SimPy model's: FAIL"))
        print("  SimPy %s req/s, Shoal %s req/s, ratio %.1fx (wall: %.1fx)"
              % (rate(t["requests_per_s"]), rate(sh["requests_per_s"]), sh["requests_per_s"] / t["requests_per_s"],
                 sh["requests_per_wall_s"] / t["requests_per_wall_s"]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
