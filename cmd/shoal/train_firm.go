package main

import (
	"fmt"
	"time"

	"github.com/shoal-project/shoal/envs/firmenv"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/scenario"
	"github.com/spf13/cobra"
)

func (cl *cli) trainFIRM(short string) *cobra.Command {
	var (
		t      autoscalerTraining
		labels int
		alpha  float64
	)
	cmd := &cobra.Command{
		Use:   "firm SCENARIO -o FILE",
		Short: short,
		Long: short + `.

First the culprit classifier is fitted on periods labelled under an anomaly
injector (one service's CPU limit cut at a time while the scenario's HPA
scales, FIRM sections 3.3 and 3.6); then a DDPG agent learns to change the
one culprit's CPU limit or replicas per period (section 3.4) until
--episodes or --budget runs out. 'shoal sim SCENARIO --policy firm:FILE'
runs the policy over the scenario's call graph.`,
		Example: `  shoal train firm trainticket -o firm.policy --budget 4m
  shoal train firm trainticket -o firm-a08.policy --alpha 0.8
  shoal sim trainticket --policy hpa,kpa,firm:firm.policy --seeds 3`,
		Args:              exactArgs(1, "one scenario"),
		ValidArgsFunction: completeScenarios,
	}
	f := cmd.Flags()
	t.register(f, 4*time.Minute, "wall time of the whole run; no DDPG episode starts after it", 150, "DDPG")
	f.IntVar(&labels, "label-episodes", 3, "episodes under the anomaly injector that label the classifier's data")
	f.Float64Var(&alpha, "alpha", firmenv.DefaultConfig().Alpha, "weight of the reward's SLO term against utilisation, in (0, 1]")
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if err := t.check(); err != nil {
			return err
		}
		if labels <= 0 {
			return usagef("--label-episodes must be positive")
		}
		if alpha <= 0 || alpha > 1 {
			return usagef("--alpha must be in (0, 1], got %g", alpha)
		}
		sc, err := scenario.Lookup(args[0])
		if err != nil {
			return err
		}
		start := time.Now()
		cfg := firmenv.DefaultConfig()
		cfg.Seed, cfg.Episodes, cfg.LabelEpisodes, cfg.EpisodeLength, cfg.Period, cfg.Alpha = t.seed, t.episodes, labels, t.length, t.period, alpha
		cfg.Now = time.Now
		if !t.quiet {
			cfg.Progress = func(e firmenv.Episode) {
				fmt.Fprintf(cl.stderr, "episode %3d %-5s reward %.3f  SLO violations %5.1f%%  %d culprit periods  %s\n",
					e.Index, e.Phase, e.Reward, 100*e.SLOViolations, e.Culprits, time.Since(start).Round(time.Second))
			}
		}
		cfg.Deadline = start.Add(t.budget)
		tr, err := firmenv.Train(cmd.Context(), sc, cfg)
		if err != nil {
			return fmt.Errorf("train firm: %w", err)
		}
		tr.Policy.Provenance.WallSeconds = time.Since(start).Seconds()
		if err := modelfile.WriteFile(t.out, tr.Policy.Write); err != nil {
			return err
		}
		p := tr.Policy.Provenance
		fmt.Fprintf(cl.stdout, "trained firm on %s (seed %d): classifier accuracy %.2f on %d samples; %d DDPG episodes, %d culprit periods, %d updates in %.0f s; last episode reward %.3f, SLO violations %.1f%%; %d parameters; wrote %s\n",
			sc.Name, t.seed, p.Accuracy, p.Samples, p.Episodes, p.EnvSteps, p.Updates, p.WallSeconds, p.Score, 100*p.SLOViolations, tr.Policy.Parameters(), t.out)
		return cl.recordTraining(cmd, &t.rec, start, sc, "firm", t.seed, t.out, figures("episodes", p.Episodes, "env_steps", p.EnvSteps,
			"classifier_accuracy", p.Accuracy, "reward", p.Score, "slo_violations", p.SLOViolations))
	})
	return cmd
}
