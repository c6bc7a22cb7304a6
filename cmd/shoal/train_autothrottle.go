package main

import (
	"fmt"
	"time"

	"github.com/shoal-project/shoal/envs/autothrottleenv"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/scenario"
	"github.com/spf13/cobra"
)

func (cl *cli) trainAutothrottle(short string) *cobra.Command {
	var (
		out             string
		seed            uint64
		explore, greedy int
		length          time.Duration
		slo             time.Duration
		quiet           bool
		rec             recording
	)
	cmd := &cobra.Command{
		Use:   "autothrottle SCENARIO -o FILE",
		Short: short,
		Long: short + `.

An Autothrottle-like baseline (Wang et al., NSDI 2024), reimplemented from
the authors' release: per autoscaled service a captain holds a CPU throttle
ratio at a target by resizing its CPU limit (its replicas stay as they are);
every minute a tower, a contextual bandit on the request rate, gives the two
clusters of services (by CPU use) their targets, aiming at the p99 --slo at
the fewest cores. Training is the release's warm-up on the training
workloads: --explore episodes in which the tower tries the least-tried
targets, then --greedy episodes exploring half the time. The file keeps the
minutes it sampled; 'shoal sim SCENARIO --policy autothrottle:FILE' starts
from them (autothrottle:slo=0.3:file=FILE aims at another p99).`,
		Example: `  shoal train autothrottle trainticket -o autothrottle.policy
  shoal sim trainticket-surge --policy hpa,autothrottle:autothrottle.policy --seeds 3`,
		Args:              exactArgs(1, "one scenario"),
		ValidArgsFunction: completeScenarios,
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "where to save the policy `FILE` (required)")
	f.Uint64Var(&seed, "seed", 1, "training seed; training systems never reuse evaluation seeds")
	f.IntVar(&explore, "explore", 18, "episodes of the exploring tower")
	f.IntVar(&greedy, "greedy", 18, "episodes of the tower exploring half the time")
	f.DurationVar(&length, "episode-length", 20*time.Minute, "simulated time per episode")
	f.DurationVar(&slo, "slo", 0, "the p99 the tower aims at (default: the scenario's SLO)")
	f.BoolVar(&quiet, "quiet", false, "no per-episode progress")
	rec.register(f)
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if out == "" {
			return usagef("-o FILE is required (where to save the policy)")
		}
		if explore < 0 || greedy < 0 || explore+greedy == 0 || length < 5*time.Minute || slo < 0 {
			return usagef("--explore and --greedy must not be negative nor both 0, --episode-length at least 5m, --slo not negative")
		}
		sc, err := scenario.Lookup(args[0])
		if err != nil {
			return err
		}
		start := time.Now()
		cfg := autothrottleenv.DefaultConfig(sc)
		cfg.Seed, cfg.ExploreEpisodes, cfg.GreedyEpisodes, cfg.EpisodeLength = seed, explore, greedy, length
		if slo > 0 {
			cfg.Tower.SLO = slo.Seconds()
		}
		if !quiet {
			cfg.Progress = func(ep, samples int, violations float64) {
				fmt.Fprintf(cl.stderr, "episode %3d of %d  %d samples  SLO violations %5.1f%%  %s\n", ep, explore+greedy, samples, 100*violations, time.Since(start).Round(time.Second))
			}
		}
		p, err := autothrottleenv.Train(cmd.Context(), sc, cfg)
		if err != nil {
			return fmt.Errorf("train autothrottle: %w", err)
		}
		if err := modelfile.WriteFile(out, p.Write); err != nil {
			return err
		}
		busy := 0
		for _, k := range p.Clusters {
			if k == 0 {
				busy++
			}
		}
		fmt.Fprintf(cl.stdout, "trained autothrottle on %s (seed %d): %d services in two clusters (%d busy), %d samples in %.0f s; wrote %s\n",
			sc.Name, seed, len(p.Clusters), busy, len(p.Samples), time.Since(start).Seconds(), out)
		return cl.recordTraining(cmd, &rec, start, sc, "autothrottle", seed, out, figures("samples", len(p.Samples), "episodes", explore+greedy))
	})
	return cmd
}
