// Package metrics holds the measurement primitives of Shoal: latency histograms with percentiles,
// time averages of piecewise-constant signals, streaming moments, confidence intervals over
// replications, the fairness indices of the Distr-LB paper (Jain, variance-based, product-based,
// makespan) and the sample reducer that turns an LB agent's recent samples into its 5 observation
// scalars. Telemetry snapshots (Snapshot) that the simulator and the real adapters both produce
// live here as well.
//
// Everything is pure: no I/O, no clock (time is a time.Duration since the start of a run, passed
// in), no randomness. Hot-path methods (Histogram.Record, TimeAverage.Set/Add, Welford.Add,
// SampleReducer.Add/Reduce) do not allocate; none of the types are safe for concurrent use.
//
// Typical loop of a simulated component over one control period:
//
//	var lat metrics.Histogram        // request latencies, seconds
//	var inFlight metrics.TimeAverage // number in system, for Little's law
//	// on arrival:    inFlight.Add(now, +1)
//	// on completion: inFlight.Add(now, -1); lat.Record((now - arrived).Seconds())
//	// end of period:
//	p99, L := lat.Quantile(0.99), inFlight.Mean(now)
//	lat.Reset(); inFlight.Restart(now)
//
// And at the end of an experiment, over seeds:
//
//	mean, half := metrics.MeanCI(perSeedP99, 0.95) // report mean ± half
package metrics // import "github.com/shoal-project/shoal/metrics"
