package main

import (
	"fmt"
	"time"

	"github.com/shoal-project/shoal/envs/coscalenv"
	"github.com/shoal-project/shoal/scenario"
	"github.com/spf13/cobra"
)

func (cl *cli) trainCoScal(short string) *cobra.Command {
	var (
		out            string
		budget, length time.Duration
		period         time.Duration
		episodes       int
		seed           uint64
		quiet, noGRU   bool
	)
	cmd := &cobra.Command{
		Use:   "coscal SCENARIO -o FILE",
		Short: short,
		Long: short + `.

First a GRU learns to forecast the ingress rate of the training workloads;
then one Q-table over a deployment's CPU utilisation quarter, the forecast
trend and whether the SLO is missed, with actions none, replicas up or
down, CPU up or down and brownout on or off (optional services only),
learns by epsilon-greedy Q-learning from every autoscaled deployment's
transitions until --episodes or --budget runs out; the last episode is
greedy. 'shoal sim SCENARIO --policy
coscal:FILE' runs the policy.`,
		Example: `  shoal train coscal trainticket -o coscal.policy --budget 4m
  shoal sim trainticket --policy hpa,kpa,coscal:coscal.policy --seeds 3`,
		Args:              exactArgs(1, "one scenario"),
		ValidArgsFunction: completeScenarios,
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "where to save the policy `FILE` (required)")
	f.DurationVar(&budget, "budget", 4*time.Minute, "wall time of the whole run; no exploring episode starts after it")
	f.IntVar(&episodes, "episodes", 150, "Q-learning episodes at most")
	f.DurationVar(&length, "episode-length", 10*time.Minute, "simulated time per episode")
	f.DurationVar(&period, "period", 5*time.Second, "decision period")
	f.Uint64Var(&seed, "seed", 1, "training seed; training systems never reuse evaluation seeds")
	f.BoolVar(&noGRU, "no-forecast", false, "no GRU: the trend is the last period's change")
	f.BoolVar(&quiet, "quiet", false, "no per-episode progress")
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if out == "" {
			return usagef("-o FILE is required (where to save the policy)")
		}
		if budget <= 0 || episodes <= 0 || length <= 0 || period <= 0 {
			return usagef("--budget, --episodes, --episode-length and --period must be positive")
		}
		sc, err := scenario.Lookup(args[0])
		if err != nil {
			return err
		}
		start := time.Now()
		cfg := coscalenv.DefaultConfig()
		cfg.Seed, cfg.Episodes, cfg.EpisodeLength, cfg.Period, cfg.NoForecast = seed, episodes, length, period, noGRU
		cfg.Deadline, cfg.Now = start.Add(budget), time.Now
		if !quiet {
			cfg.Progress = func(e coscalenv.Episode) {
				fmt.Fprintf(cl.stderr, "episode %3d epsilon %.2f reward %.3f  SLO violations %5.1f%%  %d actions  %s\n",
					e.Index, e.Epsilon, e.Reward, 100*e.SLOViolations, e.Actions, time.Since(start).Round(time.Second))
			}
		}
		tr, err := coscalenv.Train(cmd.Context(), sc, cfg)
		if err != nil {
			return fmt.Errorf("train coscal: %w", err)
		}
		tr.Policy.Provenance.WallSeconds = time.Since(start).Seconds()
		if err := writeFileAtomic(out, tr.Policy.Write); err != nil {
			return err
		}
		p := tr.Policy.Provenance
		fmt.Fprintf(cl.stdout, "trained coscal on %s (seed %d): forecast MAPE %.1f%%; %d episodes, %d decision periods in %.0f s; greedy episode reward %.3f, SLO violations %.1f%%; %d parameters; wrote %s\n",
			sc.Name, seed, p.ForecastMAPE, p.Episodes, p.EnvSteps, p.WallSeconds, p.Score, 100*p.SLOViolations, tr.Policy.Parameters(), out)
		return nil
	})
	return cmd
}
