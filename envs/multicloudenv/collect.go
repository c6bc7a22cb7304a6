// Package multicloudenv trains the multi-cloud routing paper's performance
// models (multicloud-routing-bo.txt, section III-A): it collects the
// offline data set in the simulator (random replicas, RTTs, background
// loads and request rates, and random request shifts of every routed
// service), measures the standard processing times, and fits each
// service's SVR and neural network.
package multicloudenv

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
)

// Sample is one service's measured period: the model's input, the
// measured mean response time (its own part: SelfTime), ms, and the p95
// of its calls' response time, ms (NaN when none completed).
type Sample struct {
	X   []float64
	Y   float64
	P95 float64
}

// Data are samples by service name, in the topology's order.
type Data struct {
	Services []string
	Samples  map[string][]Sample
}

// Collection configures a data collection run.
type Collection struct {
	Seed uint64
	// Periods is the number of measurement periods (each gives one sample
	// per routed service that was called).
	Periods int
	// Period is the measurement period (10 s: the paper's Prometheus
	// scrape interval, II-B).
	Period time.Duration
	// Settle is the wait after each route update before the period's
	// measurement starts (II-C: "controller has to wait for 10 seconds to
	// guarantee that metrics are accurate after route update").
	Settle time.Duration
	// Random is true for the offline data set: every sample is measured
	// on a fresh system in a random environment (see randomEnvironment).
	// False runs the scenario itself, its online test settings, period
	// after period.
	Random bool
	// Shift is the random request shifts' layout: multicloud.ShiftOneWay
	// (the paper's) or multicloud.ShiftTwoWay.
	Shift string
}

// DefaultCollection is the paper's offline data set: 2500 periods.
func DefaultCollection() Collection {
	return Collection{Seed: 1, Periods: 2500, Period: 10 * time.Second, Settle: 10 * time.Second, Random: true, Shift: multicloud.ShiftOneWay}
}

// Collect measures the routed services under random request shifts (every
// routed service gets a new one each period; half of them small, half
// anywhere) and returns the samples, with standard the services' standard
// processing times (nil: zeros).
//
// The offline data set (Random) measures each sample on a fresh system
// (settle, then the period) in its own random environment, so a sample
// does not carry the queues an earlier shift built: in the paper's testbed
// each sample ran after the last, and an overload's backlog spilled into
// the next samples as noise no input explains. The online test settings
// run the scenario continuously, as a controller sees it.
func Collect(ctx context.Context, sc *scenario.Scenario, c Collection, standard map[string][]float64, progress func(float64)) (*Data, error) {
	rng := rand.New(rand.NewPCG(c.Seed, 0x7368696674)) // "shift"
	step := c.Settle + c.Period
	var (
		cl   *cluster.Cluster
		topo *multicloud.Topology
		data = &Data{Samples: map[string][]Sample{}}
		snap metrics.Snapshot
		st   multicloud.State
	)
	start := func(cfg *cluster.Config, seed uint64, horizon time.Duration) error {
		var err error
		if cl, err = cluster.New(cfg, cluster.Options{Seed: seed, Selectors: lb.Classical(), Traces: sc.Traces(), Horizon: horizon}); err != nil {
			return err
		}
		cl.Observe(&snap)
		if topo == nil {
			if topo, err = multicloud.ReadTopology(&snap); err != nil {
				return err
			}
			for _, s := range topo.Services {
				data.Services = append(data.Services, s.Name)
			}
		}
		return nil
	}
	if !c.Random {
		if err := start(&sc.Config, c.Seed, time.Duration(c.Periods+1)*step); err != nil {
			return nil, err
		}
	}
	shifts := make([][]float64, 0)
	for p := range c.Periods {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		now := time.Duration(p) * step
		if c.Random {
			cfg := randomEnvironment(sc, rng)
			if err := start(&cfg, rng.Uint64(), step); err != nil {
				return nil, err
			}
			now = 0
		}
		if len(shifts) == 0 {
			shifts = make([][]float64, len(topo.Services))
		}
		var acts []control.Action
		for i := range topo.Services {
			svc := &topo.Services[i]
			shifts[i] = randomShift(shifts[i], len(topo.Locations), c.Shift, p%2 == 1, rng)
			acts = topo.Actions(acts, svc, multicloud.Weights(nil, shifts[i], svc))
		}
		for _, a := range acts {
			if err := cl.Apply(now, a); err != nil {
				return nil, err
			}
		}
		cl.RunUntil(now + c.Settle)
		cl.Observe(&snap)
		cl.RunUntil(now + step)
		cl.Observe(&snap)
		for i := range topo.Services {
			svc := &topo.Services[i]
			topo.Observe(&st, &snap, svc)
			if math.IsNaN(st.SelfTime) {
				continue
			}
			std := standard[svc.Name]
			if std == nil {
				std = make([]float64, len(multicloud.StandardRPS))
			}
			data.Samples[svc.Name] = append(data.Samples[svc.Name], Sample{X: multicloud.Features(nil, &st, std, shifts[i]), Y: st.SelfTime, P95: p95(&snap, svc)})
		}
		if progress != nil {
			progress(float64(p+1) / float64(c.Periods))
		}
	}
	return data, nil
}

// p95 is the 95th percentile of service svc's response time over the
// period as its callers saw it, network included, ms: its routes'
// histograms merged (the mesh's istio_request_duration_milliseconds,
// reporter="source", summed over callers and locations); NaN when none
// completed.
func p95(s *metrics.Snapshot, svc *multicloud.Service) float64 {
	var h metrics.LatencyHist
	for i := range s.Routes {
		if r := &s.Routes[i]; r.Service == svc.Name {
			h.Merge(&r.Hist)
		}
	}
	if h.Count() == 0 {
		return math.NaN()
	}
	return 1000 * h.Quantile(0.95)
}

// randomShift draws a request shift of layout. One-way: uniform in
// [-1, 1] per pair, or in [-0.25, 0.25] when small. Two-way: each
// location's route uniform over every way to split its calls (the simplex
// of home and the n-1 others), or when small its shares away each uniform
// in [0, 0.25/(n-1)]. Half the samples are small: near the routes a
// controller ends up using, where most calls stay home.
func randomShift(dst []float64, n int, layout string, small bool, rng *rand.Rand) []float64 {
	size := multicloud.ShiftLen(n, layout)
	dst = slices.Grow(dst[:0], size)[:size]
	if layout != multicloud.ShiftTwoWay {
		scale := 1.0
		if small {
			scale = 0.25
		}
		for k := range dst {
			dst[k] = scale * (2*rng.Float64() - 1)
		}
		return dst
	}
	for i := range n {
		row := dst[i*(n-1) : (i+1)*(n-1)]
		if small {
			for k := range row {
				row[k] = 0.25 / float64(n-1) * rng.Float64()
			}
			continue
		}
		// Uniform on the simplex: normalised exponentials, home's last.
		sum := rng.ExpFloat64()
		for k := range row {
			row[k] = rng.ExpFloat64()
			sum += row[k]
		}
		for k := range row {
			row[k] /= sum
		}
	}
	return dst
}

// randomEnvironment returns the scenario's system in a random environment
// of the offline data set (III-A: "random service replica, clouds latency,
// and RPS"): each location's users at a rate uniform in [0, twice their
// mean] (every source of a location at the same rate, as the paper's load
// generator issues all request types at once), every routed service's
// replicas in each location, the RTTs and the background loads uniform in
// the ranges of the scenario's random changes (default 1-3 replicas,
// 10-40 ms, 0-40%), and no changes over time.
func randomEnvironment(sc *scenario.Scenario, rng *rand.Rand) cluster.Config {
	cfg := sc.Config
	rc := cluster.RandomChanges{RTT: []time.Duration{10 * time.Millisecond, 40 * time.Millisecond}, Replicas: []int{1, 3}, Background: []float64{0, 0.4}}
	if r := sc.RandomChanges; r != nil {
		if len(r.RTT) == 2 {
			rc.RTT = r.RTT
		}
		if len(r.Replicas) == 2 {
			rc.Replicas = r.Replicas
		}
		if len(r.Background) == 2 {
			rc.Background = r.Background
		}
	}
	cfg.RandomChanges, cfg.Changes = nil, nil
	cfg.Locations = slices.Clone(cfg.Locations)
	for i := range cfg.Locations {
		l := &cfg.Locations[i]
		l.RTT = map[string]time.Duration{}
		for _, o := range cfg.Locations[i+1:] {
			l.RTT[o.Name] = rc.RTT[0] + time.Duration(rng.Int64N(int64(rc.RTT[1]-rc.RTT[0])+1)).Round(time.Millisecond)
		}
		l.Background = rc.Background[0] + rng.Float64()*(rc.Background[1]-rc.Background[0])
	}
	cfg.Services = slices.Clone(cfg.Services)
	for i := range cfg.Services {
		s := &cfg.Services[i]
		if len(s.Placement) == 0 {
			continue
		}
		placement := map[string]int{}
		for _, l := range cfg.Locations {
			if _, ok := s.Placement[l.Name]; ok {
				n := max(rc.Replicas[0]+rng.IntN(rc.Replicas[1]-rc.Replicas[0]+1), 1, s.MinReplicas)
				if s.MaxReplicas > 0 {
					n = min(n, s.MaxReplicas)
				}
				placement[l.Name] = n
			}
		}
		s.Placement = placement
	}
	rate := map[string]float64{}
	for _, l := range cfg.Locations {
		rate[l.Name] = rng.Float64()
	}
	cfg.Sources = slices.Clone(cfg.Sources)
	for i := range cfg.Sources {
		src := &cfg.Sources[i]
		src.Arrivals = workload.ProcessSpec{Kind: "poisson", Rate: math.Max(rate[src.Location]*2*src.Arrivals.Rate, 1e-6)}
	}
	return cfg
}

// Standard measures the standard processing times (III-A: "collected under
// the environment where only one cloud is available and all replicas are
// set to one"): every call stays in the first location, whose users send
// each of multicloud.StandardRPS (scaled so that 50 is twice a source's
// mean rate: the offline data's top), with no other users, changes or
// background load; each service's mean response time, ms, over window.
func Standard(ctx context.Context, sc *scenario.Scenario, seed uint64, window time.Duration) (map[string][]float64, error) {
	out := map[string][]float64{}
	first := sc.Locations[0].Name
	for _, rps := range multicloud.StandardRPS {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cfg := sc.Config
		cfg.RandomChanges, cfg.Changes = nil, nil
		cfg.Locations = slices.Clone(cfg.Locations)
		for i := range cfg.Locations {
			cfg.Locations[i].Background = 0
		}
		cfg.Sources = slices.Clone(cfg.Sources)
		rates := make([]float64, len(cfg.Sources))
		for i := range cfg.Sources {
			src := &cfg.Sources[i]
			if src.Location == first {
				rates[i] = rps / 50 * 2 * src.Arrivals.Rate
			}
			src.Arrivals = workload.ProcessSpec{Kind: "poisson", Rate: math.Max(rates[i], 1e-9)}
		}
		cl, err := cluster.New(&cfg, cluster.Options{Seed: seed, Selectors: lb.Classical(), Traces: sc.Traces(), Horizon: window})
		if err != nil {
			return nil, err
		}
		var snap metrics.Snapshot
		cl.Observe(&snap)
		topo, err := multicloud.ReadTopology(&snap)
		if err != nil {
			return nil, err
		}
		for i := range topo.Services {
			svc := &topo.Services[i]
			for _, a := range topo.Actions(nil, svc, toFirst(len(topo.Locations))) {
				if err := cl.Apply(0, a); err != nil {
					return nil, err
				}
			}
		}
		cl.RunUntil(window)
		cl.Observe(&snap)
		var st multicloud.State
		for i := range topo.Services {
			svc := &topo.Services[i]
			topo.Observe(&st, &snap, svc)
			if math.IsNaN(st.SelfTime) {
				return nil, fmt.Errorf("standard processing time of %s at %g req/s: no call completed", svc.Name, rps)
			}
			out[svc.Name] = append(out[svc.Name], st.SelfTime)
		}
	}
	return out, nil
}

// toFirst routes every call to the first location.
func toFirst(n int) [][]float64 {
	w := make([][]float64, n)
	for i := range w {
		w[i] = make([]float64, n)
		w[i][0] = 1
	}
	return w
}
