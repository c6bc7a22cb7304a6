package main

import (
	"fmt"
	"time"

	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/envs/faasconfenv"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/scenario"
	"github.com/spf13/cobra"
)

// qosDefaults says how a QoS without a latency gets one.
var qosDefaults = fmt.Sprintf("a mean may be %g times the workflow's own configuration's, a percentile %g times its own", faasconfenv.QoSSlack, faasconfenv.TailSlack)

func (cl *cli) trainFaaSConf(short string) *cobra.Command {
	var (
		out                 string
		budget              time.Duration
		logged, offline     int
		online              int
		seed                uint64
		quiet               bool
		variant             string
		hardwareOnly        bool
		gamma, anchorWeight float64
		margin              float64
		descend             bool
		seeds               int
		verify              int
		qos                 string
		rec                 recording
	)
	def := faasconfenv.DefaultTrainConfig()
	cmd := &cobra.Command{
		Use:   "faasconf SCENARIO -o FILE",
		Short: short,
		Long: short + `.

One agent per tuned function of a serverless workflow scenario (faas-*) sets
its CPU and memory limits, instances and concurrency limit (the hybrid
configuration). Every step measures a joint configuration for one 30 s
window at a workload level; the agents share the reward of FaaSConf section
4.1 (the price of equation 2, and a bonus when the window met the QoS).
Training is offline first, on --logged episodes of random configurations
(the Data Store), then online for up to --online episodes or --budget,
through the safe exploration strategy. 'shoal sim SCENARIO --policy
faasconf:FILE' serves the policy, one decision per window.`,
		Example: `  shoal train faasconf faas-sequential -o faasconf.policy --budget 10m
  shoal sim faas-sequential --policy openfaas,faasconf:faasconf.policy --seeds 3`,
		Args:              exactArgs(1, "one scenario"),
		ValidArgsFunction: completeScenarios,
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "where to save the policy `FILE` (required)")
	f.DurationVar(&budget, "budget", 12*time.Minute, "wall time of the whole run; no online episode starts after it")
	f.IntVar(&logged, "logged", def.Logged, "episodes of random configurations logged first (15 measurements each)")
	f.IntVar(&offline, "offline-updates", def.OfflineUpdates, "updates on the logged data before the online episodes")
	f.IntVar(&online, "online", def.Online, "online episodes at most")
	f.Uint64Var(&seed, "seed", 1, "training seed (the first of --seeds)")
	f.IntVar(&seeds, "seeds", faasconfenv.DefaultSeeds, "training seeds, two at a time; the policy kept is the one that serves best on validation windows of their own")
	f.BoolVar(&quiet, "quiet", false, "no per-episode progress")
	f.StringVar(&variant, "variant", string(rl.AttMF), "what critics and actors see: attmf (the paper's), mf, maddpg or ddpg (the ablations)")
	f.Float64Var(&gamma, "gamma", def.Learner.Gamma, "discount of the critics' targets, in [0, 1]")
	f.Float64Var(&anchorWeight, "anchor-weight", def.Learner.AnchorWeight, "weight of the actors' behaviour-cloning term toward each level's cheapest verified QoS-meeting configuration (0: none)")
	f.IntVar(&verify, "verify", def.Verify, "seeds of their own a configuration must meet the QoS on to anchor the actors")
	f.StringVar(&qos, "qos", "", "the workflow's QoS in a window: mean or pNN (p99, p95: that percentile of the requests, refused ones counted over it), optionally with a latency, as in p99:3s, and the share to serve, as in p99:3s,served:99.5% (99%); without a latency, "+qosDefaults+" (default p99,served:99.5%)")
	f.Float64Var(&margin, "margin", def.Margin, "share in [0, 1) by which that verification tightens the QoS latency")
	f.BoolVar(&descend, "descend", def.Descend, "lower each level's verified configuration function by function, as the oracle searches, after the logged episodes and at the end")
	f.BoolVar(&hardwareOnly, "hardware-only", false, "tune CPU, memory and instances only, with no concurrency limit (the ablation of Fig. 11)")
	rec.register(f)
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if out == "" {
			return usagef("-o FILE is required (where to save the policy)")
		}
		if budget <= 0 || logged < 0 || offline < 0 || online < 0 {
			return usagef("--budget must be positive; --logged, --offline-updates and --online not negative")
		}
		if !(margin >= 0 && margin < 1) {
			return usagef("--margin must be in [0, 1), got %v", margin)
		}
		if seeds < 1 {
			return usagef("--seeds must be >= 1, got %d", seeds)
		}
		if verify < 1 {
			return usagef("--verify must be >= 1, got %d", verify)
		}
		if !(anchorWeight >= 0) {
			return usagef("--anchor-weight must be >= 0, got %v", anchorWeight)
		}
		if !(gamma >= 0 && gamma <= 1) {
			return usagef("--gamma must be in [0, 1], got %v", gamma)
		}
		v := rl.MADDPGVariant(variant)
		if !v.Valid() {
			return usagef("--variant must be attmf, mf, maddpg or ddpg, got %q", variant)
		}
		sc, err := scenario.Lookup(args[0])
		if err != nil {
			return err
		}
		start := time.Now()
		cfg := def
		if qos != "" {
			if cfg.Env.QoS, err = faasconf.ParseQoS(qos); err != nil {
				return usagef("--qos: %v", err)
			}
		}
		cfg.Seed, cfg.Logged, cfg.OfflineUpdates, cfg.Online, cfg.Learner.Variant, cfg.Learner.Gamma = seed, logged, offline, online, v, gamma
		cfg.Learner.AnchorWeight, cfg.Verify, cfg.Margin, cfg.Descend = anchorWeight, verify, margin, descend
		cfg.Deadline, cfg.Now = start.Add(budget), time.Now
		if hardwareOnly {
			cfg.Env.Space = faasconfenv.SpaceOf(sc).HardwareOnly()
		}
		if !quiet {
			cfg.Progress = func(e faasconfenv.Episode) {
				fmt.Fprintf(cl.stderr, "seed %d episode %3d level %.1f reward %6.3f  QoS met %2d/15  replaced %2d  best %.3f $/h  %d updates  %s\n",
					e.Seed, e.Index, e.Level, e.Reward, e.Met, e.Replaced, e.Best, e.Updates, time.Since(start).Round(time.Second))
			}
		}
		tr, err := faasconfenv.TrainBest(cmd.Context(), sc, cfg, seeds)
		if err != nil {
			return fmt.Errorf("train faasconf: %w", err)
		}
		tr.Policy.Provenance.WallSeconds = time.Since(start).Seconds()
		if err := modelfile.WriteFile(out, tr.Policy.Write); err != nil {
			return err
		}
		p := tr.Policy.Provenance
		fmt.Fprintf(cl.stdout, "trained faasconf (%s) on %s (seed %d, QoS %v): %d logged measurements, %d offline updates, %d online measurements, %d updates in %.0f s; wrote %s\n",
			v, sc.Name, p.Seed, tr.Policy.QoS, p.Logged, p.Offline, p.Online, p.Updates, p.WallSeconds, out)
		if p.Candidates > 1 {
			fmt.Fprintf(cl.stdout, "kept seed %d of %d: validation reward %.3f (the others': %.3f)\n", p.Seed, p.Candidates, p.Validation[0], p.Validation[1:])
		}
		return cl.recordTraining(cmd, &rec, start, sc, "faasconf", p.Seed, out, figures("logged", p.Logged, "offline_updates", p.Offline,
			"online", p.Online, "updates", p.Updates))
	})
	return cmd
}
