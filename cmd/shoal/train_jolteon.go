package main

import (
	"fmt"
	"time"

	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/experiment"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/scenario"
	"github.com/spf13/cobra"
)

func (cl *cli) trainJolteon(short string) *cobra.Command {
	var (
		out, qos     string
		seed         uint64
		warm, rounds int
		quiet        bool
		rec          recording
	)
	cmd := &cobra.Command{
		Use:   "jolteon SCENARIO -o FILE",
		Short: short,
		Long: short + `.

A reimplementation from the paper (Zhang, Jin and Jin, NSDI '24) and its
release, not the authors' system: at every workload level of a serverless
workflow scenario (faas-*) it profiles --warm random configurations, then
--rounds times fits each function's stochastic performance model (a
processor-sharing white box and a measured black box) to everything measured,
solves for the cheapest configuration (CPU, memory, instances; no concurrency
limit) that meets the QoS in a window with 90% probability on the model's
samples, and runs it. The policy holds the model and every level's solution;
'shoal sim SCENARIO --policy jolteon:FILE' serves it, one decision per window.`,
		Example: `  shoal train jolteon faas-sequential -o jolteon.policy
  shoal sim faas-sequential --policy static,jolteon:jolteon.policy --seeds 3`,
		Args:              exactArgs(1, "one scenario"),
		ValidArgsFunction: completeScenarios,
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "where to save the policy `FILE` (required)")
	f.StringVar(&qos, "qos", "", "the workflow's QoS, as train faasconf takes it (default: train faasconf's)")
	f.Uint64Var(&seed, "seed", 1, "profiling seed")
	f.IntVar(&warm, "warm", 20, "random configurations profiled per level")
	f.IntVar(&rounds, "rounds", 15, "solve, run and refit rounds per level")
	f.BoolVar(&quiet, "quiet", false, "no per-level progress")
	rec.register(f)
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if out == "" {
			return usagef("-o FILE is required (where to save the policy)")
		}
		if warm < 1 || rounds < 1 {
			return usagef("--warm and --rounds must be >= 1, got %d and %d", warm, rounds)
		}
		cfg := experiment.JolteonTraining{Seed: seed, Warm: warm, Rounds: rounds}
		if qos != "" {
			var err error
			if cfg.QoS, err = faasconf.ParseQoS(qos); err != nil {
				return usagef("--qos: %v", err)
			}
		}
		sc, err := scenario.Lookup(args[0])
		if err != nil {
			return err
		}
		start := time.Now()
		if !quiet {
			cfg.Progress = func(level, price float64, met int) {
				fmt.Fprintf(cl.stderr, "level %.1f: cheapest that met the QoS %.3f $/h, met in %d of %d rounds  %s\n",
					level, price, met, rounds, time.Since(start).Round(time.Second))
			}
		}
		p, err := experiment.TrainJolteon(cmd.Context(), sc, cfg)
		if err != nil {
			return fmt.Errorf("train jolteon: %w", err)
		}
		p.Provenance.WallSeconds = time.Since(start).Seconds()
		if err := modelfile.WriteFile(out, p.Write); err != nil {
			return err
		}
		fmt.Fprintf(cl.stdout, "profiled jolteon on %s (seed %d, QoS %v): %d measurements in %.0f s; wrote %s\n",
			sc.Name, seed, p.QoS, p.Provenance.Profiled, p.Provenance.WallSeconds, out)
		return cl.recordTraining(cmd, &rec, start, sc, "jolteon", seed, out, figures("profiled", p.Provenance.Profiled))
	})
	return cmd
}
