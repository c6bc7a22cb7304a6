// Package bo is Bayesian optimisation for Shoal: Gaussian-process regression
// (RBF and Matérn 5/2 kernels with ARD length-scales, hyperparameters fitted by
// maximising the log marginal likelihood with multi-start L-BFGS), expected
// improvement acquisitions (EI, plug-in noisy EI, Monte-Carlo noisy EI of
// Letham et al., each multiplied by the probability of feasibility of
// constraint models), and an ask/tell optimiser
// over continuous, integer and categorical parameters, with random search as
// the baseline behind the same interface. Epsilon-SVR lives in the svr
// subpackage.
//
// All randomness comes from the *rand.Rand passed in: the same seed gives the
// same suggestions. Objectives are minimised; constraints are c_k(x) <= 0.
//
// The ask/tell loop:
//
//	space := []bo.Param{
//		{Name: "cpu", Kind: bo.Continuous, Low: 0.25, High: 4},
//		{Name: "replicas", Kind: bo.Integer, Low: 1, High: 10},
//		{Name: "cloud", Kind: bo.Categorical, Categories: []string{"aws", "gcp"}},
//	}
//	opt, err := bo.NewBayesOpt(bo.Config{Space: space, Constraints: 1}, rand.New(rand.NewPCG(seed, 0)))
//	if err != nil { ... }
//	for range budget {
//		x, err := opt.Ask()
//		if err != nil { ... }
//		latency, cost := evaluate(x)          // the expensive experiment
//		err = opt.Tell(x, latency, []float64{cost - maxCost})
//		if err != nil { ... }
//	}
//	best, ok := opt.Best() // smallest latency among feasible observations
//
// Swap bo.NewBayesOpt for bo.NewRandomSearch(space, 1, rng) to run the baseline.
// To evaluate several points at once, call AskBatch(q) (or Ask several times
// before telling): points not yet told enter the models as kriging-believer
// fantasies, so the batch is spread out.
package bo
