package jolteon

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/callgraph"
	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/metrics"
)

// The white box is processor sharing of the instance's cores, one core per
// call: with one core it is M/M/1-PS, Work/(1 − ρ); with two, the M/M/2
// queue's mean response time, Work·(1 + C(2, a)/(2 − a)) with Erlang C's
// C(2, a) = a²/(2 + a) at offered load a (Kleinrock, Queueing Systems I,
// eq. 3.39 and 3.42).
func TestMeanIsProcessorSharing(t *testing.T) {
	f := Function{Visits: 1, Work: 0.1, Delay: 0.02}
	if got, want := f.Mean(faasconf.Config{CPU: 1, Instances: 2}, 12), 0.02+0.1/(1-0.6); math.Abs(got-want) > 1e-9 {
		t.Errorf("one core at ρ = 0.6: %v, want %v", got, want)
	}
	a := 12 * 0.1 // one instance of two cores at 12 calls/s of 0.1 s
	if got, want := f.Mean(faasconf.Config{CPU: 2, Instances: 1}, 12), 0.02+0.1*(1+a*a/(2+a)/(2-a)); math.Abs(got-want) > 1e-9 {
		t.Errorf("two cores at a = %v: %v, want %v", a, got, want)
	}
	if got := f.Mean(faasconf.Config{CPU: 0.5, Instances: 1}, 5); !math.IsInf(got, 1) {
		t.Errorf("half a core at 5 calls/s of 0.1 s: %v, want +Inf", got)
	}
}

// A window of 150 requests meets a p99 QoS, with 95% probability, when a
// request misses with probability q such that P(Binomial(150, q) ≤ 1) =
// 0.95: about 0.00237 (Poisson: P(N ≤ 1) = 0.95 at mean 0.3554).
func TestWindowShare(t *testing.T) {
	if q := windowShare(150, 0.01, 0.05); math.Abs(q-0.3554/150) > 0.0001 {
		t.Errorf("windowShare(150, 1%%, 5%%) = %v, want about %v", q, 0.3554/150)
	}
}

// One function in a chain, no variability: the solver finds the cheapest
// grid point whose white-box mean meets the QoS, which the descent reaches
// by trading instances for CPU.
func TestSolveFindsTheCheapestPoint(t *testing.T) {
	m := &Model{Functions: []Function{{Name: "f", Visits: 1, Work: 0.1, Residual: [][]float64{{1}}}},
		Graph: callgraph.Graph{Roots: []callgraph.Call{{Service: "f"}}}}
	space := faasconf.Space{CPU: [2]float64{0.25, 2}, MemoryMB: [2]float64{128, 2048}, Instances: [2]int{1, 8}}
	s := Solver{Model: m, Space: space, QoS: faasconf.QoS{Latency: 150 * time.Millisecond}, Samples: 10, CPUStep: 0.25}
	cs, ok := s.Solve(5)
	if !ok {
		t.Fatal("no configuration met 150 ms")
	}
	// Brute force over the grid.
	best := math.Inf(1)
	var want faasconf.Config
	for cpu := 0.25; cpu <= 2; cpu += 0.25 {
		for k := 1; k <= 8; k++ {
			c := faasconf.Config{CPU: cpu, Instances: k, MemoryMB: 128}
			if p := faasconf.Price([]faasconf.Config{c}); m.Functions[0].Mean(c, 5) <= 0.15 && p < best {
				best, want = p, c
			}
		}
	}
	if got := faasconf.Price(cs); got > best+1e-9 {
		t.Errorf("solved %+v at %v $/h; the grid's cheapest is %+v at %v", cs[0], got, want, best)
	}
}

// A policy file reads back as written, and its controller runs the
// configuration of the window's level: at 8 requests/s over a base of 10,
// level 1's, and nothing more once it runs.
func TestPolicyServesTheWindowsLevel(t *testing.T) {
	low := []faasconf.Config{{CPU: 0.5, MemoryMB: 256, Instances: 1, Concurrency: 2}}
	high := []faasconf.Config{{CPU: 1, MemoryMB: 512, Instances: 3, Concurrency: 4}}
	p := &Policy{Functions: []string{"f"}, QoS: faasconf.QoS{Latency: time.Second, MinServed: 0.99}, Window: modelfile.Duration(30 * time.Second),
		BaseRate: 10, Levels: []float64{0.5, 1}, Configs: [][]faasconf.Config{low, high}}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	q, err := ReadPolicy(&b)
	if err != nil || !reflect.DeepEqual(q, p) {
		t.Fatalf("read back %+v, %v", q, err)
	}
	snap := &metrics.Snapshot{Period: 30 * time.Second, Classes: []metrics.ClassStats{{Arrivals: 240}},
		Services: []metrics.ServiceStats{{Name: "f", Replicas: 1, CPULimit: 0.5, MemoryLimit: 256, Concurrency: 2}}}
	c := NewController(q)
	acts := c.Decide(30*time.Second, snap)
	want := []control.Action{control.SetResources{Service: "f", CPU: 1, MemoryMB: 512}, control.SetReplicas{Service: "f", Replicas: 3}, control.SetConcurrency{Service: "f", Limit: 4}}
	if !reflect.DeepEqual(acts, want) {
		t.Fatalf("at 8 requests/s: %+v, want %+v", acts, want)
	}
	snap.Services[0] = metrics.ServiceStats{Name: "f", Replicas: 3, CPULimit: 1, MemoryLimit: 512, Concurrency: 4}
	if acts := c.Decide(60*time.Second, snap); len(acts) != 0 {
		t.Errorf("at the level's configuration: %+v", acts)
	}
	p.Configs = p.Configs[:1]
	if err := p.Validate(); err == nil {
		t.Error("a level without its configuration passed validation")
	}
}

// When nothing meets the QoS, even relaxed, the solver runs the largest
// configuration, each function's concurrency limited to the calls its
// memory holds (no OOM kill), and says it did not meet the QoS.
func TestSolveFallsBackToTheLargestGuarded(t *testing.T) {
	m := &Model{Functions: []Function{{Name: "f", Visits: 1, Work: 0.1, Residual: [][]float64{{1}}, Memory: faasconf.MemoryModel{BaseMB: 10, PerCallMB: 350}}},
		Graph: callgraph.Graph{Roots: []callgraph.Call{{Service: "f"}}}}
	space := faasconf.Space{CPU: [2]float64{0.25, 2}, MemoryMB: [2]float64{128, 2048}, Instances: [2]int{1, 8}}
	s := Solver{Model: m, Space: space, QoS: faasconf.QoS{Latency: time.Millisecond}, Samples: 10, CPUStep: 0.25}
	cs, ok := s.Solve(5)
	if ok || cs[0].CPU != 2 || cs[0].Instances != 8 || cs[0].MemoryMB != 2048 || cs[0].Concurrency != 5 {
		t.Fatalf("an impossible QoS: %+v, %v; want the largest with concurrency 5 (2048 MB of 350 MB calls)", cs[0], ok)
	}
}

// A call is refused at the concurrency limit with the loss of the white
// box's chain truncated there: M/M/1/K's (1 − ρ)ρ^K / (1 − ρ^(K+1)) with
// one core, and Erlang's B formula when the limit equals the cores
// (Kleinrock, Queueing Systems I, eq. 3.45 and 3.46).
func TestBlockingIsTheTruncatedChainsLoss(t *testing.T) {
	f := Function{Visits: 1, Work: 0.1}
	rho := 5 * 0.1
	if got, want := f.Blocking(faasconf.Config{CPU: 1, Instances: 1, Concurrency: 4}, 5), (1-rho)*math.Pow(rho, 4)/(1-math.Pow(rho, 5)); math.Abs(got-want) > 1e-12 {
		t.Errorf("M/M/1/4 at ρ = 0.5: %v, want %v", got, want)
	}
	a := 30 * 0.1 // three cores, three calls at most, at 30 calls/s of 0.1 s
	erlangB := (a * a * a / 6) / (1 + a + a*a/2 + a*a*a/6)
	if got := f.Blocking(faasconf.Config{CPU: 3, Instances: 1, Concurrency: 3}, 30); math.Abs(got-erlangB) > 1e-12 {
		t.Errorf("M/M/3/3 at a = 3: %v, want Erlang B %v", got, erlangB)
	}
	if got := f.Blocking(faasconf.Config{CPU: 1, Instances: 1}, 5); got != 0 {
		t.Errorf("no limit: %v refused", got)
	}
}

// A function whose calls in flight would outgrow the largest memory at
// the OOM risk is still configured: at the largest memory, refusing what it
// cannot hold, when the refusals leave the QoS's share served; and not when
// they do not.
func TestSolveRefusesWhatTheMemoryCannotHold(t *testing.T) {
	m := &Model{Functions: []Function{{Name: "f", Visits: 1, Work: 1, Residual: [][]float64{{1}}, Memory: faasconf.MemoryModel{BaseMB: 10, PerCallMB: 350}}},
		Graph: callgraph.Graph{Roots: []callgraph.Call{{Service: "f"}}}}
	space := faasconf.Space{CPU: [2]float64{1, 2}, MemoryMB: [2]float64{128, 2048}, Instances: [2]int{1, 8}}
	s := Solver{Model: m, Space: space, QoS: faasconf.QoS{Latency: 10 * time.Second, Percentile: 0.99, MinServed: 0.99}, Samples: 200, CPUStep: 0.25}
	cs, ok := s.Solve(6)
	if !ok {
		t.Fatalf("6 calls/s of 1 s within 8 instances of 2 cores and 5 calls each: nothing met the QoS")
	}
	if b := m.Functions[0].Blocking(cs[0], 6); cs[0].Concurrency > 5 || b > 0.01 {
		t.Errorf("solved %+v: concurrency over what 2048 MB holds, or %.3f refused", cs[0], b)
	}
	s.QoS.MinServed = 0.99999
	if _, ok := s.Solve(6); ok {
		t.Error("a QoS of 99.999% served met with calls refused at a limit of 5")
	}
}

// Whatever the model, the solution lies in the space: the probe applies
// moves found for the configuration it is at (it went on applying a
// function's moves after an earlier pair had moved it, down to -2
// instances).
func TestSolveStaysInTheSpace(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	space := faasconf.Space{CPU: [2]float64{0.25, 2}, MemoryMB: [2]float64{128, 2048}, Instances: [2]int{1, 8}}
	for trial := range 200 {
		m := &Model{Graph: callgraph.Graph{Roots: []callgraph.Call{{Stages: []callgraph.Stage{{Calls: []callgraph.Call{{Service: "a"}, {Service: "b"}}}, {Calls: []callgraph.Call{{Service: "c"}}}}}}}}
		for _, name := range []string{"a", "b", "c"} {
			m.Functions = append(m.Functions, Function{Name: name, Visits: 1, Work: 0.05 + rng.Float64(), Delay: rng.Float64() / 10,
				Residual: [][]float64{{0.5, 1, 1.5, 3}}, Memory: faasconf.MemoryModel{BaseMB: 10, PerCallMB: 50 + 300*rng.Float64()}})
		}
		s := Solver{Model: m, Space: space, QoS: faasconf.QoS{Latency: time.Duration((1 + 5*rng.Float64()) * float64(time.Second)), Percentile: 0.9}, Samples: 50, CPUStep: 0.25}
		rate := 0.5 + 4*rng.Float64()
		cs, _ := s.Solve(rate)
		for j, c := range cs {
			if c.Instances < space.Instances[0] || c.Instances > space.Instances[1] || c.CPU < space.CPU[0]-1e-9 || c.CPU > space.CPU[1]+1e-9 {
				t.Fatalf("trial %d at %.2f calls/s: function %d at %+v, outside the space", trial, rate, j, c)
			}
		}
	}
}
