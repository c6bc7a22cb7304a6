package main

import (
	"time"

	"github.com/spf13/pflag"
)

// autoscalerTraining are the flags every autoscaling learner takes (drpc,
// firm, coscal).
type autoscalerTraining struct {
	out            string
	budget, length time.Duration
	period         time.Duration
	episodes       int
	seed           uint64
	quiet          bool
	rec            recording
}

// register declares the flags; what names the episodes ("teacher",
// "DDPG", ...) and budget describes what the wall-time budget bounds.
func (t *autoscalerTraining) register(f *pflag.FlagSet, budget time.Duration, budgetHelp string, episodes int, what string) {
	f.StringVarP(&t.out, "output", "o", "", "where to save the policy `FILE` (required)")
	f.DurationVar(&t.budget, "budget", budget, budgetHelp)
	f.IntVar(&t.episodes, "episodes", episodes, what+" episodes at most")
	f.DurationVar(&t.length, "episode-length", 10*time.Minute, "simulated time per episode")
	f.DurationVar(&t.period, "period", 5*time.Second, "decision period")
	f.Uint64Var(&t.seed, "seed", 1, "training seed; training systems never reuse evaluation seeds")
	f.BoolVar(&t.quiet, "quiet", false, "no per-episode progress")
	t.rec.register(f)
}

// check reports a usage error in the common flags.
func (t *autoscalerTraining) check() error {
	if t.out == "" {
		return usagef("-o FILE is required (where to save the policy)")
	}
	if t.budget <= 0 || t.episodes <= 0 || t.length <= 0 || t.period <= 0 {
		return usagef("--budget, --episodes, --episode-length and --period must be positive")
	}
	return nil
}
