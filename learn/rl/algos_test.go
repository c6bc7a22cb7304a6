package rl_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/learn/rl/envs"
)

func pcg(a, b uint64) *rand.Rand { return rand.New(rand.NewPCG(a, b)) }

// randomReturn is the mean return of the uniformly random policy.
func randomReturn(env rl.Env, episodes int, seed uint64) float64 {
	rng := pcg(seed, 77)
	a := make([]float64, env.Spec().Action.Dim())
	m, _ := rl.Evaluate(env, func([]float64) []float64 { env.Spec().Action.Sample(rng, a); return a }, episodes, pcg(seed, 78))
	return m
}

// TestSACLearnsPendulum: 3000 steps of SAC (zoo settings, 64-64 networks)
// lift the evaluation return on Pendulum-v1 far above the initial policy's
// (about −1300; the zoo's converged score is −157).
func TestSACLearnsPendulum(t *testing.T) {
	cfg := rl.DefaultSACConfig()
	cfg.Hidden = []int{64, 64}
	cfg.BatchSize = 128
	env := envs.NewPendulum()
	a, err := rl.NewSAC(env.Spec(), cfg, pcg(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := rl.EvaluateLearner(envs.NewPendulum(), a, 5, pcg(5, 5))
	rl.Train(env, a, 3000, pcg(1, 2))
	after, _ := rl.EvaluateLearner(envs.NewPendulum(), a, 5, pcg(5, 5))
	t.Logf("SAC Pendulum-v1: eval return %.1f before, %.1f after 3000 steps; α = %.3f", before, after, a.Alpha())
	if after < before+400 || after < -1000 {
		t.Errorf("SAC did not learn: eval return %.1f before, %.1f after", before, after)
	}
	if a.Alpha() >= 1 {
		t.Errorf("entropy tuning did not lower α from 1: %v", a.Alpha())
	}
}

// TestPPOLearnsCartPole: 20000 steps of PPO (zoo settings) beat the random
// policy (about 22) by a wide margin on CartPole-v1.
func TestPPOLearnsCartPole(t *testing.T) {
	cfg := rl.DefaultPPOConfig()
	var es []rl.Env
	for i := 0; i < cfg.NumEnvs; i++ {
		es = append(es, envs.NewCartPole())
	}
	a, err := rl.NewPPO(es[0].Spec(), cfg, pcg(2, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Learn(es, 20_000, pcg(2, 2)); err != nil {
		t.Fatal(err)
	}
	got, _ := rl.Evaluate(envs.NewCartPole(), func(o []float64) []float64 { return a.Act(o, true) }, 10, pcg(6, 6))
	rnd := randomReturn(envs.NewCartPole(), 50, 6)
	t.Logf("PPO CartPole-v1 after 20000 steps: %.1f (random policy %.1f)", got, rnd)
	if got < rnd+100 {
		t.Errorf("PPO eval return %.1f, want >= random %.1f + 100", got, rnd)
	}
}

// TestPPOContinuousImproves: Gaussian PPO on Pendulum-v1 runs end to end and
// its action log-std moves (the continuous path is exercised); Pendulum is
// not solved by PPO in a short budget, so only sanity is checked.
func TestPPOContinuousRuns(t *testing.T) {
	cfg := rl.DefaultPPOConfig()
	cfg.NumEnvs, cfg.NSteps, cfg.BatchSize, cfg.NEpochs = 2, 64, 64, 2
	es := []rl.Env{envs.NewPendulum(), envs.NewPendulum()}
	a, err := rl.NewPPO(es[0].Spec(), cfg, pcg(3, 1))
	if err != nil {
		t.Fatal(err)
	}
	rets, err := a.Learn(es, 1000, pcg(3, 2))
	if err != nil || len(rets) != 4 {
		t.Fatalf("Learn: %d episodes, err %v; want 4 episodes of 200 steps", len(rets), err)
	}
	act := a.Act([]float64{1, 0, 0}, false)
	if !es[0].Spec().Action.Contains(act) {
		t.Errorf("PPO action %v outside %v", act, es[0].Spec().Action)
	}
}

// TestDiscreteSACLearnsCartPole: discrete SAC beats the random policy on CartPole-v1.
func TestDiscreteSACLearnsCartPole(t *testing.T) {
	cfg := rl.DefaultDiscreteSACConfig()
	cfg.LearningStarts = 500
	env := envs.NewCartPole()
	a, err := rl.NewDiscreteSAC(env.Spec(), cfg, pcg(4, 1))
	if err != nil {
		t.Fatal(err)
	}
	rl.Train(env, a, 4000, pcg(4, 2))
	got, _ := rl.EvaluateLearner(envs.NewCartPole(), a, 10, pcg(7, 7))
	rnd := randomReturn(envs.NewCartPole(), 50, 7)
	t.Logf("discrete SAC CartPole-v1 after 4000 steps: %.1f (random %.1f), α = %.3f", got, rnd, a.Alpha())
	if got < rnd+60 {
		t.Errorf("discrete SAC eval return %.1f, want >= random %.1f + 60", got, rnd)
	}
}

// TestRecurrentSACRemembers: on a memory task that a feed-forward policy
// cannot solve better than chance (expected return 0), recurrent SAC with a
// 4-step window learns to act on the cue (return 1 is optimal).
func TestRecurrentSACRemembers(t *testing.T) {
	cfg := rl.DefaultRecurrentSACConfig()
	cfg.SeqLen, cfg.GRUHidden, cfg.Hidden, cfg.Gamma, cfg.BatchSize = 4, 16, []int{32, 32}, 0.9, 32
	env := &cueEnv{Delay: 3}
	a, err := rl.NewRecurrentSAC(env.Spec(), cfg, pcg(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	rl.Train(env, a, 1200, pcg(1, 3))
	got, _ := rl.EvaluateLearner(&cueEnv{Delay: 3}, a, 50, pcg(9, 9))
	t.Logf("recurrent SAC on the cue task: mean return %.2f", got)
	if got < 0.6 {
		t.Errorf("recurrent SAC return %.2f on the cue task, want >= 0.6 (chance is 0)", got)
	}
}

// linearCartPoleExpert balances CartPole-v1 for 500 steps (see envs tests).
func linearCartPoleExpert(obs []float64) float64 {
	if obs[2]+0.5*obs[3]+0.01*obs[0]+0.1*obs[1] > 0 {
		return 1
	}
	return 0
}

// TestBCClonesExperts: behaviour cloning of a balancing controller on
// CartPole-v1 (discrete) and of a bang-bang pumping controller on
// MountainCarContinuous-v0 (box) recovers most of the expert's return.
func TestBCClonesExperts(t *testing.T) {
	tests := []struct {
		name   string
		env    func() rl.Env
		expert func(obs []float64) float64
		frac   float64
	}{
		{"CartPole-v1", func() rl.Env { return envs.NewCartPole() }, linearCartPoleExpert, 0.9},
		{"MountainCarContinuous-v0", func() rl.Env { return envs.NewMountainCarContinuous() }, func(o []float64) float64 {
			if o[1] >= 0 {
				return 1
			}
			return -1
		}, 0.9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env()
			var obs, acts [][]float64
			rng := pcg(11, 1)
			for ep := 0; ep < 10; ep++ {
				o := slices.Clone(env.Reset(rng))
				for {
					a := []float64{tc.expert(o)}
					obs, acts = append(obs, o), append(acts, a)
					next, _, term, trunc := env.Step(a)
					if term || trunc {
						break
					}
					o = slices.Clone(next)
				}
			}
			expertRet, _ := rl.Evaluate(tc.env(), func(o []float64) []float64 { return []float64{tc.expert(o)} }, 10, pcg(12, 1))
			bc, err := rl.NewBC(env.Spec(), rl.DefaultBCConfig(), pcg(13, 1))
			if err != nil {
				t.Fatal(err)
			}
			loss, err := bc.Fit(obs, acts)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := rl.Evaluate(tc.env(), func(o []float64) []float64 { return bc.Act(o, true) }, 10, pcg(12, 1))
			t.Logf("%s: expert %.1f, clone %.1f, final loss %.4f, %d samples", tc.name, expertRet, got, loss, len(obs))
			if got < tc.frac*expertRet {
				t.Errorf("clone return %.1f < %.2f × expert %.1f", got, tc.frac, expertRet)
			}
		})
	}
}

// TestTD3DelaysPolicyUpdates: with PolicyDelay 2 the actor changes only on
// every second update; DDPG (delay 1) changes it every time.
func TestTD3DelaysPolicyUpdates(t *testing.T) {
	env := envs.NewPendulum()
	for _, tc := range []struct {
		name  string
		make  func() (*rl.TD3, error)
		moved []bool
	}{
		{"TD3", func() (*rl.TD3, error) {
			c := rl.DefaultTD3Config()
			c.Hidden, c.BatchSize, c.LearningStarts = []int{16}, 8, 0
			return rl.NewTD3(env.Spec(), c, pcg(1, 1))
		}, []bool{false, true, false, true}},
		{"DDPG", func() (*rl.TD3, error) {
			c := rl.DefaultDDPGConfig()
			c.Hidden, c.BatchSize, c.LearningStarts = []int{16}, 8, 0
			return rl.NewDDPG(env.Spec(), c, pcg(1, 1))
		}, []bool{true, true, true, true}},
	} {
		a, err := tc.make()
		if err != nil {
			t.Fatal(err)
		}
		rng := pcg(2, 2)
		o := env.Reset(rng)
		for i := 0; i < 20; i++ {
			act := slices.Clone(a.Explore(o))
			next, r, term, _ := env.Step(act)
			a.Replay().Add(o, []float64{act[0] / 2}, r, next, term) // Pendulum torque in [-2, 2] to [-1, 1]
			o = next
		}
		probe := []float64{0.3, -0.9, 1.5}
		for i, want := range tc.moved {
			before := a.Act(probe, true)[0]
			a.Update()
			after := a.Act(probe, true)[0]
			if (before != after) != want {
				t.Errorf("%s update %d: actor moved %v, want %v", tc.name, i+1, before != after, want)
			}
		}
	}
}

// TestDeterministicForSeed: every algorithm gives bit-identical actions
// after training with the same seed, and different ones with another seed.
func TestDeterministicForSeed(t *testing.T) {
	probe := []float64{0.1, -0.2, 0.3, 0.05}
	type maker func(seed uint64) func(obs []float64) []float64
	pend := func(o []float64) []float64 { return []float64{math.Cos(o[0]), math.Sin(o[0]), o[1]} }
	tests := []struct {
		name string
		make maker
	}{
		{"SAC", func(seed uint64) func([]float64) []float64 {
			c := rl.DefaultSACConfig()
			c.Hidden, c.BatchSize, c.LearningStarts = []int{16}, 16, 50
			a, _ := rl.NewSAC(envs.NewPendulum().Spec(), c, pcg(seed, 1))
			rl.Train(envs.NewPendulum(), a, 120, pcg(seed, 2))
			return func(o []float64) []float64 { return a.Act(pend(o), true) }
		}},
		{"TD3", func(seed uint64) func([]float64) []float64 {
			c := rl.DefaultTD3Config()
			c.Hidden, c.BatchSize, c.LearningStarts = []int{16}, 16, 50
			a, _ := rl.NewTD3(envs.NewPendulum().Spec(), c, pcg(seed, 1))
			rl.Train(envs.NewPendulum(), a, 400, pcg(seed, 2))
			return func(o []float64) []float64 { return a.Act(pend(o), true) }
		}},
		{"DDPG", func(seed uint64) func([]float64) []float64 {
			c := rl.DefaultDDPGConfig()
			c.Hidden, c.BatchSize, c.LearningStarts = []int{16}, 16, 50
			a, _ := rl.NewDDPG(envs.NewPendulum().Spec(), c, pcg(seed, 1))
			rl.Train(envs.NewPendulum(), a, 400, pcg(seed, 2))
			return func(o []float64) []float64 { return a.Act(pend(o), true) }
		}},
		{"DiscreteSAC", func(seed uint64) func([]float64) []float64 {
			c := rl.DefaultDiscreteSACConfig()
			c.Hidden, c.BatchSize, c.LearningStarts = []int{16}, 16, 50
			a, _ := rl.NewDiscreteSAC(envs.NewCartPole().Spec(), c, pcg(seed, 1))
			rl.Train(envs.NewCartPole(), a, 120, pcg(seed, 2))
			return func(o []float64) []float64 { return a.Act(o, false) }
		}},
		{"RecurrentSAC", func(seed uint64) func([]float64) []float64 {
			c := rl.DefaultRecurrentSACConfig()
			c.Hidden, c.BatchSize, c.LearningStarts, c.SeqLen, c.GRUHidden = []int{16}, 8, 50, 3, 8
			a, _ := rl.NewRecurrentSAC(envs.NewPendulum().Spec(), c, pcg(seed, 1))
			rl.Train(envs.NewPendulum(), a, 80, pcg(seed, 2))
			a.ResetEpisode()
			return func(o []float64) []float64 { return a.Act(pend(o), true) }
		}},
		{"PPO", func(seed uint64) func([]float64) []float64 {
			c := rl.DefaultPPOConfig()
			c.NumEnvs, c.NSteps, c.BatchSize, c.NEpochs = 2, 16, 16, 2
			a, _ := rl.NewPPO(envs.NewCartPole().Spec(), c, pcg(seed, 1))
			if _, err := a.Learn([]rl.Env{envs.NewCartPole(), envs.NewCartPole()}, 128, pcg(seed, 2)); err != nil {
				panic(err)
			}
			return func(o []float64) []float64 { return []float64{a.Value(o)} }
		}},
		{"BC", func(seed uint64) func([]float64) []float64 {
			c := rl.DefaultBCConfig()
			c.Epochs = 2
			b, _ := rl.NewBC(envs.NewPendulum().Spec(), c, pcg(seed, 1))
			rng := pcg(seed, 3)
			var obs, act [][]float64
			for i := 0; i < 100; i++ {
				obs = append(obs, []float64{rng.Float64(), rng.Float64(), rng.Float64()})
				act = append(act, []float64{2*rng.Float64() - 1})
			}
			if _, err := b.Fit(obs, act); err != nil {
				panic(err)
			}
			return func(o []float64) []float64 { return b.Act(pend(o), true) }
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var outs [3][]float64
			for i, seed := range []uint64{1, 1, 2} {
				f := tc.make(seed)
				for k := 0; k < 4; k++ {
					o := slices.Clone(probe)
					o[0] += float64(k)
					outs[i] = append(outs[i], f(o)...)
				}
			}
			if !slices.Equal(outs[0], outs[1]) {
				t.Errorf("same seed, different outputs: %v vs %v", outs[0], outs[1])
			}
			if slices.Equal(outs[0], outs[2]) {
				t.Errorf("seeds 1 and 2 gave identical outputs %v", outs[0])
			}
		})
	}
}

// TestActAllocationFree checks the inference paths allocate nothing.
func TestActAllocationFree(t *testing.T) {
	ps, cs := envs.NewPendulum().Spec(), envs.NewCartPole().Spec()
	sac, _ := rl.NewSAC(ps, rl.DefaultSACConfig(), pcg(1, 1))
	td3, _ := rl.NewTD3(ps, rl.DefaultTD3Config(), pcg(1, 1))
	dsac, _ := rl.NewDiscreteSAC(cs, rl.DefaultDiscreteSACConfig(), pcg(1, 1))
	rsac, _ := rl.NewRecurrentSAC(ps, rl.DefaultRecurrentSACConfig(), pcg(1, 1))
	ppo, _ := rl.NewPPO(cs, rl.DefaultPPOConfig(), pcg(1, 1))
	bc, _ := rl.NewBC(ps, rl.DefaultBCConfig(), pcg(1, 1))
	po, co := []float64{1, 0, 0.5}, []float64{0, 0.1, 0.02, -0.1}
	for name, f := range map[string]func(){
		"SAC":          func() { sac.Act(po, false) },
		"TD3":          func() { td3.Act(po, false) },
		"DiscreteSAC":  func() { dsac.Act(co, false) },
		"RecurrentSAC": func() { rsac.Act(po, false) },
		"PPO":          func() { ppo.Act(co, false) },
		"BC":           func() { bc.Act(po, true) },
	} {
		if n := testing.AllocsPerRun(50, f); n != 0 {
			t.Errorf("%s.Act allocates %v times", name, n)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	ps := envs.NewPendulum().Spec()
	cs := envs.NewCartPole().Spec()
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"sac lr", func() error { c := rl.DefaultSACConfig(); c.LR = 0; _, err := rl.NewSAC(ps, c, pcg(1, 1)); return err }, "lr: must be > 0"},
		{"sac discrete actions", func() error { _, err := rl.NewSAC(cs, rl.DefaultSACConfig(), pcg(1, 1)); return err }, "continuous-action algorithm given Discrete(2)"},
		{"td3 critics", func() error {
			c := rl.DefaultTD3Config()
			c.Critics = 3
			_, err := rl.NewTD3(ps, c, pcg(1, 1))
			return err
		}, "critics: must be 1 or 2"},
		{"td3 gamma", func() error {
			c := rl.DefaultTD3Config()
			c.Gamma = 1.5
			_, err := rl.NewTD3(ps, c, pcg(1, 1))
			return err
		}, "gamma: must be in [0, 1]"},
		{"discrete sac box", func() error { _, err := rl.NewDiscreteSAC(ps, rl.DefaultDiscreteSACConfig(), pcg(1, 1)); return err }, "is not discrete"},
		{"recurrent window", func() error {
			c := rl.DefaultRecurrentSACConfig()
			c.SeqLen = 0
			_, err := rl.NewRecurrentSAC(ps, c, pcg(1, 1))
			return err
		}, "seq_len, gru_hidden"},
		{"ppo epochs", func() error {
			c := rl.DefaultPPOConfig()
			c.NEpochs = 0
			_, err := rl.NewPPO(cs, c, pcg(1, 1))
			return err
		}, "n_epochs: must be >= 1"},
		{"ppo env count", func() error {
			p, _ := rl.NewPPO(cs, rl.DefaultPPOConfig(), pcg(1, 1))
			_, err := p.Learn([]rl.Env{envs.NewCartPole()}, 10, pcg(1, 1))
			return err
		}, "1 environments, config wants 8"},
		{"bc data", func() error {
			b, _ := rl.NewBC(ps, rl.DefaultBCConfig(), pcg(1, 1))
			_, err := b.Fit([][]float64{{1, 2, 3}}, nil)
			return err
		}, "1 observations and 0 actions"},
	}
	for _, tc := range tests {
		err := tc.err()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestUpdateAllocationFree: after the first update sized every buffer, a
// gradient update allocates nothing.
func TestUpdateAllocationFree(t *testing.T) {
	ps, cs := envs.NewPendulum().Spec(), envs.NewCartPole().Spec()
	sc := rl.DefaultSACConfig()
	sc.Hidden, sc.BatchSize, sc.LearningStarts = []int{8}, 8, 100
	tc := rl.DefaultTD3Config()
	tc.Hidden, tc.BatchSize, tc.LearningStarts = []int{8}, 8, 100
	dc := rl.DefaultDiscreteSACConfig()
	dc.Hidden, dc.BatchSize, dc.LearningStarts = []int{8}, 8, 100
	rc := rl.DefaultRecurrentSACConfig()
	rc.Hidden, rc.BatchSize, rc.LearningStarts, rc.SeqLen, rc.GRUHidden = []int{8}, 8, 100, 3, 4
	sac, _ := rl.NewSAC(ps, sc, pcg(1, 1))
	td3, _ := rl.NewTD3(ps, tc, pcg(1, 1))
	dsac, _ := rl.NewDiscreteSAC(cs, dc, pcg(1, 1))
	rsac, _ := rl.NewRecurrentSAC(ps, rc, pcg(1, 1))
	rl.Train(envs.NewPendulum(), sac, 50, pcg(1, 2))
	rl.Train(envs.NewPendulum(), td3, 50, pcg(1, 2))
	rl.Train(envs.NewCartPole(), dsac, 50, pcg(1, 2))
	rl.Train(envs.NewPendulum(), rsac, 50, pcg(1, 2))
	for name, f := range map[string]func(){
		"SAC": sac.Update, "TD3": td3.Update, "DiscreteSAC": dsac.Update, "RecurrentSAC": rsac.Update,
	} {
		f()
		f()
		if n := testing.AllocsPerRun(10, f); n != 0 {
			t.Errorf("%s.Update allocates %v times", name, n)
		}
	}
}

// TestRecurrentSACFineTunes: SetActor makes an agent act as the one it
// copied, and with ActorStart the actor stays as copied while the critics
// learn, then learns too.
func TestRecurrentSACFineTunes(t *testing.T) {
	cfg := rl.DefaultRecurrentSACConfig()
	cfg.SeqLen, cfg.GRUHidden, cfg.Hidden, cfg.BatchSize, cfg.LearningStarts = 4, 8, []int{16}, 16, 20
	env := &cueEnv{Delay: 3}
	trained, err := rl.NewRecurrentSAC(env.Spec(), cfg, pcg(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	rl.Train(env, trained, 200, pcg(1, 3))
	cfg.ActorStart = 50
	tuned, err := rl.NewRecurrentSAC(env.Spec(), cfg, pcg(5, 6))
	if err != nil {
		t.Fatal(err)
	}
	if err := tuned.SetActor(trained.Actor()); err != nil {
		t.Fatal(err)
	}
	obs := []float64{1, 0}
	if a, b := trained.Act(obs, true)[0], tuned.Act(obs, true)[0]; a != b {
		t.Fatalf("copied actor acts %g, the original %g", b, a)
	}
	snapshot := func() []float32 {
		gru, head := tuned.Actor()
		var w []float32
		for _, n := range append(gru.State(), head.State()...) {
			w = append(w, n.Value.Data...)
		}
		return w
	}
	before := snapshot()
	rl.Train(env, tuned, cfg.LearningStarts+cfg.ActorStart, pcg(7, 8))
	if tuned.Updates < 10 || !slices.Equal(before, snapshot()) {
		t.Fatalf("after %d critic-only updates the actor changed (or no update ran)", tuned.Updates)
	}
	rl.Train(env, tuned, 20, pcg(7, 9))
	if slices.Equal(before, snapshot()) {
		t.Fatalf("after %d updates, past ActorStart %d, the actor has not changed", tuned.Updates, cfg.ActorStart)
	}
	small, err := rl.NewRecurrentSAC(env.Spec(), rl.RecurrentSACConfig{SACConfig: cfg.SACConfig, SeqLen: 4, GRUHidden: 4}, pcg(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := small.SetActor(trained.Actor()); err == nil {
		t.Error("SetActor took an actor of another shape")
	}
}
