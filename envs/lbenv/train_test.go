package lbenv

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/shoal-project/shoal/control/lb"
)

// tiny is a training configuration small enough for a unit test.
func tiny(alg Algorithm, noGRU bool) TrainConfig {
	c := LBSACConfig()
	c.Hidden, c.GRUHidden, c.SeqLen, c.BatchSize, c.LearningStarts = []int{16}, 8, 3, 8, 20
	q := LBQMIXConfig()
	q.Hidden, q.GRUHidden, q.SeqLen, q.BatchSize, q.LearningStarts = []int{16}, 8, 3, 8, 20
	return TrainConfig{Algorithm: alg, Episodes: 2, EpisodeSteps: 25, Seed: 3, SAC: c, QMIX: q, NoGRU: noGRU}
}

func policyBytes(t *testing.T, p *lb.Policy) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestTrainIsDeterministic: a seed fixes the whole run (the learners update
// in parallel goroutines), another seed gives another policy; every
// variant exports a policy whose networks drive the scenario's LB points.
func TestTrainIsDeterministic(t *testing.T) {
	sc := moderate(t, "lb-moderate-cpu")
	for _, v := range []struct {
		alg   Algorithm
		noGRU bool
		nets  int
	}{{DistrLB, false, 2}, {DistrLB, true, 2}, {CentrLB, false, 1}, {QMixLB, false, 2}} {
		cfg := tiny(v.alg, v.noGRU)
		a, err := Train(context.Background(), sc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Train(context.Background(), sc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(policyBytes(t, a.Policy), policyBytes(t, b.Policy)) {
			t.Fatalf("%s (no GRU %t): two runs with seed 3 differ", v.alg, v.noGRU)
		}
		cfg.Seed = 4
		c, err := Train(context.Background(), sc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(policyBytes(t, a.Policy), policyBytes(t, c.Policy)) {
			t.Fatalf("%s: seeds 3 and 4 give the same policy", v.alg)
		}
		p := a.Policy
		if len(p.Nets) != v.nets || p.Algorithm != string(v.alg) || p.Provenance.EnvSteps != 3*25 || a.EnvSteps != 75 {
			t.Fatalf("%s: policy %+v, %d steps", v.alg, p, a.EnvSteps)
		}
		lbs := 0
		for _, n := range p.Nets {
			lbs += len(n.LBs)
			if n.Backends != 7 || len(n.ObsMean) != n.ObsDim() {
				t.Fatalf("%s: net %+v", v.alg, n)
			}
		}
		if lbs != 2 || len(a.Curve) != 2 || a.Curve[1].EnvSteps != 75 {
			t.Fatalf("%s: %d LBs, curve %+v", v.alg, lbs, a.Curve)
		}
		for _, e := range a.Curve {
			if !(e.Mean > 0 && e.P99 >= e.Mean) || math.IsNaN(e.Returns[0]) {
				t.Fatalf("%s: curve point %+v", v.alg, e)
			}
		}
	}
}

func TestTrainErrors(t *testing.T) {
	sc := moderate(t, "lb-moderate-cpu")
	for _, cfg := range []TrainConfig{{Algorithm: "magic"}, {Reward: "speed"}} {
		if _, err := Train(context.Background(), sc, cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Train(ctx, sc, tiny(DistrLB, false)); err == nil {
		t.Error("cancelled context: no error")
	}
}
