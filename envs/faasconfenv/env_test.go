package faasconfenv

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/scenario"
)

func lookup(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// The workflows' topologies as the papers draw them (Fig. 6): Sequential a
// chain, Parallel a chain that forks into resnet and mobilenet.
func TestAdjacency(t *testing.T) {
	for _, tc := range []struct{ scenario, want string }{
		{"faas-sequential", "[[0 1 0 0 0] [1 0 1 0 0] [0 1 0 1 0] [0 0 1 0 1] [0 0 0 1 0]]"},
	} {
		e, err := New(lookup(t, tc.scenario), Config{})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(e.Adjacency()); got != tc.want {
			t.Errorf("%s %v: adjacency %s, want %s", tc.scenario, e.Functions(), got, tc.want)
		}
	}
	e, _ := New(lookup(t, "faas-parallel"), Config{})
	t.Logf("parallel %v: %v", e.Functions(), e.Adjacency())
}

// Measuring: a large configuration (8 instances of 1.3 cores and 2024 MB,
// six to a machine of the 8-core testbed, and a concurrency of 5, as six
// ResNet calls would overflow 2024 MB) meets the QoS at the highest level
// and earns β minus its price term; the smallest misses it there (the
// paper's QoS: the mean latency).
func TestMeasure(t *testing.T) {
	e, err := New(lookup(t, "faas-sequential"), Config{QoS: faasconf.QoS{MinServed: 0.99}})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	obs := e.Reset(rng)
	if len(obs) != 5 || len(obs[0]) != 12 {
		t.Fatalf("observation %dx%d", len(obs), len(obs[0]))
	}
	all := func(cpu, v, c float64) [][]float64 {
		a := make([][]float64, 5)
		for j := range a {
			a[j] = []float64{cpu, v, v, c}
		}
		return a
	}
	e.level = 1.6
	_, rew, _, trunc := e.Step(all(0.2, 1, -1.0/9))
	if want := 1 + e.alpha*e.Last.Price; !e.Last.Met || math.Abs(rew[0]-want) > 1e-9 || trunc {
		t.Fatalf("largest configuration at level %v: met %v, reward %v, window %+v", e.Last.Level, e.Last.Met, rew[0], e.Last.Window)
	}
	t.Logf("large at 1.6: mean %.2f s, served %.3f, price %.2f/h", e.Last.Window.MeanLatency(), e.Last.Window.ServedShare(), e.Last.Price)
	_, rew, _, _ = e.Step(all(-1, -1, -1))
	if e.Last.Met || rew[0] >= 0 {
		t.Fatalf("smallest configuration at level 1.6: met %v, reward %v, window %+v, mean %v", e.Last.Met, rew[0], e.Last.Window, e.Last.Window.MeanLatency())
	}
	t.Logf("smallest at 1.6: mean %.2f s, served %.3f", e.Last.Window.MeanLatency(), e.Last.Window.ServedShare())
}

// A short training run writes a policy whose controller configures the
// workflow in the simulator, and whose history sets safe ranges.
func TestTrainShort(t *testing.T) {
	sc := lookup(t, "faas-sequential")
	cfg := DefaultTrainConfig()
	cfg.Logged, cfg.OfflineUpdates, cfg.Online, cfg.Env.Steps = 4, 20, 2, 5
	cfg.Learner.BatchSize, cfg.Learner.Hidden = 16, []int{16}
	tr, err := Train(context.Background(), sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := tr.Policy
	if len(tr.Curve) != 2 || p.Provenance.Logged != 20 || p.Provenance.Updates != 20+10 || p.BaseRate != 5 {
		t.Fatalf("curve %d, provenance %+v, base rate %v", len(tr.Curve), p.Provenance, p.BaseRate)
	}
	// The history: configurations verified on 5 seeds (each meets the QoS
	// again on a seed of the verification's), and at most 10 that missed
	// per level.
	missed, verified := map[float64]int{}, 0
	env, _ := New(sc, cfg.Env)
	for _, r := range p.History {
		if !r.Met {
			missed[r.Workload]++
			continue
		}
		verified++
		cs := make([]faasconf.Config, len(r.Action))
		for j, a := range r.Action {
			cs[j] = p.Space.Decode(a)
		}
		if m, _ := env.Measure(r.Workload, cs, rand.New(rand.NewPCG(cfg.Seed+4, 0x616e6368))); !m.Met {
			t.Errorf("a configuration kept as verified misses the QoS at level %v on verification seed 5", r.Workload)
		}
	}
	for l, n := range missed {
		if n > 10 {
			t.Errorf("level %v: %d missed records kept", l, n)
		}
	}
	if verified == 0 {
		t.Error("no verified configuration in the history")
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := faasconf.ReadPolicy(&buf); err != nil {
		t.Fatal(err)
	}
}

// Training takes the workflow's own space: TcktApp's web functions the web
// service's (1 core, 1024 MB at most), which the default configuration
// must not override with the ML workflows'.
func TestTrainTakesTheWorkflowsSpace(t *testing.T) {
	sc := lookup(t, "faas-ticket-search")
	cfg := DefaultTrainConfig()
	cfg.Logged, cfg.OfflineUpdates, cfg.Online, cfg.Env.Steps = 1, 0, 1, 2
	cfg.Learner.BatchSize, cfg.Learner.Hidden = 4, []int{8}
	tr, err := Train(context.Background(), sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Policy.Space != faasconf.WebSpace() {
		t.Fatalf("TcktApp trained in %+v, want the web space %+v", tr.Policy.Space, faasconf.WebSpace())
	}
}

// Independent DDPG agents train in the hardware-only space, and their
// policy configures no concurrency limit.
func TestTrainHardwareOnlyDDPG(t *testing.T) {
	sc := lookup(t, "faas-sequential")
	cfg := DefaultTrainConfig()
	cfg.Logged, cfg.OfflineUpdates, cfg.Online, cfg.Env.Steps = 2, 10, 1, 5
	cfg.Learner.BatchSize, cfg.Learner.Hidden, cfg.Learner.Variant = 8, []int{8}, "ddpg"
	cfg.Env.Space = SpaceOf(sc).HardwareOnly()
	tr, err := Train(context.Background(), sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tr.Policy.History {
		for _, a := range r.Action {
			if c := tr.Policy.Space.Decode(a); c.Concurrency != 0 {
				t.Fatalf("hardware-only history holds concurrency %d", c.Concurrency)
			}
		}
	}
	a := faasconf.NewAgent(tr.Policy, faasconf.Options{Seed: 1})
	e, _ := New(sc, Config{Space: tr.Policy.Space})
	_, obs := e.Measure(1, e.Defaults(), rand.New(rand.NewPCG(1, 1)))
	for _, c := range a.Propose(1, obs) {
		if c.Concurrency != 0 {
			t.Fatalf("proposal %+v sets a concurrency limit", c)
		}
	}
}

// The descent lowers an anchor function by function to a configuration
// that still meets the QoS with the margin on every verification seed.
func TestAnchorDescends(t *testing.T) {
	sc := lookup(t, "faas-sequential")
	env, err := New(sc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	a := newAnchor(env, 3, 0.1, 7)
	own := env.own()
	a.best[1] = anchored{action: env.cfg.Space.EncodeAll(own), price: faasconf.Price(own)}
	if !a.descend() || a.best[1].price >= faasconf.Price(own) {
		t.Fatalf("the descent from the own configuration (%.3f $/h) stayed at %.3f", faasconf.Price(own), a.best[1].price)
	}
	if !a.meets(1, a.best[1].action) {
		t.Error("the descended anchor misses the QoS with the margin on its verification seeds")
	}
	t.Logf("descended from %.3f to %.3f $/h in %d verifications", faasconf.Price(own), a.best[1].price, len(a.tried))
}

// TrainBest keeps, of two seeds, the policy of the higher validation
// reward, and records both scores.
func TestTrainBestKeepsTheBetterSeed(t *testing.T) {
	sc := lookup(t, "faas-sequential")
	cfg := DefaultTrainConfig()
	cfg.Logged, cfg.OfflineUpdates, cfg.Online, cfg.Env.Steps = 4, 20, 1, 5
	cfg.Learner.BatchSize, cfg.Learner.Hidden, cfg.Descend, cfg.Seed = 16, []int{16}, false, 1
	tr, err := TrainBest(context.Background(), sc, cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	p := tr.Policy.Provenance
	if p.Candidates != 2 || len(p.Validation) != 2 || p.Validation[0] < p.Validation[1] || p.Seed < 1 || p.Seed > 2 {
		t.Fatalf("provenance %+v: want the higher of two validation scores kept", p)
	}
	env, _ := New(sc, cfg.Env)
	if got := Validate(env, tr.Policy, ValidationWindows); got != p.Validation[0] {
		t.Errorf("validating the kept policy again: %v, recorded %v", got, p.Validation[0])
	}
}
