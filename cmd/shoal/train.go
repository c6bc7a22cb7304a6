package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/shoal-project/shoal/control/autothrottle"
	"github.com/shoal-project/shoal/control/coscal"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/control/firm"
	"github.com/shoal-project/shoal/control/jolteon"
	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/control/policy"
	"github.com/shoal-project/shoal/envs/lbenv"
	"github.com/shoal-project/shoal/experiment"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/store"
	"github.com/shoal-project/shoal/sweep"
	"github.com/spf13/cobra"
)

// learners are the algorithms 'shoal train' knows, with what each learns.
var learners = []struct{ name, short string }{
	{"distr-lb", "Distr-LB: one SAC+GRU agent per load balancer learns backend weights (the paper's method)"},
	{"centr-lb", "Centr-LB: one central SAC agent sets every balancer's weights (the paper's comparison)"},
	{"qmix-lb", "QMix-LB: value-decomposition agents with discretised weights (the paper's comparison)"},
	{"drpc", "DRPC: a TD3 teacher and per-deployment students scale replicas, CPU, memory and brownout"},
	{"firm", "FIRM-like: critical path, an SVM culprit and one DDPG action per period (DRPC's baseline)"},
	{"coscal", "CoScal-like: a Q-table over utilisation quarter and GRU-forecast trend scales every deployment (DRPC's baseline)"},
	{"autothrottle", "Autothrottle-like: per-service captains hold CPU throttle targets a contextual bandit sets (warmed up here)"},
	{"faasconf", "FaaSConf: attention mean-field MADDPG agents set each function's CPU, memory, instances and concurrency"},
	{"jolteon", "Jolteon-like: per-function stochastic performance models and a chance-constrained configuration (FaaSConf's 2024 comparison)"},
	{"multicloud", "Multi-cloud routing: per-service performance models (SVR and a neural network) for BO on route weights"},
	{"edge-env", "Edge scheduling: a virtual environment learned from the edge world's logs alone (MAIL-MMSG)"},
	{"edge-policy", "Edge scheduling: MA-PPO (or BC) trained only in a learned virtual environment"},
	{"edge-task", "Edge scheduling: a per-task rule trained by PPO in a grey-box environment learned from task logs (or BC)"},
}

func (cl *cli) train() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "train LEARNER SCENARIO -o FILE [flags]",
		Short: "Train a learned controller in the simulator and save the policy",
		Long: `Train a learned controller on a scenario in the simulator and save the policy
file, which 'shoal sim --policy LEARNER:FILE' and 'shoal proxy' load.`,
		Example: `  shoal train distr-lb lb-moderate-cpu -o distr.slb
  shoal train distr-lb --help`,
		RunE: cl.action(func(_ *cobra.Command, args []string) error {
			names := make([]string, len(learners))
			for i, l := range learners {
				names[i] = l.name
			}
			if len(args) == 0 {
				return usagef("want what to train (%s)", strings.Join(names, ", "))
			}
			return usagef("unknown learner %q (want %s)", args[0], strings.Join(names, ", "))
		}),
	}
	// Let an unknown learner's flags through to the error that names it.
	cmd.FParseErrWhitelist.UnknownFlags = true
	for _, l := range learners {
		switch l.name {
		case "drpc":
			cmd.AddCommand(cl.trainDRPC(l.short))
		case "firm":
			cmd.AddCommand(cl.trainFIRM(l.short))
		case "coscal":
			cmd.AddCommand(cl.trainCoScal(l.short))
		case "autothrottle":
			cmd.AddCommand(cl.trainAutothrottle(l.short))
		case "faasconf":
			cmd.AddCommand(cl.trainFaaSConf(l.short))
		case "jolteon":
			cmd.AddCommand(cl.trainJolteon(l.short))
		case "multicloud":
			cmd.AddCommand(cl.trainMultiCloud(l.short))
		case "edge-env":
			cmd.AddCommand(cl.trainEdgeEnv(l.short))
		case "edge-policy":
			cmd.AddCommand(cl.trainEdgePolicy(l.short))
		case "edge-task":
			cmd.AddCommand(cl.trainEdgeTask(l.short))
		default:
			cmd.AddCommand(cl.trainLB(lbenv.Algorithm(l.name), l.short))
		}
	}
	return cmd
}

func (cl *cli) trainLB(alg lbenv.Algorithm, short string) *cobra.Command {
	var (
		out, reward, estimate, curve string
		episodes, steps              int
		seed                         uint64
		noGRU, quiet                 bool
		load                         float64
		rec                          recording
		general                      generalFlags
	)
	cmd := &cobra.Command{
		Use:   string(alg) + " SCENARIO -o FILE",
		Short: short,
		Long: short + `.

Training runs episodes of the scenario in the simulator, after one with random
weights, and prints one line per episode (returns, mean and p99 response time).
The policy file records the scenario, reward, seed and training provenance.`,
		Example: fmt.Sprintf(`  shoal train %[1]s lb-moderate-cpu -o %[1]s.slb
  shoal train %[1]s lb-moderate-cpu -o %[1]s.slb --episodes 120 --load 0.95 --curve curve.csv
  shoal sim lb-moderate-cpu --policy sed,%[1]s:%[1]s.slb`, alg),
		Args:              exactArgs(1, "one scenario"),
		ValidArgsFunction: completeScenarios,
	}
	if alg == lbenv.DistrLB {
		cmd.Use = string(alg) + " SCENARIO -o FILE | --family default|FILE -o FILE"
		cmd.Long += `

With --family, it trains one general policy instead, for every cluster: a
small network shared by all servers and LB points corrects probing-sed's
weights from what each LB point sees (piggybacked and probed load, the time
at each server, its own response times). An evolution strategy trains it on
worlds drawn from the family (4-32 servers of 1-8 cores at speeds 0.3-1.5,
1-8 LB points, loads 0.5-0.98, requests of 1 ms to 2 s of CPU or CPU and I/O, drift, slowdowns,
bursts; the embedded lb-* scenarios are never drawn). It keeps the
generation that did best against probing-sed on validation worlds of its
own, so an untrained policy is probing-sed. Run it with
'shoal sim --policy distr-lb-general:FILE' or 'policy: distr-lb-general' in
'shoal proxy'.`
		cmd.Example += fmt.Sprintf(`
  shoal train %[1]s --family default -o general.slb --checkpoint general.ckpt
  shoal sim lb-drift --policy probing-sed,c3,distr-lb-general:general.slb`, alg)
		cmd.Args = func(c *cobra.Command, args []string) error {
			if general.family != "" {
				return exactArgs(0, "no scenario with --family")(c, args)
			}
			return exactArgs(1, "one scenario (or --family)")(c, args)
		}
		general.register(cmd.Flags())
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "where to save the policy `FILE` (required)")
	f.StringVar(&reward, "reward", "vbf", "reward: vbf, vbf+log, jain, pbf or makespan")
	f.IntVar(&episodes, "episodes", 0, "training episodes after the random one (default 60)")
	f.IntVar(&steps, "episode-steps", 0, "control periods per episode (default 200)")
	f.Uint64Var(&seed, "seed", 1, "training seed; training systems never reuse evaluation seeds")
	f.BoolVar(&noGRU, "no-gru", false, "plain SAC on the newest observation (ablation)")
	f.StringVar(&estimate, "estimate", "backlog", "what rewards measure per server: backlog, or duration (the paper's)")
	f.Float64Var(&load, "load", 0, "offered load as a fraction of capacity (default: the scenario's)")
	f.StringVar(&curve, "curve", "", "write the learning curve as CSV to `FILE`")
	f.BoolVar(&quiet, "quiet", false, "no per-episode progress")
	rec.register(cmd.Flags())
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if out == "" && general.validate == "" {
			return usagef("-o FILE is required (where to save the policy)")
		}
		if episodes < 0 || steps < 0 {
			return usagef("--episodes and --episode-steps must not be negative")
		}
		if general.validate != "" && general.family == "" {
			return usagef("--validate needs --family (whose validation worlds to run)")
		}
		if general.family != "" {
			return cl.trainGeneral(cmd, &general, out, seed, quiet, &rec)
		}
		sc, err := scenario.Lookup(args[0])
		if err != nil {
			return err
		}
		if load != 0 {
			if err := sc.SetLoad(load); err != nil {
				return fmt.Errorf("train --load: %w", err)
			}
		}
		start := time.Now()
		cfg := lbenv.TrainConfig{Algorithm: alg, Reward: lb.Reward(reward), Episodes: episodes,
			EpisodeSteps: steps, Seed: seed, NoGRU: noGRU, Estimate: lb.Estimate(estimate)}
		if !quiet {
			cfg.Progress = func(e lbenv.Episode) {
				el := time.Since(start).Seconds()
				fmt.Fprintf(cl.stderr, "episode %3d  return %s  mean %.3f s  p99 %.3f s  %d steps  %.1f steps/s\n",
					e.Index, fmtReturns(e.Returns), e.Mean, e.P99, e.EnvSteps, float64(e.EnvSteps)/el)
			}
		}
		tr, err := lbenv.Train(cmd.Context(), sc, cfg)
		if err != nil {
			return fmt.Errorf("train %s: %w", alg, err)
		}
		wall := time.Since(start).Seconds()
		tr.Policy.Provenance.WallSeconds = wall
		tr.Policy.Provenance.StepsPerSecond = float64(tr.EnvSteps) / wall
		if err := modelfile.WriteFile(out, tr.Policy.Write); err != nil {
			return err
		}
		if curve != "" {
			if err := modelfile.WriteFile(curve, func(w io.Writer) error { return experiment.WriteCurve(w, tr.Curve) }); err != nil {
				return err
			}
		}
		fmt.Fprintf(cl.stdout, "trained %s on %s (reward %s, seed %d): %d episodes, %d environment steps in %.1f s (%.1f steps/s); wrote %s\n",
			alg, sc.Name, tr.Policy.Provenance.Reward, seed, len(tr.Curve), tr.EnvSteps, wall, tr.Policy.Provenance.StepsPerSecond, out)
		return cl.recordTraining(cmd, &rec, start, sc, string(alg), seed, out, sweep.TrainSummary(tr))
	})
	return cmd
}

// recordTraining records a training run: the learner, the scenario it
// trained on, the policy file it wrote and the figures it reports.
func (cl *cli) recordTraining(cmd *cobra.Command, rec *recording, start time.Time, sc *scenario.Scenario, learner string, seed uint64, file string, summary map[string]store.Stat) error {
	if rec.off {
		return nil
	}
	run, err := rec.template(cmd, store.KindTrain, start, sc)
	if err != nil {
		return err
	}
	run.Scenario, run.Load = sc.Name, sc.Load
	return cl.saveTraining(cmd, rec, run, learner, seed, file, summary)
}

// recordTrainingOn records a training run whose input is a file (the edge
// learners' logs and environments), named and hashed as its scenario.
func (cl *cli) recordTrainingOn(cmd *cobra.Command, rec *recording, start time.Time, input, learner string, seed uint64, file string, summary map[string]store.Stat) error {
	if rec.off {
		return nil
	}
	run, err := rec.template(cmd, store.KindTrain, start, nil)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(input)
	if err != nil {
		return err
	}
	run.Scenario, run.ScenarioHash = filepath.Base(input), store.Hash(b)
	return cl.saveTraining(cmd, rec, run, learner, seed, file, summary)
}

// saveTraining completes run with the learner, its seed, the policy file
// and the figures, and records it.
func (cl *cli) saveTraining(cmd *cobra.Command, rec *recording, run store.Run, learner string, seed uint64, file string, summary map[string]store.Stat) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	run.Policy, run.PolicyHash, run.RootSeed, run.Seeds, run.Summary = learner, store.Hash(b), seed, 1, summary
	rec.save(cmd.Context(), cl, []*store.Run{&run})
	return nil
}

// figures are a training's reported numbers as statistics (no interval).
func figures(kv ...any) map[string]store.Stat {
	m := map[string]store.Stat{}
	for i := 0; i+1 < len(kv); i += 2 {
		var x float64
		switch v := reflect.ValueOf(kv[i+1]); {
		case v.CanInt():
			x = float64(v.Int())
		case v.CanUint():
			x = float64(v.Uint())
		case v.CanFloat():
			x = v.Float()
		default:
			panic(fmt.Sprintf("figures: %s is a %T", kv[i], kv[i+1]))
		}
		m[kv[i].(string)] = store.Stat{Mean: x, CI95: math.NaN()}
	}
	return m
}

func fmtReturns(r []float64) string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = fmt.Sprintf("%9.2f", v)
	}
	return strings.Join(parts, " ")
}

// policyFile is the kind and file of a learned policy in --policy
// (KIND:FILE, KIND:file=FILE); ok is false for a policy without a file,
// and for a name that does not parse, which the comparison then reports.
func policyFile(name string) (kind, file string, ok bool) {
	s, err := policy.Parse(name)
	if err != nil || s.File == "" {
		return "", "", false
	}
	return s.Name(), s.File, true
}

// learnedPolicies resolves the KIND:FILE entries of --policy to learned
// policies, keyed by their name in the results (KIND, or the whole entry
// when KIND appears twice), and returns the policy list with those names.
func learnedPolicies(specs []string, sc *scenario.Scenario, fit fitting) ([]string, map[string]experiment.Learned, error) {
	kinds := map[string]int{}
	for _, s := range specs {
		if k, _, ok := policyFile(s); ok {
			kinds[k]++
		} else {
			kinds[s]++ // a plain name counts too: distr-lb-general beside distr-lb-general:FILE
		}
	}
	names := make([]string, len(specs))
	learned := map[string]experiment.Learned{}
	for i, s := range specs {
		kind, file, ok := policyFile(s)
		if !ok {
			names[i] = s
			continue
		}
		spec, _ := policy.Parse(s) // policyFile parsed it
		l, err := readLearned(kind, file, spec.Params(), sc, fit)
		if err != nil {
			return nil, nil, fmt.Errorf("--policy %s: %w", s, err)
		}
		names[i] = spec.String() // the kind and its settings
		if kinds[kind] > 1 {
			names[i] = s
		}
		learned[names[i]] = l
	}
	return names, learned, nil
}

// hybridKind runs a Distr-LB policy file over the probing data plane.
const hybridKind = "distr-lb+probing"

// generalKind runs a general Distr-LB policy file (train distr-lb --family);
// without a file, the name runs the policy Shoal ships.
const generalKind = lb.GeneralName

// fitting says what to do with a learned policy that does not fit its
// scenario: refuse it, or drop what does not fit and say what was
// dropped on warn.
type fitting struct {
	drop bool
	warn io.Writer
	// route are the options of multicloud routes.
	route multicloud.Options
}

// readLearned reads the policy file of a KIND:FILE entry of --policy,
// with the entry's settings.
func readLearned(kind, path string, params map[string]float64, sc *scenario.Scenario, fit fitting) (experiment.Learned, error) {
	f, err := os.Open(path)
	if err != nil {
		return experiment.Learned{}, err
	}
	defer f.Close()
	switch kind {
	case "drpc":
		p, err := drpc.ReadPolicy(f)
		if err != nil {
			return experiment.Learned{}, fmt.Errorf("%s: %w", path, err)
		}
		dropped, err := p.Fit(experiment.DRPCWorld(sc), fit.drop)
		if err != nil {
			return experiment.Learned{}, fmt.Errorf("%s on %s: %w (--drop-mismatch runs it without what does not fit)", path, sc.Name, err)
		}
		for _, m := range dropped {
			fmt.Fprintf(fit.warn, "shoal: %s on %s: %v\n", path, sc.Name, m)
		}
		return experiment.DRPCPolicy(p, sc), nil
	case "firm":
		p, err := firm.ReadPolicy(f)
		if err != nil {
			return experiment.Learned{}, fmt.Errorf("%s: %w", path, err)
		}
		return experiment.FIRMPolicy(p, sc), nil
	case "coscal":
		p, err := coscal.ReadPolicy(f)
		if err != nil {
			return experiment.Learned{}, fmt.Errorf("%s: %w", path, err)
		}
		return experiment.CoScalPolicy(p, sc), nil
	case "autothrottle":
		p, err := autothrottle.ReadPolicy(f)
		if err != nil {
			return experiment.Learned{}, fmt.Errorf("%s: %w", path, err)
		}
		return experiment.AutothrottlePolicy(p, params["slo"], params["explore"]), nil
	case "multicloud", "multicloud-nn", "multicloud-svr":
		p, err := multicloud.ReadPolicy(f)
		if err != nil {
			return experiment.Learned{}, fmt.Errorf("%s: %w", path, err)
		}
		opt := fit.route
		if v, ok := params["steps"]; ok {
			opt.Steps = int(v)
		}
		if v, ok := params["egress"]; ok {
			opt.EgressPrice = v
		}
		if v, ok := params["trigger"]; ok {
			opt.Trigger = v
		}
		if v, ok := params["uncertainty"]; ok {
			opt.Uncertainty = v
		}
		l, err := experiment.MultiCloudPolicy(p, multicloud.LearnedRoutes[kind], opt)
		if err != nil {
			return experiment.Learned{}, fmt.Errorf("%s: %w", path, err)
		}
		return l, nil
	case generalKind:
		p, err := lb.ReadGeneralPolicy(f)
		if err != nil {
			return experiment.Learned{}, fmt.Errorf("%s: %w", path, err)
		}
		return experiment.LBGeneral(p), nil
	case "jolteon":
		p, err := jolteon.ReadPolicy(f)
		if err != nil {
			return experiment.Learned{}, fmt.Errorf("%s: %w", path, err)
		}
		return experiment.JolteonPolicy(p), nil
	case "faasconf":
		p, err := faasconf.ReadPolicy(f)
		if err != nil {
			return experiment.Learned{}, fmt.Errorf("%s: %w", path, err)
		}
		if x := params["qos"]; x > 0 {
			p.QoS.Latency = time.Duration(float64(p.QoS.Latency) * x)
		}
		return experiment.FaaSConfPolicy(p, faasconf.Options{}), nil
	}
	p, err := lb.ReadPolicy(f)
	if err != nil {
		return experiment.Learned{}, fmt.Errorf("%s: %w", path, err)
	}
	if kind == hybridKind {
		if p.Algorithm != "distr-lb" {
			return experiment.Learned{}, fmt.Errorf("the file holds a %s policy; %s runs a distr-lb one", p.Algorithm, kind)
		}
		return experiment.LBHybrid(p), nil
	}
	if p.Algorithm != kind {
		return experiment.Learned{}, fmt.Errorf("the file holds a %s policy, not %s", p.Algorithm, kind)
	}
	return experiment.LBPolicy(p), nil
}
