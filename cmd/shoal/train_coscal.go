package main

import (
	"fmt"
	"time"

	"github.com/shoal-project/shoal/envs/coscalenv"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/scenario"
	"github.com/spf13/cobra"
)

func (cl *cli) trainCoScal(short string) *cobra.Command {
	var (
		t     autoscalerTraining
		noGRU bool
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
	t.register(f, 4*time.Minute, "wall time of the whole run; no exploring episode starts after it", 150, "Q-learning")
	f.BoolVar(&noGRU, "no-forecast", false, "no GRU: the trend is the last period's change")
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if err := t.check(); err != nil {
			return err
		}
		sc, err := scenario.Lookup(args[0])
		if err != nil {
			return err
		}
		start := time.Now()
		cfg := coscalenv.DefaultConfig()
		cfg.Seed, cfg.Episodes, cfg.EpisodeLength, cfg.Period, cfg.NoForecast = t.seed, t.episodes, t.length, t.period, noGRU
		cfg.Deadline, cfg.Now = start.Add(t.budget), time.Now
		if !t.quiet {
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
		if err := modelfile.WriteFile(t.out, tr.Policy.Write); err != nil {
			return err
		}
		p := tr.Policy.Provenance
		fmt.Fprintf(cl.stdout, "trained coscal on %s (seed %d): forecast MAPE %.1f%%; %d episodes, %d decision periods in %.0f s; greedy episode reward %.3f, SLO violations %.1f%%; %d parameters; wrote %s\n",
			sc.Name, t.seed, p.ForecastMAPE, p.Episodes, p.EnvSteps, p.WallSeconds, p.Score, 100*p.SLOViolations, tr.Policy.Parameters(), t.out)
		return cl.recordTraining(cmd, &t.rec, start, sc, "coscal", t.seed, t.out, figures("episodes", p.Episodes, "env_steps", p.EnvSteps,
			"forecast_mape", p.ForecastMAPE, "reward", p.Score, "slo_violations", p.SLOViolations))
	})
	return cmd
}
