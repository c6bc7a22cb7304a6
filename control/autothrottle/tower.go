package autothrottle

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/shoal-project/shoal/learn/bandit"
	"github.com/shoal-project/shoal/metrics"
)

// TowerConfig is the Tower's (utils.py's). Start from DefaultTower: a zero
// Explore or Warmup is a setting, the other zero fields take its values.
type TowerConfig struct {
	Period time.Duration `json:"period_ns"` // between decisions (60 s: Locust's stats interval)
	// Targets are the throttle ratios a cluster's Captains may be given
	// (§4): an action is one for each of the two clusters.
	Targets []float64 `json:"targets"`
	// SLO is the end-to-end p99 latency it aims at, seconds.
	SLO float64 `json:"slo_s"`
	// Bucket groups the samples' request rates (20 req/s for TrainTicket).
	Bucket float64 `json:"bucket_rps"`
	// Explore is the chance of moving to a neighbouring action (0.1 in
	// use; 0 in the release's measured runs, after warm-up).
	Explore float64 `json:"explore"`
	// Warmup is how many of a run's first minutes are not samples (3).
	Warmup int `json:"warmup_minutes"`
	// Resamples are the examples each minute's model is trained on (10,000),
	// Hidden its hidden units (3) and Rate its learning rate (0.5).
	Resamples int     `json:"resamples"`
	Hidden    int     `json:"hidden"`
	Rate      float64 `json:"rate"`
	// RPSScale divides the request rate into the model's input (VW's
	// normalised updates need no scale; plain AdaGrad on a network does).
	RPSScale float64 `json:"rps_scale"`
}

// DefaultTower is the release's Tower for TrainTicket.
func DefaultTower() TowerConfig {
	return TowerConfig{Period: time.Minute, Targets: []float64{0, 0.02, 0.04, 0.06, 0.10, 0.15, 0.20, 0.25, 0.30},
		SLO: 1, Bucket: 20, Explore: 0.1, Warmup: 3, Resamples: 10000, Hidden: 3, Rate: 0.5, RPSScale: 1000}
}

// Sample is one minute: the request rate its decision saw, the action
// taken, and the minute after's p99 latency (s) and mean CPU allocated
// (cores, all managed services).
type Sample struct {
	RPS    float64 `json:"rps"`
	Action int     `json:"action"`
	P99    float64 `json:"p99_s"`
	Alloc  float64 `json:"alloc_cores"`
}

// Tower picks the Captains' targets each minute: a contextual bandit on
// the request rate whose cost ranks the CPU allocated among the minutes
// that met the SLO and puts every minute that missed it above them.
type Tower struct {
	cfg     TowerConfig
	Samples []Sample // what it learns from: the file's, then this run's
	nets    *bandit.ArmNets
	rng     *rand.Rand

	// the minute in progress
	arrivals  int64
	hist      metrics.LatencyHist
	alloc     float64 // core-seconds
	elapsed   time.Duration
	pending   Sample
	hasAction bool
	done      int // samples completed in this run
	next      time.Duration
	// leastTried makes it the release's ExploreTower: each action drawn
	// among the least tried and held two minutes, the second a sample.
	leastTried bool
	held       bool // the pending action's first minute is over
}

// ExploreLeastTried makes the Tower explore as the release's warm-up
// (ExploreTower, §A.7): every action is drawn uniformly among those tried
// least, held for two minutes, and only the second minute is a sample.
func (t *Tower) ExploreLeastTried() { t.leastTried = true }

// NewTower returns a Tower that starts from samples, drawing its models
// and explorations from seed.
func NewTower(cfg TowerConfig, samples []Sample, seed uint64) *Tower {
	d := DefaultTower()
	cfg.Period, cfg.SLO, cfg.Bucket = cmp.Or(cfg.Period, d.Period), cmp.Or(cfg.SLO, d.SLO), cmp.Or(cfg.Bucket, d.Bucket)
	cfg.Resamples, cfg.Hidden, cfg.Rate = cmp.Or(cfg.Resamples, d.Resamples), cmp.Or(cfg.Hidden, d.Hidden), cmp.Or(cfg.Rate, d.Rate)
	cfg.RPSScale = cmp.Or(cfg.RPSScale, d.RPSScale)
	if len(cfg.Targets) == 0 {
		cfg.Targets = d.Targets
	}
	rng := rand.New(rand.NewPCG(seed, 0xa7))
	k := len(cfg.Targets)
	return &Tower{cfg: cfg, Samples: slices.Clone(samples), rng: rng, nets: bandit.NewArmNets(k*k, cfg.Hidden, rng), next: cfg.Period}
}

// Targets are the targets of action a: the first cluster's and the second's.
func (t *Tower) Targets(a int) (first, second float64) {
	k := len(t.cfg.Targets)
	return t.cfg.Targets[a/k], t.cfg.Targets[a%k]
}

// observe adds a period to the minute: the requests that entered, their
// latencies, and the managed services' CPU allocated.
func (t *Tower) observe(snap *metrics.Snapshot, managed map[string]int) {
	for i := range snap.Classes {
		c := &snap.Classes[i]
		t.arrivals += c.Arrivals
		t.hist.Merge(&c.LatencyHist)
	}
	for i := range snap.Services {
		s := &snap.Services[i]
		if _, ok := managed[s.Name]; ok {
			t.alloc += float64(s.Replicas) * s.CPULimit * snap.Period.Seconds()
		}
	}
	t.elapsed += snap.Period
}

// decide ends the minute: it completes the last decision's sample, learns
// from every sample again, and returns the next action. Exploring the
// least tried (the warm-up), it holds each action two minutes and learns
// nothing.
func (t *Tower) decide(now time.Duration) int {
	rps := float64(t.arrivals) / max(t.elapsed.Seconds(), 1e-9)
	var a int
	switch {
	case t.leastTried && t.hasAction && !t.held: // the hold's first minute: not a sample
		t.done++
		a, t.held = t.pending.Action, true
	case t.leastTried:
		t.complete()
		a, t.held = t.leastTriedAction(), false
	default:
		t.complete()
		t.learn()
		a = t.explore(t.nets.Best(rps / t.cfg.RPSScale))
	}
	t.pending, t.hasAction = Sample{RPS: rps, Action: a}, true
	t.arrivals, t.alloc, t.elapsed = 0, 0, 0
	t.hist.Reset()
	t.next = now + t.cfg.Period
	return a
}

// complete ends the pending action's minute, a sample once the run's
// first Warmup minutes are over.
func (t *Tower) complete() {
	if !t.hasAction {
		return
	}
	if t.done++; t.done > t.cfg.Warmup {
		t.pending.P99 = t.hist.Quantile(0.99)
		t.pending.Alloc = t.alloc / max(t.elapsed.Seconds(), 1e-9)
		t.Samples = append(t.Samples, t.pending)
	}
}

// leastTriedAction draws uniformly among the actions of fewest samples.
func (t *Tower) leastTriedAction() int {
	tried := make([]int, len(t.cfg.Targets)*len(t.cfg.Targets))
	for _, s := range t.Samples {
		tried[s.Action]++
	}
	least := slices.Min(tried)
	var pick []int
	for i, n := range tried {
		if n == least {
			pick = append(pick, i)
		}
	}
	return pick[t.rng.IntN(len(pick))]
}

// learn trains fresh models on Resamples examples drawn uniformly from
// the groups of samples of one action and rate bucket, each group's cost
// the median of its samples' (utils.py, aggregate_samples and VwTower).
func (t *Tower) learn() {
	t.nets.Reset(t.rng)
	if len(t.Samples) == 0 {
		return
	}
	costs := Costs(t.Samples, t.cfg.SLO)
	type key struct {
		action int
		bucket float64
	}
	groups := map[key][]float64{}
	var keys []key
	for i, s := range t.Samples {
		k := key{s.Action, math.Round(s.RPS/t.cfg.Bucket) * t.cfg.Bucket}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], costs[i])
	}
	med := make([]float64, len(keys))
	for i, k := range keys {
		med[i] = median(groups[k])
	}
	for range t.cfg.Resamples {
		i := t.rng.IntN(len(keys))
		t.nets.Update(keys[i].action, keys[i].bucket/t.cfg.RPSScale, med[i], t.cfg.Rate)
	}
}

// explore keeps a with probability 1 - Explore, else moves to one of its
// neighbours on the grid of the two clusters' targets.
func (t *Tower) explore(a int) int {
	if t.cfg.Explore <= 0 || t.rng.Float64() >= t.cfg.Explore {
		return a
	}
	k := len(t.cfg.Targets)
	i, j := a/k, a%k
	var nb []int
	for _, d := range [][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}} {
		if x, y := i+d[0], j+d[1]; x >= 0 && x < k && y >= 0 && y < k {
			nb = append(nb, x*k+y)
		}
	}
	return nb[t.rng.IntN(len(nb))]
}

// Costs are the samples' costs (utils.py): a minute that met the SLO
// costs its allocation scaled to [0, 1] among those that met it (0.5 when
// they all allocated the same); one that missed costs 2 plus its p99
// scaled to [0, 1] among those that missed.
func Costs(samples []Sample, slo float64) []float64 {
	okLo, okHi, badLo, badHi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range samples {
		if s.P99 <= slo {
			okLo, okHi = min(okLo, s.Alloc), max(okHi, s.Alloc)
		} else {
			badLo, badHi = min(badLo, s.P99), max(badHi, s.P99)
		}
	}
	scaled := func(x, lo, hi float64) float64 {
		if hi == lo {
			return 0.5
		}
		return (x - lo) / (hi - lo)
	}
	out := make([]float64, len(samples))
	for i, s := range samples {
		if s.P99 <= slo {
			out[i] = scaled(s.Alloc, okLo, okHi)
		} else {
			out[i] = 2 + scaled(s.P99, badLo, badHi)
		}
	}
	return out
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
