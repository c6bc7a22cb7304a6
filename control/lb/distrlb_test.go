package lb

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/learn/rl"
)

const testBackends = 3

// feed sends the same random request events to every sink, one period.
func feed(rng *rand.Rand, from time.Duration, period time.Duration, sinks ...Feedback) {
	for k := 0; k < 20; k++ {
		now := from + time.Duration(k)*period/20
		j := rng.IntN(testBackends)
		d := time.Duration(rng.ExpFloat64() * float64(300*time.Millisecond))
		for _, s := range sinks {
			s.Sent(now, j)
			if k%3 != 0 {
				s.Done(now, j, d, d+20*time.Millisecond)
			}
		}
	}
}

// norm is a fixed test normalisation.
func norm(dim int) (mean, std []float64) {
	for d := 0; d < dim; d++ {
		mean = append(mean, 0.1*float64(d%5))
		std = append(std, 0.5+0.1*float64(d%3))
	}
	return mean, std
}

// TestAgentActsLikeItsLearner: the deployed agent, fed only request events,
// takes exactly the deterministic actions the trained learner takes on the
// same observation sequence, across more decisions than its window holds.
func TestAgentActsLikeItsLearner(t *testing.T) {
	for _, gru := range []bool{true, false} {
		dim := ObservationLen(testBackends)
		spec := rl.Spec{Observation: rl.UniformBox(dim, math.Inf(-1), math.Inf(1)), Action: rl.UniformBox(testBackends, -1, 1)}
		mean, std := norm(dim)
		net := NetSpec{LBs: []string{"lb1"}, Backends: testBackends, Hidden: []int{16, 16}, ObsMean: mean, ObsStd: std}
		var act func(obs []float64) []float64
		p := mustPolicy(t, net, gru, &act, spec)
		agent, err := p.Agent("lb1")
		if err != nil {
			t.Fatal(err)
		}
		twin, _ := NewObserver(testBackends, 500*time.Millisecond)
		rng := rand.New(rand.NewPCG(7, 7))
		obs := make([]float64, dim)
		for step := 0; step < 12; step++ {
			now := time.Duration(step) * 500 * time.Millisecond
			acts := agent.Decide(now, nil)
			obs = twin.Observe(now, obs)
			for d := range obs {
				obs[d] = (obs[d] - mean[d]) / std[d]
			}
			want := act(obs)
			w := acts[0].(control.SetWeights).Weights
			for j := range want {
				if math.Abs(agent.Action()[j]-want[j]) > 1e-5 {
					t.Fatalf("gru %t, step %d, backend %d: agent %g, learner %g", gru, step, j, agent.Action()[j], want[j])
				}
				if math.Abs(w[j]-math.Pow(10, WeightDecades*want[j])) > 1e-4*w[j] {
					t.Fatalf("weight %g for action %g", w[j], want[j])
				}
			}
			twin.SetPrevious(want)
			feed(rng, now, 500*time.Millisecond, agent.Feedback(0), twin)
		}
	}
}

// mustPolicy builds a learner with random weights and a policy holding its
// actor; act is set to the learner's deterministic action.
func mustPolicy(t *testing.T, net NetSpec, gru bool, act *func([]float64) []float64, spec rl.Spec) *Policy {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var g *nn.GRU[float32]
	var head *nn.MLP[float32]
	if gru {
		cfg := rl.DefaultRecurrentSACConfig()
		cfg.Hidden, cfg.GRUHidden, cfg.SeqLen = net.Hidden, 8, 4
		l, err := rl.NewRecurrentSAC(spec, cfg, rng)
		if err != nil {
			t.Fatal(err)
		}
		g, head = l.Actor()
		net.SeqLen, net.GRUHidden = cfg.SeqLen, cfg.GRUHidden
		*act = func(o []float64) []float64 { return l.Act(o, true) }
	} else {
		cfg := rl.DefaultSACConfig()
		cfg.Hidden = net.Hidden
		l, err := rl.NewSAC(spec, cfg, rng)
		if err != nil {
			t.Fatal(err)
		}
		head = l.Actor()
		net.SeqLen = 1
		*act = func(o []float64) []float64 { return l.Act(o, true) }
	}
	p, err := NewPolicy("distr-lb", 500*time.Millisecond, []NetSpec{net}, Provenance{Scenario: "test", Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetWeights(0, g, head); err != nil {
		t.Fatal(err)
	}
	return p
}

func testPolicy(t *testing.T) *Policy {
	t.Helper()
	dim := ObservationLen(testBackends)
	spec := rl.Spec{Observation: rl.UniformBox(dim, math.Inf(-1), math.Inf(1)), Action: rl.UniformBox(testBackends, -1, 1)}
	var act func([]float64) []float64
	return mustPolicy(t, NetSpec{LBs: []string{"lb1"}, Backends: testBackends, Hidden: []int{16}}, true, &act, spec)
}

func TestPolicyFileRoundTrip(t *testing.T) {
	p := testPolicy(t)
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	q, err := ReadPolicy(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if q.Provenance != p.Provenance || q.Period != p.Period || q.Algorithm != "distr-lb" {
		t.Fatalf("header %+v, want %+v", q, p)
	}
	a, _ := p.Agent("lb1")
	b, _ := q.Agent("lb1")
	rng1, rng2 := rand.New(rand.NewPCG(1, 1)), rand.New(rand.NewPCG(1, 1))
	for step := 0; step < 10; step++ {
		now := time.Duration(step) * 500 * time.Millisecond
		a.Decide(now, nil)
		b.Decide(now, nil)
		for j, v := range a.Action() {
			if b.Action()[j] != v {
				t.Fatalf("step %d: loaded policy acts %v, saved one %v", step, b.Action(), a.Action())
			}
		}
		feed(rng1, now, 500*time.Millisecond, a.Feedback(0))
		feed(rng2, now, 500*time.Millisecond, b.Feedback(0))
	}
	if _, err := p.Agent("lb9"); err == nil || !strings.Contains(err.Error(), "lb1") {
		t.Errorf("unknown LB: %v", err)
	}
}

func TestPolicyFileErrors(t *testing.T) {
	p := testPolicy(t)
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	file := buf.String()
	head, _, _ := strings.Cut(file, "\n")
	cases := map[string]struct {
		data string
		want string
	}{
		"empty":          {"", "header"},
		"not json":       {"hello\nworld", "header"},
		"other format":   {strings.Replace(file, PolicyFormat, "other", 1), "format"},
		"newer version":  {strings.Replace(file, fmt.Sprintf(`"version":%d`, policyVersion), `"version":9`, 1), "version"},
		"older version":  {strings.Replace(file, fmt.Sprintf(`"version":%d`, policyVersion), `"version":1`, 1), "version"},
		"unknown field":  {strings.Replace(file, `{"format"`, `{"colour":1,"format"`, 1), "colour"},
		"bad period":     {strings.Replace(file, `"500ms"`, `"-1s"`, 1), "period"},
		"header/weights": {strings.Replace(file, `"hidden":[16]`, `"hidden":[17]`, 1), "architecture mismatch"},
		"truncated":      {file[:len(head)+40], "truncated"},
		"corrupt":        {file[:len(file)-9] + "x" + file[len(file)-8:], "checksum"},
		"no weights":     {head + "\n", "weights"},
	}
	for name, c := range cases {
		_, err := ReadPolicy(strings.NewReader(c.data))
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), c.want) {
			t.Errorf("%s: error %v, want it to mention %q", name, err, c.want)
		}
	}
	if _, err := ReadPolicy(strings.NewReader(file)); err != nil {
		t.Fatalf("the intact file: %v", err)
	}
	_, err := NewPolicy("distr-lb", time.Second, []NetSpec{{LBs: []string{"a"}, Backends: 2, SeqLen: 1, Hidden: []int{4},
		ObsMean: make([]float64, ObservationLen(2)), ObsStd: make([]float64, ObservationLen(2))}}, Provenance{})
	if err == nil || !strings.Contains(err.Error(), "nets[0].obs_std[0]") {
		t.Errorf("zero std: %v", err)
	}
	_, err = NewPolicy("distr-lb", time.Second, []NetSpec{{LBs: []string{"a"}, Backends: 2, SeqLen: 1, Hidden: []int{4}},
		{LBs: []string{"a"}, Backends: 2, SeqLen: 1, Hidden: []int{4}}}, Provenance{})
	if err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("LB in two nets: %v", err)
	}
}

func TestAgentDecideAllocatesNothing(t *testing.T) {
	a, _ := testPolicy(t).Agent("lb1")
	rng := rand.New(rand.NewPCG(1, 1))
	feed(rng, 0, time.Second, a.Feedback(0))
	now := time.Duration(0)
	if n := testing.AllocsPerRun(100, func() {
		now += 500 * time.Millisecond
		a.Decide(now, nil)
	}); n != 0 {
		t.Fatalf("%v allocations per decision", n)
	}
}

func FuzzReadPolicy(f *testing.F) {
	var buf bytes.Buffer
	p, err := NewPolicy("distr-lb", time.Second, []NetSpec{{LBs: []string{"a"}, Backends: 2, SeqLen: 2, GRUHidden: 3, Hidden: []int{4}}}, Provenance{})
	if err != nil {
		f.Fatal(err)
	}
	if err := p.Write(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format":"shoal-lb-policy","version":1,"period":"1s","nets":[{"lbs":["a"],"backends":100000000,"seq_len":1,"gru_hidden":0,"hidden":[1]}]}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ReadPolicy(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, nn.ErrFormat) && !errors.Is(err, nn.ErrMismatch) && !strings.Contains(err.Error(), "policy") {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		for _, a := range p.NewAgents() {
			a.Decide(time.Second, nil)
		}
	})
}
