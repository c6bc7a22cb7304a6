package rl_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/learn/rl/envs"
)

// Reference scores from RL Baselines3 Zoo (benchmark.md): Pendulum-v1 after
// 20000 steps SAC −157, TD3 −152, DDPG −152; CartPole-v1 PPO 500 after
// 100000 steps. The bars below are the project's: −200 on Pendulum-v1 and
// 475 (the task's reward threshold) on CartPole-v1, median of 3 seeds, with
// the zoo hyperparameters except the network widths of SAC/TD3/DDPG, cut
// from 256-256 and 400-300 to 64-64 (about a tenth of the CPU time; set
// SHOAL_ZOO_NETS=1 for the zoo's widths).

const referenceEvalEpisodes = 10

// zooNets reports whether SHOAL_ZOO_NETS asks for the zoo's network widths
// (256-256 for SAC, 400-300 for TD3 and DDPG), about 10x the CPU time.
func zooNets() bool { return os.Getenv("SHOAL_ZOO_NETS") != "" }

// referenceSeeds is 3 unless SHOAL_SEEDS says otherwise.
func referenceSeeds() int {
	if n, err := strconv.Atoi(os.Getenv("SHOAL_SEEDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

type referenceRun struct {
	algo  string
	steps int
	bar   float64
	run   func(seed uint64) float64 // final mean evaluation return
}

func evalSeedRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0xe7a1)) }

func referenceRuns() []referenceRun {
	return []referenceRun{
		{"SAC/Pendulum-v1", 20_000, -200, func(seed uint64) float64 {
			cfg := rl.DefaultSACConfig()
			if !zooNets() {
				cfg.Hidden = []int{64, 64}
			}
			env := envs.NewPendulum()
			a, err := rl.NewSAC(env.Spec(), cfg, rand.New(rand.NewPCG(seed, 1)))
			if err != nil {
				panic(err)
			}
			rl.Train(env, a, 20_000, rand.New(rand.NewPCG(seed, 2)))
			m, _ := rl.EvaluateLearner(envs.NewPendulum(), a, referenceEvalEpisodes, evalSeedRNG(seed))
			return m
		}},
		{"TD3/Pendulum-v1", 20_000, -200, func(seed uint64) float64 {
			cfg := rl.DefaultTD3Config()
			if !zooNets() {
				cfg.Hidden = []int{64, 64}
			}
			env := envs.NewPendulum()
			a, err := rl.NewTD3(env.Spec(), cfg, rand.New(rand.NewPCG(seed, 1)))
			if err != nil {
				panic(err)
			}
			rl.Train(env, a, 20_000, rand.New(rand.NewPCG(seed, 2)))
			m, _ := rl.EvaluateLearner(envs.NewPendulum(), a, referenceEvalEpisodes, evalSeedRNG(seed))
			return m
		}},
		{"DDPG/Pendulum-v1", 20_000, -200, func(seed uint64) float64 {
			cfg := rl.DefaultDDPGConfig()
			if !zooNets() {
				cfg.Hidden = []int{64, 64}
			}
			env := envs.NewPendulum()
			a, err := rl.NewDDPG(env.Spec(), cfg, rand.New(rand.NewPCG(seed, 1)))
			if err != nil {
				panic(err)
			}
			rl.Train(env, a, 20_000, rand.New(rand.NewPCG(seed, 2)))
			m, _ := rl.EvaluateLearner(envs.NewPendulum(), a, referenceEvalEpisodes, evalSeedRNG(seed))
			return m
		}},
		{"PPO/CartPole-v1", 100_000, 475, func(seed uint64) float64 {
			cfg := rl.DefaultPPOConfig()
			var es []rl.Env
			for i := 0; i < cfg.NumEnvs; i++ {
				es = append(es, envs.NewCartPole())
			}
			a, err := rl.NewPPO(es[0].Spec(), cfg, rand.New(rand.NewPCG(seed, 1)))
			if err != nil {
				panic(err)
			}
			if _, err := a.Learn(es, 100_000, rand.New(rand.NewPCG(seed, 2))); err != nil {
				panic(err)
			}
			m, _ := rl.Evaluate(envs.NewCartPole(), func(o []float64) []float64 { return a.Act(o, true) }, referenceEvalEpisodes, evalSeedRNG(seed))
			return m
		}},
	}
}

// TestReferenceScores trains each algorithm with 3 seeds and checks the
// median final evaluation return against the bar. Runs are parallel
// subtests, so -parallel bounds how many train at once (default GOMAXPROCS).
// Run with
//
//	SHOAL_LONG=1 go test -run TestReferenceScores -parallel 2 -timeout 3h -v ./learn/rl/
//
// SHOAL_REF=SAC (a prefix of the run name) restricts it to some algorithms,
// SHOAL_SEEDS=n and SHOAL_FIRST_SEED=k run seeds k..k+n−1, SHOAL_ZOO_NETS=1 uses the zoo's
// network widths instead of 64-64.
func TestReferenceScores(t *testing.T) {
	if os.Getenv("SHOAL_LONG") == "" {
		t.Skip("long reference runs: set SHOAL_LONG=1")
	}
	only := os.Getenv("SHOAL_REF")
	var mu sync.Mutex
	scores := map[string][]float64{}
	var refs []referenceRun
	for _, ref := range referenceRuns() {
		if only == "" || strings.HasPrefix(ref.algo, only) {
			refs = append(refs, ref)
		}
	}
	t.Run("runs", func(t *testing.T) {
		for _, ref := range refs {
			first := uint64(1)
			if n, err := strconv.Atoi(os.Getenv("SHOAL_FIRST_SEED")); err == nil && n > 0 {
				first = uint64(n)
			}
			for seed := first; seed < first+uint64(referenceSeeds()); seed++ {
				t.Run(fmt.Sprintf("%s/seed%d", ref.algo, seed), func(t *testing.T) {
					t.Parallel()
					start := time.Now()
					s := ref.run(seed)
					t.Logf("%s seed %d: mean eval return %.1f after %d steps (wall %v)", ref.algo, seed, s, ref.steps, time.Since(start).Round(time.Second))
					mu.Lock()
					scores[ref.algo] = append(scores[ref.algo], s)
					mu.Unlock()
				})
			}
		}
	})
	for _, ref := range refs {
		got := slices.Clone(scores[ref.algo])
		if len(got) != referenceSeeds() {
			t.Errorf("%s: %d runs finished", ref.algo, len(got))
			continue
		}
		slices.Sort(got)
		med := got[len(got)/2]
		t.Logf("%s: median %.1f of %v (bar %v)", ref.algo, med, got, ref.bar)
		if med < ref.bar {
			t.Errorf("%s: median evaluation return %.1f < %v", ref.algo, med, ref.bar)
		}
	}
}
