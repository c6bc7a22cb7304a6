// Package jolteon is a Jolteon-like configurator of serverless workflows,
// reimplemented for Shoal from the paper (Zhang, Jin and Jin, "Jolteon:
// Unleashing the Promise of Serverless for Serverless Workflows", NSDI '24)
// and its release (pkusys/Jolteon): a stochastic performance model per
// function, a white-box form fitted from profiling plus a black-box
// distribution of what the form does not explain, composed over the
// workflow's call graph, and a chance-constrained optimisation of the
// workflow's configuration: the least price such that P(latency ≤ SLO) ≥
// 1 − δ, estimated on samples of the model (section 4).
//
// What differs, and why. Jolteon configures AWS Lambda, where every request
// gets an instance of its own, so its white-box form is a function of the
// memory (CPU share) and the degree of parallelism of a stage. Shoal's
// workflows run OpenFaaS-like functions whose instances share their CPU
// among the calls in progress, so the white-box form here is a
// processor-sharing queue per instance: a call's CPU work, measured as
// cAdvisor measures it, served on at most one core, slowed by the
// instance's utilisation, plus its time off the CPU (I/O, calls out),
// fitted by least squares. The black box is the measured distribution of
// a call's latency over the form's mean, where the release instead draws
// the form's parameters from their fitted covariance. The solver is a
// descent over the configuration grid and a local probe, where the release
// runs SLSQP on a continuous relaxation, rounds up and probes (the form is
// not differentiable where an instance saturates). Like the paper's
// baselines in FaaSConf's study, it sets CPU, memory and instances, not a
// concurrency limit; memory is what holds the calls in flight at the
// chance constraint's quantile.
package jolteon

import (
	"math"
	"slices"

	"github.com/shoal-project/shoal/control/callgraph"
	"github.com/shoal-project/shoal/control/faasconf"
)

// Model is a workflow's stochastic performance model.
type Model struct {
	Functions []Function `json:"functions"`
	// Graph is the workflow: one root per request class, Shares their
	// shares of the requests.
	Graph  callgraph.Graph `json:"graph"`
	Shares []float64       `json:"shares"`
	// Offset is the time a request spends in the services that are not
	// configured (the orchestrator's own work), seconds.
	Offset float64 `json:"offset_s"`
}

// Function is one configured function's model.
type Function struct {
	Name string `json:"name"`
	// Visits are its calls per workflow request.
	Visits float64 `json:"visits"`
	// Work is a call's CPU time, core-seconds; Delay its time off the CPU,
	// seconds (the white box).
	Work  float64 `json:"work_s"`
	Delay float64 `json:"delay_s"`
	// Residual are quantiles of a call's latency over the white box's
	// mean, evenly spaced (the black box), for each band of the
	// instances' utilisation (ResidualBands): processor sharing spreads a
	// call's latency more the busier its instance.
	Residual [][]float64 `json:"residual"`
	// Memory is the function's memory model (what its instances use).
	Memory faasconf.MemoryModel `json:"memory"`
	// Refusal is the calls measured refused at a concurrency limit over
	// the white box's loss (Blocking) in the same windows: the black box of
	// the refusals (0 is taken as 1).
	Refusal float64 `json:"refusal,omitempty"`
}

// Mean is the white box: the mean latency of a call, seconds, with
// rate workflow requests per second and the configuration c; +Inf when
// its instances cannot keep up. An instance serves its calls by processor
// sharing of c.CPU cores, each call on one core at most (the simulator's,
// and Linux CFS's, semantics): with Poisson arrivals and exponential work
// its number of calls is the birth-death chain of rates λ and
// min(k, c)/Work, whose mean over λ is the time on the CPU (Little's
// law), to which the time off it adds.
func (f *Function) Mean(c faasconf.Config, rate float64) float64 {
	if f.Utilisation(c, rate) >= 1 {
		return math.Inf(1)
	}
	lambda := rate * f.Visits / float64(max(c.Instances, 1))
	if lambda <= 0 || f.Work <= 0 {
		return f.Delay + f.Work/math.Min(c.CPU, 1)
	}
	var norm, calls float64
	p := 1.0
	for k := 0; k < 10000; k++ {
		norm += p
		calls += float64(k) * p
		p *= lambda * f.Work / math.Min(float64(k+1), c.CPU)
		if p < 1e-12*norm && float64(k) > c.CPU {
			break
		}
	}
	return f.Delay + calls/norm/lambda
}

// Utilisation is the CPU utilisation of each instance.
func (f *Function) Utilisation(c faasconf.Config, rate float64) float64 {
	return rate * f.Visits * f.Work / (float64(max(c.Instances, 1)) * c.CPU)
}

// InFlight is the calls in progress at an instance that its memory must
// hold with probability 1 − delta: the larger of the Poisson quantile of
// their mean (Little's law) and the geometric tail of an M/M/1
// processor-sharing queue at the instance's utilisation, P(N > k) =
// rho^(k+1); latency is a call's mean latency there (Mean).
func (f *Function) InFlight(c faasconf.Config, rate, latency, delta float64) int {
	mean := rate * f.Visits / float64(max(c.Instances, 1)) * latency
	if math.IsInf(mean, 1) {
		return math.MaxInt32
	}
	k, p, cum := 0, math.Exp(-mean), math.Exp(-mean)
	for cum < 1-delta && k < 1000 {
		k++
		p *= mean / float64(k)
		cum += p
	}
	if rho := f.Utilisation(c, rate); rho > 0 {
		k = max(k, int(math.Ceil(math.Log(delta)/math.Log(rho)))-1)
	}
	return max(k, 1)
}

// Blocking is the chance a call finds an instance at its concurrency
// limit, c.Concurrency calls (0: none), and is refused: the white box's
// birth-death chain truncated there (M/M/c/K, with c the instance's cores
// and K the limit), whose last state's probability is the loss seen by
// Poisson arrivals. It overstates the loss where the work varies less than
// exponentially and the arrivals are smoothed by round robin (8% at
// resnet's own configuration on Sequential, where 0.45% of the requests
// fail), and understates it where calls wait long off the CPU, holding no
// core: Refused scales it by what profiling measured.
func (f *Function) Blocking(c faasconf.Config, rate float64) float64 {
	if c.Concurrency <= 0 {
		return 0
	}
	a := rate * f.Visits / float64(max(c.Instances, 1)) * f.Work
	norm, p := 1.0, 1.0
	for k := 1; k <= c.Concurrency; k++ {
		p *= a / math.Min(float64(k), c.CPU)
		norm += p
	}
	return p / norm
}

// Refused is the chance a call is refused: the white box's loss times the
// measured Refusal.
func (f *Function) Refused(c faasconf.Config, rate float64) float64 {
	scale := f.Refusal
	if scale <= 0 {
		scale = 1
	}
	return min(1, scale*f.Blocking(c, rate))
}

// ResidualBands are the upper bounds of the utilisation bands of the
// black box.
var ResidualBands = []float64{0.3, 0.6, 1}

// band is the black box's band at utilisation rho: its own, or the
// nearest one measured.
func (f *Function) band(rho float64) []float64 {
	b := bandOf(rho)
	for d := 0; d < len(ResidualBands); d++ {
		for _, k := range []int{b - d, b + d} {
			if k >= 0 && k < len(f.Residual) && len(f.Residual[k]) > 0 {
				return f.Residual[k]
			}
		}
	}
	return nil
}

// bandOf is the index of utilisation rho's band.
func bandOf(rho float64) int {
	b := 0
	for b < len(ResidualBands)-1 && rho >= ResidualBands[b] {
		b++
	}
	return b
}

// residual is the band's draw at u in [0, 1) (1 without measurements).
func residual(band []float64, u float64) float64 {
	if len(band) == 0 {
		return 1
	}
	return band[min(int(u*float64(len(band))), len(band)-1)]
}

// index is the function's position, -1 for a service not configured.
func (m *Model) index(service string) int {
	return slices.IndexFunc(m.Functions, func(f Function) bool { return f.Name == service })
}
