package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/shoal-project/shoal/control/edgesched"
	"github.com/shoal-project/shoal/edge"
	"github.com/shoal-project/shoal/envs/edgeenv"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/venv"
	"github.com/spf13/cobra"
)

func (cl *cli) trainEdgeEnv(short string) *cobra.Command {
	var (
		out string
		rec recording
	)
	cfg := venv.DefaultConfig()
	cfg.Models = edgeenv.OperatorModels
	cmd := &cobra.Command{
		Use:   "edge-env LOGS -o ENV",
		Short: short,
		Long: short + `.

LOGS is a transitions file from 'shoal edge log' (or its directory). A
transition model of the joint step (every agent's observation and action to
every agent's next observation and outcome) is fitted by maximum likelihood,
then trained adversarially against a GAIL discriminator (4-layer) on
rollouts under the logged actions, kept near the log by its likelihood
(MAIL-MMSG, section 3.4). --models of them, each from its own seed, make an
ensemble: they agree where the logs hold a state and action and disagree
where they do not, which 'train edge-policy --penalty' charges (MOPO); the
paper's is --models 1. ENV holds the models, the logged steps, which 'shoal
train edge-policy' starts its episodes from, and the rule of the logs (from
their logging.json).`,
		Example: `  shoal edge log -o logs
  shoal train edge-env logs -o day0.env`,
		Args: exactArgs(1, "the logs (a transitions file or its directory)"),
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "where to save the environment `FILE` (required)")
	f.IntVar(&cfg.MLEEpochs, "epochs", cfg.MLEEpochs, "maximum-likelihood epochs")
	f.IntVar(&cfg.Adversarial, "adversarial", cfg.Adversarial, "adversarial updates (0: none)")
	f.IntVar(&cfg.Horizon, "horizon", cfg.Horizon, "rollout length of the adversarial updates")
	f.IntVar(&cfg.Hidden, "hidden", cfg.Hidden, "units of the models' two hidden layers")
	f.IntVar(&cfg.Models, "models", cfg.Models, "models in the ensemble, each from its own seed (their disagreement is what --penalty charges)")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "training seed")
	rec.register(f)
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if out == "" {
			return usagef("-o ENV is required (where to save the environment)")
		}
		if cfg.MLEEpochs < 1 || cfg.Adversarial < 0 || cfg.Horizon < 1 || cfg.Hidden < 1 || cfg.Models < 1 || cfg.Models > 64 {
			return usagef("--epochs, --horizon and --hidden must be positive, --adversarial >= 0 and --models 1-64")
		}
		path := edgeLogPath(args[0])
		log, err := readFile(path, edge.ReadLog)
		if err != nil {
			return err
		}
		rule, err := logRule(path)
		if err != nil {
			return err
		}
		start := time.Now()
		v, err := edgeenv.Learn(log, cfg)
		if err != nil {
			return err
		}
		prov := edgeenv.EnvProvenance{Logs: path, Rule: rule, Config: cfg, WallSeconds: time.Since(start).Seconds()}
		if err := modelfile.WriteFile(out, func(w io.Writer) error { return v.Write(w, prov) }); err != nil {
			return err
		}
		fmt.Fprintf(cl.stdout, "learned a virtual environment of %d models from %d steps of %s (rule %s, seed %d) in %s; wrote %s\n",
			cfg.Models, len(v.States), path, rule, cfg.Seed, time.Since(start).Round(time.Second), out)
		return cl.recordTrainingOn(cmd, &rec, start, path, "edge-env", cfg.Seed, out,
			figures("logged_steps", len(v.States), "epochs", cfg.MLEEpochs, "adversarial", cfg.Adversarial, "wall_seconds", prov.WallSeconds))
	})
	return cmd
}

func (cl *cli) trainEdgePolicy(short string) *cobra.Command {
	var (
		out, method string
		mc          = edgeenv.OperatorMAPPO()
		rec         recording
	)
	cmd := &cobra.Command{
		Use:   "edge-policy ENV -o FILE",
		Short: short,
		Long: short + `.

ENV is a virtual environment from 'shoal train edge-env'; the real world is
never touched. --method mappo (the default) trains one PPO per agent in it,
the agents acting together (actor 2x32 ReLU, gamma 0.95, section 4.1),
minimising --anchor times Eq. 8 (the squared distance to the logged actions
on logged states plus lambda = 0.4 times the actions' squared magnitude)
beside PPO's loss, every step's reward less --penalty times the ensemble's
disagreement on it (MOPO). The defaults are the operator's pipeline, chosen
on validation windows; the paper's is --anchor 1 --penalty 0 (with an
environment of one model). --method bc clones the logged actions (Eq. 7).
The policy records the rule of its logs, and 'shoal edge evaluate FILE'
runs it under that rule in the world.`,
		Example: `  shoal train edge-policy day0.env -o mappo.policy
  shoal train edge-policy day0.env --method bc -o bc.policy`,
		Args: exactArgs(1, "the virtual environment file"),
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "where to save the policy `FILE` (required)")
	f.StringVar(&method, "method", "mappo", "mappo (PPO per agent in the virtual environment) or bc (behaviour cloning)")
	f.IntVar(&mc.Steps, "steps", mc.Steps, "environment steps per agent (mappo)")
	f.IntVar(&mc.Horizon, "horizon", mc.Horizon, "episode length in steps (mappo)")
	f.Float64Var(&mc.Anchor, "anchor", mc.Anchor, "weight of Eq. 8, the pull toward the logged actions (mappo; 1 the paper's, 0 none)")
	f.Float64Var(&mc.Penalty, "penalty", mc.Penalty, "reward charged per unit of the models' disagreement (mappo; MOPO's lambda, 0 none)")
	f.Uint64Var(&mc.Seed, "seed", mc.Seed, "training seed")
	rec.register(f)
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if out == "" {
			return usagef("-o FILE is required (where to save the policy)")
		}
		if method != "mappo" && method != "bc" {
			return usagef("--method must be mappo or bc, got %q", method)
		}
		if mc.Steps < 1 || mc.Horizon < 1 {
			return usagef("--steps and --horizon must be positive, got %d and %d", mc.Steps, mc.Horizon)
		}
		if !(mc.Anchor >= 0) || !(mc.Penalty >= 0) {
			return usagef("--anchor and --penalty must be >= 0, got %g and %g", mc.Anchor, mc.Penalty)
		}
		fh, err := os.Open(args[0])
		if err != nil {
			return err
		}
		v, envProv, err := edgeenv.ReadVirtual(fh)
		fh.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		start := time.Now()
		var p *edgesched.Policy
		if method == "bc" {
			p, err = edgeenv.TrainBC(v.Steps, mc.Seed)
		} else {
			p, err = edgeenv.TrainMAPPO(v, mc)
		}
		if err != nil {
			return err
		}
		p.Provenance.Source = args[0]
		if h, _ := edge.ParseRule(envProv.Rule); h != "" {
			p.Rule = string(h)
		}
		if err := modelfile.WriteFile(out, p.Write); err != nil {
			return err
		}
		fmt.Fprintf(cl.stdout, "trained %s in %s (seed %d) in %s; wrote %s\n", method, args[0], mc.Seed, time.Since(start).Round(time.Second), out)
		fig := figures("steps", mc.Steps, "horizon", mc.Horizon, "anchor", mc.Anchor, "penalty", mc.Penalty, "wall_seconds", time.Since(start).Seconds())
		if method == "bc" {
			fig = figures("logged_steps", len(v.States), "wall_seconds", time.Since(start).Seconds())
		}
		return cl.recordTrainingOn(cmd, &rec, start, args[0], method, mc.Seed, out, fig)
	})
	return cmd
}

func (cl *cli) trainEdgeTask(short string) *cobra.Command {
	var (
		out, method string
		tr          = edgeenv.DefaultPerTaskTraining()
		gc          = edgeenv.DefaultGreyBox()
		epochs      = 5
		rec         recording
	)
	cmd := &cobra.Command{
		Use:   "edge-task LOGS -o FILE",
		Short: short,
		Long: short + `.

LOGS is the task records from 'shoal edge log' (tasks.jsonl, or its
directory); the real world is never touched. --method greybox (the default)
learns a grey-box environment from them: the world's structure is given
(sites, links' latencies, queues, processor sharing, deadlines, and the view
of the queues the logs' logging.json names), and each scene's arrival rate
and mean work by hour of day, its sizes, preferences, devices and device
speed, and each link's bandwidth by hour are fitted; --members bootstrap
fits make an ensemble, and each episode runs in the next member. A per-task
rule is then trained in it by PPO: a network scores each target a task may
run at from its estimate, the jobs and uploads seen there, which target it
is, the task and its device's backlog; the score corrects softmin's at
temperature 0.05, and the target is drawn from their softmax. Each task's
reward is −(time / deadline), less 1 if it missed. --method bc clones the
logged choices instead. 'shoal edge evaluate task:FILE' runs the rule.`,
		Example: `  shoal edge log -o logs
  shoal train edge-task logs -o greybox.task
  shoal edge evaluate task:greybox.task --day 0,7,30`,
		Args: exactArgs(1, "the task records (a tasks.jsonl file or its directory)"),
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "where to save the rule `FILE` (required)")
	f.StringVar(&method, "method", "greybox", "greybox (PPO in a grey-box environment learned from the records) or bc (behaviour cloning)")
	f.IntVar(&tr.Episodes, "episodes", tr.Episodes, "hour-long episodes of PPO (greybox)")
	f.IntVar(&gc.Members, "members", gc.Members, "bootstrap fits in the grey box's ensemble (greybox)")
	f.IntVar(&epochs, "epochs", epochs, "passes over the logged choices (bc)")
	f.Uint64Var(&tr.Seed, "seed", tr.Seed, "training seed")
	rec.register(f)
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if out == "" {
			return usagef("-o FILE is required (where to save the rule)")
		}
		if method != "greybox" && method != "bc" {
			return usagef("--method must be greybox or bc, got %q", method)
		}
		if tr.Episodes < 1 || gc.Members < 1 || epochs < 1 {
			return usagef("--episodes, --members and --epochs must be positive, got %d, %d and %d", tr.Episodes, gc.Members, epochs)
		}
		path := args[0]
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			path = filepath.Join(path, "tasks.jsonl")
		}
		recs, err := readFile(path, edge.ReadTasks)
		if err != nil {
			return err
		}
		m, err := readManifest(path)
		if err != nil {
			return err
		}
		cfg := edge.Default()
		if m.Staleness != "" {
			cfg.Staleness, _ = time.ParseDuration(m.Staleness) // checked by readManifest
		}
		start := time.Now()
		var p *edgeenv.PerTask
		if method == "bc" {
			p, err = edgeenv.CloneTasks(recs, epochs, tr.Seed)
		} else {
			gc.Seed = tr.Seed
			var g *edgeenv.GreyBox
			if g, err = edgeenv.LearnGreyBox(cfg, recs, gc); err == nil {
				first, last := dayRange(recs)
				tr.FirstDay, tr.LastDay = first, last
				p, err = edgeenv.TrainPerTaskGreyBox(g, tr, nil)
			}
		}
		if err != nil {
			return err
		}
		p.Rule.Provenance = edgesched.Provenance{Seed: tr.Seed, Source: path, WallSeconds: time.Since(start).Seconds()}
		if method == "greybox" {
			p.Rule.Provenance.Episodes = tr.Episodes
		}
		if err := modelfile.WriteFile(out, p.Rule.Write); err != nil {
			return err
		}
		fmt.Fprintf(cl.stdout, "trained a per-task rule (%s) from %d task records of %s (view %v stale, seed %d) in %s; wrote %s\n",
			p.Rule.Method, len(recs), path, cfg.Staleness, tr.Seed, time.Since(start).Round(time.Second), out)
		return cl.recordTrainingOn(cmd, &rec, start, path, p.Rule.Method, tr.Seed, out,
			figures("records", len(recs), "episodes", tr.Episodes, "wall_seconds", time.Since(start).Seconds()))
	})
	return cmd
}

// dayRange is the first and last whole month day of the records.
func dayRange(recs []edge.TaskRecord) (first, last float64) {
	first, last = math.Inf(1), math.Inf(-1)
	for _, r := range recs {
		first, last = min(first, math.Floor(r.Day)), max(last, math.Floor(r.Day))
	}
	return first, last
}
