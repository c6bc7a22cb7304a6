package main

import (
	"fmt"
	"time"

	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/envs/drpcenv"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/scenario"
	"github.com/spf13/cobra"
)

func (cl *cli) trainDRPC(short string) *cobra.Command {
	var (
		t        autoscalerTraining
		weight   float64
		residual bool
		predict  bool
	)
	cmd := &cobra.Command{
		Use:   "drpc SCENARIO -o FILE",
		Short: short,
		Long: short + `.

The central TD3 teacher explores the scenario's autoscaled services in the
simulator, acting on every deployment at once each period (DRPC Algorithms 1
and 3), until --episodes or --budget runs out; then one small student per
deployment learns to imitate it (DAgger: the teacher labels the states the
students visit). The policy file holds the students, the teacher and the
guard rails; 'shoal sim SCENARIO --policy drpc:FILE' runs it, with the
scenario's HPA as the fallback for deployments whose inputs leave the
trained range.`,
		Example: `  shoal train drpc trainticket -o drpc.policy --budget 12m
  shoal sim trainticket --policy hpa,kpa,drpc:drpc.policy --seeds 5`,
		Args:              exactArgs(1, "one scenario"),
		ValidArgsFunction: completeScenarios,
	}
	f := cmd.Flags()
	t.register(f, 12*time.Minute, "wall time for the teacher's episodes (the students' imitation comes after)", 200, "teacher")
	f.Float64Var(&weight, "util-weight", 0, "weight of equation 2's distance term (the paper's is 1; default: drpc.DefaultReward's)")
	f.BoolVar(&predict, "forecast", false, "fit a GRU workload predictor on four episodes of the base rule first; the policy reads its forecast")
	f.BoolVar(&residual, "residual", true, "learn a residual over a 30%/75% CPU threshold rule (false: the paper's plain TD3)")
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if err := t.check(); err != nil {
			return err
		}
		sc, err := scenario.Lookup(args[0])
		if err != nil {
			return err
		}
		start := time.Now()
		cfg := drpcenv.DefaultConfig()
		cfg.Seed, cfg.Episodes, cfg.EpisodeLength, cfg.Period = t.seed, t.episodes, t.length, t.period
		cfg.Deadline, cfg.Now = start.Add(t.budget), time.Now
		if !residual {
			cfg.Base = nil
		}
		if predict {
			cfg.ForecastEpisodes = 4
		}
		if weight < 0 {
			return usagef("--util-weight must not be negative")
		}
		if weight > 0 {
			cfg.Reward = drpc.DefaultReward(sc.SLO)
			cfg.Reward.UtilWeight = weight
		}
		if !t.quiet {
			cfg.Progress = func(e drpcenv.Episode) {
				fmt.Fprintf(cl.stderr, "episode %3d %-9s reward %.3f  SLO violations %5.1f%%  %d steps  %d updates  %s\n",
					e.Index, e.Phase, e.Reward, 100*e.SLOViolations, e.Steps, e.Updates, time.Since(start).Round(time.Second))
			}
		}
		tr, err := drpcenv.Train(cmd.Context(), sc, cfg)
		if err != nil {
			return fmt.Errorf("train drpc: %w", err)
		}
		tr.Policy.Provenance.WallSeconds = time.Since(start).Seconds()
		if err := modelfile.WriteFile(t.out, tr.Policy.Write); err != nil {
			return err
		}
		p := tr.Policy.Provenance
		fmt.Fprintf(cl.stdout, "trained drpc on %s (seed %d): %d episodes, %d decision periods, %d teacher updates in %.0f s; teacher reward %.3f, students %.3f (imitation MSE %.4f); %d parameters per student; wrote %s\n",
			sc.Name, t.seed, p.Episodes, p.EnvSteps, p.Updates, p.WallSeconds, p.TeacherScore, p.StudentScore, p.ImitationMSE, tr.Policy.Parameters(), t.out)
		return nil
	})
	return cmd
}
