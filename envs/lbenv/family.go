package lbenv

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/shoal-project/shoal/scenario"
)

// Family is a distribution of load-balancing worlds, to train one Distr-LB
// policy across instead of one per scenario (issue 35): every draw is a
// scenario of LBs explicit LB points in front of Servers servers of Cores
// cores at Speed, a CPU demand per request of mean Demand (log-uniform)
// and exponential, lognormal (cv up to MaxCV) or bimodal, at a load in
// Load. A share of the worlds has one speed for every server (Equal), speeds
// that drift every sixth of the horizon (Drift), a quarter of its servers
// slowed to 0.3x for the middle third of the horizon (Slowdown), or bursty
// arrivals (Bursts: a two-state MMPP). A share IO splits the
// demand between CPU and I/O phases (20-80% CPU, two phases of each, one I/O
// at a time per server at the same speed everywhere, as the paper's
// lb-moderate-50cpu), where capacity is not the cores. The horizon holds about Requests
// requests, so a world of 1 ms requests and one of 2 s requests cost the
// simulator alike. Configured weights are the cores (the simulator's
// default): speeds are what a balancer has to find out. The embedded lb-*
// scenarios and the proxy testbed are held out: drawn scenarios are named
// family-N and never equal them.
type Family struct {
	Servers  [2]int           `yaml:"servers"`
	Cores    [2]int           `yaml:"cores"`
	Speed    [2]float64       `yaml:"speed"`
	LBs      [2]int           `yaml:"lbs"`
	Load     [2]float64       `yaml:"load"`
	Demand   [2]time.Duration `yaml:"demand"`
	MaxCV    float64          `yaml:"max_cv"`
	Equal    float64          `yaml:"equal"`
	IO       float64          `yaml:"io"`
	Drift    float64          `yaml:"drift"`
	Slowdown float64          `yaml:"slowdown"`
	Bursts   float64          `yaml:"bursts"`
	Requests int              `yaml:"requests"`
}

// DefaultFamily is issue 35's family: 4-32 servers of 1-8 cores at speed
// 0.3-1.5, 1-8 LB points, load 0.5-0.98, mean demands from 1 ms to 2 s
// with a cv up to 4; three in ten worlds with equal speeds, a quarter each
// with I/O phases, drifting, slowed down or bursty; 20,000 requests each.
// The I/O share was chosen on validation worlds (see docs/results/distr-lb.md).
func DefaultFamily() Family {
	return Family{Servers: [2]int{4, 32}, Cores: [2]int{1, 8}, Speed: [2]float64{0.3, 1.5}, LBs: [2]int{1, 8},
		Load: [2]float64{0.5, 0.98}, Demand: [2]time.Duration{time.Millisecond, 2 * time.Second}, MaxCV: 4,
		Equal: 0.3, IO: 0.25, Drift: 0.25, Slowdown: 0.25, Bursts: 0.25, Requests: 20_000}
}

// Validate reports the first range that is empty, out of order or out of
// bounds.
func (f Family) Validate() error {
	switch {
	case !(f.Servers[0] >= 2 && f.Servers[0] <= f.Servers[1]):
		return fmt.Errorf("servers: %v, want 2 <= min <= max", f.Servers)
	case !(f.Cores[0] >= 1 && f.Cores[0] <= f.Cores[1]):
		return fmt.Errorf("cores: %v, want 1 <= min <= max", f.Cores)
	case !(f.Speed[0] > 0 && f.Speed[0] <= f.Speed[1]):
		return fmt.Errorf("speed: %v, want 0 < min <= max", f.Speed)
	case !(f.LBs[0] >= 1 && f.LBs[0] <= f.LBs[1]):
		return fmt.Errorf("lbs: %v, want 1 <= min <= max", f.LBs)
	case !(f.Load[0] > 0 && f.Load[0] <= f.Load[1] && f.Load[1] < 1):
		return fmt.Errorf("load: %v, want 0 < min <= max < 1", f.Load)
	case !(f.Demand[0] > 0 && f.Demand[0] <= f.Demand[1]):
		return fmt.Errorf("demand: %v, want 0 < min <= max", f.Demand)
	case !(f.MaxCV >= 0.5):
		return fmt.Errorf("max_cv: %v, want >= 0.5", f.MaxCV)
	case !(f.Requests >= 100):
		return fmt.Errorf("requests: %v, want >= 100", f.Requests)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"equal", f.Equal}, {"drift", f.Drift}, {"slowdown", f.Slowdown}, {"bursts", f.Bursts}} {
		if !(p.v >= 0 && p.v <= 1) {
			return fmt.Errorf("%s: %v, want a share in [0, 1]", p.name, p.v)
		}
	}
	return nil
}

// Draw returns the i-th world, drawn from rng.
func (f Family) Draw(rng *rand.Rand, i int) (*scenario.Scenario, error) {
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("family: %w", err)
	}
	uni := func(r [2]int) int { return r[0] + rng.IntN(r[1]-r[0]+1) }
	between := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
	n, lbs := uni(f.Servers), uni(f.LBs)
	load := between(f.Load[0], f.Load[1])
	mean := math.Exp(between(math.Log(f.Demand[0].Seconds()), math.Log(f.Demand[1].Seconds())))

	cores, speeds := make([]int, n), make([]float64, n)
	equal := rng.Float64() < f.Equal
	var capacity float64
	for j := range n {
		cores[j], speeds[j] = uni(f.Cores), between(f.Speed[0], f.Speed[1])
		if equal && j > 0 {
			speeds[j] = speeds[0]
		}
		capacity += float64(cores[j]) * speeds[j]
	}
	// The draws of I/O worlds come only when the family has them, so
	// that a family without them (io: 0) draws the worlds of the first
	// general policy, trained before they existed.
	cpuMean, ioMean := mean, 0.0
	if f.IO > 0 && rng.Float64() < f.IO {
		cpuMean = mean * between(0.2, 0.8)
		ioMean = mean - cpuMean
		capacity = 0 // requests per second, as scenario.Capacity counts it
		for j := range n {
			capacity += math.Min(float64(cores[j])*speeds[j]/cpuMean, 1/ioMean)
		}
		capacity *= cpuMean
	}
	horizon := time.Duration(float64(f.Requests) * cpuMean / (load * capacity) * float64(time.Second)).Round(time.Millisecond)
	var b bytes.Buffer
	fmt.Fprintf(&b, "name: family-%d\nseed: %d\nseeds: 1\nhorizon: %s\nload: %.4f\n", i, rng.Uint64()>>1, horizon, load)
	b.WriteString("services:\n  - name: web\n")
	if ioMean > 0 {
		b.WriteString("    io_parallelism: 1\n")
	}
	b.WriteString("    instances:\n")
	for j := range n {
		fmt.Fprintf(&b, "      - {cpu: %d, speed: %.3f}\n", cores[j], speeds[j])
	}
	if rng.Float64() < f.Drift {
		fmt.Fprintf(&b, "random_changes: {every: %s, seed: %d, drift: [web], speed: [%g, %g]}\n", horizon/6, rng.Uint64()>>1, f.Speed[0], f.Speed[1])
	}
	if rng.Float64() < f.Slowdown {
		b.WriteString("changes:\n")
		from, to := horizon/3, 2*horizon/3
		for j := range max(1, n/4) {
			fmt.Fprintf(&b, "  - {at: %s, service: web, instance: %d, speed: 0.3}\n  - {at: %s, service: web, instance: %d, speed: %.3f}\n", from, j, to, j, speeds[j])
		}
	}
	fmt.Fprintf(&b, "classes:\n  - name: rpc\n    call:\n      service: web\n      cpu: %s\n", f.demand(rng, cpuMean))
	if ioMean > 0 {
		fmt.Fprintf(&b, "      io: {dist: exp, mean: %.6g}\n      phases: 2\n", ioMean)
	}
	b.WriteString("lbs:\n")
	for k := range lbs {
		fmt.Fprintf(&b, "  - {name: lb%d, service: web}\n", k)
	}
	arrivals := "{kind: poisson}"
	if rng.Float64() < f.Bursts { // a fifth of the time at 3x the mean rate, in bursts of a 32nd of the horizon
		arrivals = fmt.Sprintf("{kind: mmpp, states: [{rate: 0.5, dwell: %s}, {rate: 3, dwell: %s}]}", horizon/8, horizon/32)
	}
	b.WriteString("sources:\n")
	for k := range lbs {
		fmt.Fprintf(&b, "  - {name: clients%d, class: rpc, lb: lb%d, arrivals: %s}\n", k, k, arrivals)
	}
	return scenario.Decode(strings.NewReader(b.String()), fmt.Sprintf("family-%d.yaml", i))
}

// demand is the demand distribution's YAML: exponential, lognormal with a
// cv in [0.5, MaxCV], or bimodal (eight in ten at half the mean, two at
// three times it), each of the given mean.
func (f Family) demand(rng *rand.Rand, mean float64) string {
	switch rng.IntN(3) {
	case 0:
		return fmt.Sprintf("{dist: exp, mean: %.6g}", mean)
	case 1:
		return fmt.Sprintf("{dist: lognormal, mean: %.6g, cv: %.3f}", mean, 0.5+(f.MaxCV-0.5)*rng.Float64())
	}
	lo, hi := fmt.Sprintf("%.6g", mean/2), fmt.Sprintf("%.6g", 3*mean)
	return fmt.Sprintf("{dist: empirical, values: [%s]}", strings.Join([]string{lo, lo, lo, lo, lo, lo, lo, lo, hi, hi}, ", "))
}
