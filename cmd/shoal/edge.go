package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/control/edgesched"
	"github.com/shoal-project/shoal/control/policy"
	"github.com/shoal-project/shoal/edge"
	"github.com/shoal-project/shoal/envs/edgeenv"
	"github.com/spf13/cobra"
)

func (cl *cli) edgeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "edge log|evaluate",
		Short: "The simulated edge-cloud world: log it under an operator's engines, evaluate edge policies in it",
		Long: `The edge scheduling paper's world (Xiong et al.): a 16-core cloud, five 4-core
edge nodes and three scenes of devices (broadband, IoT, vehicles) whose tasks
run locally, on an edge node or in the cloud, drifting over a simulated month.

The pipeline: 'shoal edge log' writes an operator's history,
'shoal train edge-env' learns a virtual environment from it alone,
'shoal train edge-policy' trains MA-PPO (or BC) in it, and 'shoal edge
evaluate' runs the policy in the real world against today's heuristics.`,
		Example: `  shoal edge log -o logs
  shoal train edge-env logs/transitions.jsonl -o day0.env
  shoal train edge-policy day0.env -o mappo.policy
  shoal edge evaluate mappo.policy --day 30`,
		Args: exactArgs(0, "a subcommand: log or evaluate"),
	}
	cmd.AddCommand(cl.edgeLog(), cl.edgeEvaluate())
	return cmd
}

func (cl *cli) edgeLog() *cobra.Command {
	var (
		out          string
		days         []float64
		from, window time.Duration
		seed         uint64
		engine, rule string
		staleness    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "log -o DIR",
		Short: "Log the edge world under the engines an operator runs (the learners' only input)",
		Long: `Run the edge world, as an operator's platform runs it, for a window of each
given month day, and write every agent's transitions (observation, action,
next observation, outcome) to DIR/transitions.jsonl, the devices' records
to DIR/devices.jsonl and the records of one task in ` + strconv.Itoa(edgeenv.TaskEvery) + ` to DIR/tasks.jsonl
(what the platform saw when it chose the task's target: each allowed
target's estimate and jobs; what it chose; its upload and the time it took),
with what made them in DIR/logging.json.

--rule is what the scene agents' weights do: weighted-greedy (the default,
an operator's platform) runs each task where its estimated completion is
earliest, each target's estimate divided by its weight over the largest (at
least a tenth), so even weights are the greedy heuristic; weights (the
paper's) draws each task's target in proportion to them. The learners read
the rule from logging.json, and a policy runs under the rule of its logs.

--engine is a mix of logging engines, each running for stretches of 10-60
steps drawn by weight: greedy (weights by the inverse square of each
target's estimated time, with 10% random steps), threshold (on the device
while its backlog is under half the deadline, else the nearest edge node),
hold (random weights held 1-30 steps), random (the paper's random engine)
and even (equal weights and shares). The default is ` + edge.DefaultMix + `:
under weighted-greedy, mostly the greedy heuristic itself, with an operator's
held and random experiments. --engine random --rule weights logs the paper's
random engine in the paper's world.`,
		Example: `  shoal edge log -o logs                                    # day 0, all of it, the default mix
  shoal edge log -o week --days 0,1,2,3,4,5,6 --from 12h --window 1h
  shoal edge log -o paper --engine random --rule weights    # the paper's history
  shoal edge log -o stale --staleness 1s                    # a view of the queues 1 s old`,
		Args: exactArgs(0, "no arguments"),
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "the logs' `DIR` (required)")
	f.Float64SliceVar(&days, "days", []float64{0}, "month days to log (0-30)")
	f.DurationVar(&from, "from", 0, "when in each day the window starts")
	f.DurationVar(&window, "window", 24*time.Hour, "how long each day's window runs")
	f.Uint64Var(&seed, "seed", 1, "seed of the world and the random engine (a day's is seed + its index)")
	f.StringVar(&engine, "engine", edge.DefaultMix, "the logging engine, or a mix `NAME:WEIGHT,...` of greedy, threshold, hold, random and even")
	f.StringVar(&rule, "rule", edge.RuleName(edge.DefaultRule), "what the weights do: weighted-greedy or weights (the paper's)")
	f.DurationVar(&staleness, "staleness", 0, "how often the platform refreshes its view of the edge nodes' and the cloud's queues (0: always current)")
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if out == "" {
			return usagef("-o DIR is required (where to write the logs)")
		}
		if staleness < 0 {
			return usagef("--staleness must be 0 or more, got %v", staleness)
		}
		h, err := edge.ParseRule(rule)
		if err != nil {
			return usagef("--rule: %v", err)
		}
		var mix []edge.Stretch
		if engine != "random" {
			if mix, err = edge.ParseMix(engine); err != nil {
				return usagef("--engine: %v", err)
			}
		}
		if window < edge.Default().Step || from < 0 || from >= 24*time.Hour {
			return usagef("--window must be at least one step (%v) and --from in [0, 24h), got %v and %v", edge.Default().Step, window, from)
		}
		for _, d := range days {
			if d < 0 {
				return usagef("--days: %g is negative", d)
			}
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		tr, err := os.Create(filepath.Join(out, "transitions.jsonl"))
		if err != nil {
			return err
		}
		defer tr.Close()
		dev, err := os.Create(filepath.Join(out, "devices.jsonl"))
		if err != nil {
			return err
		}
		defer dev.Close()
		tasks, err := os.Create(filepath.Join(out, "tasks.jsonl"))
		if err != nil {
			return err
		}
		defer tasks.Close()
		cfg := edge.Default()
		cfg.Staleness = staleness
		if err := edgeenv.Log(cfg, edgeenv.Logging{Seed: seed, Days: days, From: from, Window: window, Engine: mix, Rule: h}, tr, dev, tasks); err != nil {
			return err
		}
		man, err := json.MarshalIndent(logManifest{Rule: edge.RuleName(h), Engine: engine, Seed: seed, Days: days, From: from.String(), Window: window.String(),
			Staleness: staleness.String()}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "logging.json"), append(man, '\n'), 0o644); err != nil {
			return err
		}
		if err := tr.Close(); err != nil {
			return err
		}
		if err := dev.Close(); err != nil {
			return err
		}
		if err := tasks.Close(); err != nil {
			return err
		}
		steps := int(window/edge.Default().Step) * len(days)
		fmt.Fprintf(cl.stdout, "logged %d steps of %d agents (days %v, %v from %v, seed %d, engine %s, rule %s, view %v stale) to %s/transitions.jsonl, devices.jsonl, tasks.jsonl and logging.json\n",
			steps, edge.Agents, days, window, from, seed, engine, rule, staleness, out)
		return nil
	})
	return cmd
}

func (cl *cli) edgeEvaluate() *cobra.Command {
	var (
		days         []float64
		hours        []float64
		window       time.Duration
		seed         uint64
		engine, rule string
		staleness    time.Duration
		load         float64
		softmin      []float64
		ceiling      int
	)
	cmd := &cobra.Command{
		Use:   "evaluate [POLICY...]",
		Short: "Run edge policies in the real world beside the random engine and today's heuristics",
		Long: `Run each trained policy (from 'shoal train edge-policy') in the edge world on
each month day given, in a window from each given hour, beside the random
engine and the greedy (earliest estimated completion) and threshold
offloading heuristics, and print each one's mean task completion time,
successful offloading ratio (offloaded and within the deadline), offloading
ratio and deadline misses.

Where the heuristics lose: --staleness gives the platform a view of the queues
refreshed only that often (as a metrics scrape is), so that every device reads
the same stale estimates (greedy-tracked, run then too, adds to that view the
tasks the platform sent since, as a central dispatcher knows them); --load
scales every scene's task rate; --softmin
also runs a rule that draws each task's target with a probability falling
exponentially with its estimate over the best one's, at each temperature
given (greedy is its limit at 0), which spreads the tasks greedy herds;
--ceiling N also trains a per-task rule by PPO in the real world (N hour-long
episodes on days 1-13, a network correcting softmin's scores) and runs it:
the ceiling of a learned per-task rule.

A POLICY is a registered edge policy's name ('shoal policies edge'):
mappo:FILE or mappo:file=FILE; a bare FILE is mappo:FILE.`,
		Example: `  shoal edge evaluate mappo.policy bc.policy --day 30
  shoal edge evaluate mappo:file=mappo.policy --hours 12 --window 2h
  shoal edge evaluate --staleness 2s --load 1.3 --softmin 0.1,0.3`,
	}
	f := cmd.Flags()
	f.Float64SliceVar(&days, "day", []float64{0}, "month days of the evaluation, e.g. 0,14")
	f.Float64SliceVar(&hours, "hours", []float64{0, 6, 12, 18}, "hours of the day the windows start")
	f.DurationVar(&window, "window", time.Hour, "length of each window")
	f.Uint64Var(&seed, "seed", 1000, "seed of the world")
	f.StringVar(&engine, "engine", edge.DefaultMix, "also run this logging engine or mix `NAME:WEIGHT,...` (as 'shoal edge log --engine'; random: none beyond the random engine)")
	f.StringVar(&rule, "rule", edge.RuleName(edge.DefaultRule), "the rule --engine's weights act through (each policy runs under its own)")
	f.DurationVar(&staleness, "staleness", 0, "how often the platform refreshes its view of the edge nodes' and the cloud's queues (0: always current)")
	f.Float64Var(&load, "load", 1, "every scene's task rate times this")
	f.Float64SliceVar(&softmin, "softmin", nil, "also run the softmin rule at these temperatures, e.g. 0.1,0.3")
	f.IntVar(&ceiling, "ceiling", 0, "also train a per-task rule by PPO in the real world for this many hour-long episodes, and run it (about 20 s an episode)")
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if len(days) == 0 || slices.Min(days) < 0 || window < edge.Default().Step || len(hours) == 0 {
			return usagef("--day must be given and >= 0, --window at least %v and --hours not empty", edge.Default().Step)
		}
		if staleness < 0 || !(load > 0) || math.IsInf(load, 0) {
			return usagef("--staleness must be 0 or more and --load positive, got %v and %g", staleness, load)
		}
		cfg := edge.Default()
		cfg.Staleness = staleness
		for g := range cfg.Groups {
			cfg.Groups[g].Rate *= load
		}
		h, err := edge.ParseRule(rule)
		if err != nil {
			return usagef("--rule: %v", err)
		}
		entries := []edgeenv.Contender{{Name: "random"}, {Name: "greedy", Heuristic: edge.Greedy}, {Name: "threshold", Heuristic: edge.Threshold}}
		if staleness > 0 {
			entries = append(entries, edgeenv.Contender{Name: "greedy-tracked", Heuristic: edge.Tracked})
		}
		if ceiling < 0 {
			return usagef("--ceiling must be 0 or more, got %d", ceiling)
		}
		if ceiling > 0 {
			tr := edgeenv.DefaultPerTaskTraining()
			tr.Episodes = ceiling
			p, err := edgeenv.TrainPerTask(cfg, tr)
			if err != nil {
				return err
			}
			entries = append(entries, edgeenv.Contender{Name: "per-task (PPO, real world)", Task: p})
		}
		for _, temp := range softmin {
			if !(temp > 0) || math.IsInf(temp, 0) {
				return usagef("--softmin: temperatures must be positive, got %g", temp)
			}
			entries = append(entries, edgeenv.Contender{Name: fmt.Sprintf("softmin %g", temp), Heuristic: edge.Softmin, Temperature: temp})
		}
		if engine != "random" {
			mix, err := edge.ParseMix(engine)
			if err != nil {
				return usagef("--engine: %v", err)
			}
			entries = append(entries, edgeenv.Contender{Name: "engines (" + edge.RuleName(h) + ")", Engine: mix, Heuristic: h})
		}
		for _, arg := range args {
			c, err := edgeContender(arg)
			if err != nil {
				return err
			}
			entries = append(entries, c)
		}
		for _, day := range days {
			fmt.Fprintf(cl.stdout, "day %g, %v from hours %v, seed %d, staleness %v, load %g\n%-28s %14s %18s %10s %8s\n", day, window, hours, seed, staleness, load, "policy", "mean time (s)", "on-time offloaded", "offloaded", "missed")
			for _, e := range entries {
				ev, err := edgeenv.EvaluateWindows(e, cfg, day, hours, window, seed)
				if err != nil {
					return err
				}
				all := ev.All
				fmt.Fprintf(cl.stdout, "%-28s %14.3f %18.3f %10.3f %8.3f\n", e.Name, all.MeanTime(), all.OnTimeOffloaded(), all.Offloaded(), all.MissRatio())
			}
		}
		return nil
	})
	return cmd
}

// edgeContender resolves an argument of 'shoal edge evaluate' through the
// policy registry to its trained file and reads it: mappo:FILE,
// mappo:file=FILE or a bare FILE (MA-PPO or BC), or task:FILE (a per-task
// rule). The heuristics run anyway, beside every policy given.
func edgeContender(arg string) (edgeenv.Contender, error) {
	s, err := policy.Parse(arg)
	path := arg // a bare file
	switch {
	case errors.Is(err, policy.ErrUnknown):
	case err != nil:
		return edgeenv.Contender{}, usagef("%v", err)
	case s.Kind() != policy.Edge:
		return edgeenv.Contender{}, usagef("%s is a %s policy, not an edge one (%s)", s.Name(), s.Kind(), strings.Join(policy.Names(policy.Edge), ", "))
	case s.File == "":
		return edgeenv.Contender{}, usagef("%s runs beside every policy already; name a trained one (mappo:FILE or task:FILE)", s.Name())
	default:
		path = s.File
	}
	if err == nil && s.Name() == "task" {
		r, err := readFile(path, func(in io.Reader) (*edgesched.TaskRule, error) {
			return edgesched.ReadTaskRule(in, rand.New(rand.NewPCG(1, 0x7461736b)))
		})
		if err != nil {
			return edgeenv.Contender{}, err
		}
		if r.Targets != edge.Targets || r.Scenes != edge.Scenes {
			return edgeenv.Contender{}, fmt.Errorf("%s: a rule of %d targets and %d scenes; the edge world has %d and %d", path, r.Targets, r.Scenes, edge.Targets, edge.Scenes)
		}
		return edgeenv.Contender{Name: fmt.Sprintf("%s (%s)", filepath.Base(path), r.Method), Task: edgeenv.RunPerTask(r)}, nil
	}
	p, err := readEdgePolicy(path)
	if err != nil {
		return edgeenv.Contender{}, err
	}
	return edgeenv.Contender{Name: fmt.Sprintf("%s (%s)", filepath.Base(path), p.Method), Policy: p, Heuristic: edge.Heuristic(p.Rule)}, nil
}

func readEdgePolicy(path string) (*edgesched.Policy, error) {
	p, err := readFile(path, edgesched.Read)
	if err != nil {
		return nil, err
	}
	if p.Agents != edge.Agents || p.ObsDim != edge.ObsDim || p.ActDim != edge.ActDim {
		return nil, fmt.Errorf("%s: a policy of %d agents, %d -> %d; the edge world has %d, %d -> %d", path, p.Agents, p.ObsDim, p.ActDim, edge.Agents, edge.ObsDim, edge.ActDim)
	}
	return p, nil
}

// logManifest is DIR/logging.json: what made a log.
type logManifest struct {
	Rule   string    `json:"rule"`
	Engine string    `json:"engine"`
	Seed   uint64    `json:"seed"`
	Days   []float64 `json:"days"`
	From   string    `json:"from"`
	Window string    `json:"window"`
	// Staleness is the age of the platform's view of the queues.
	Staleness string `json:"staleness,omitempty"`
}

// logRule reads the rule of the logs at path from the logging.json
// beside them; logs without one are the paper's ("weights").
func logRule(path string) (string, error) {
	m, err := readManifest(path)
	return m.Rule, err
}

// readManifest reads the logging.json beside the logs at path (logs
// without one are the paper's: the weights rule, a fresh view).
func readManifest(path string) (logManifest, error) {
	manifest := filepath.Join(filepath.Dir(path), "logging.json")
	b, err := os.ReadFile(manifest)
	if errors.Is(err, fs.ErrNotExist) {
		return logManifest{Rule: edge.RuleName("")}, nil
	}
	if err != nil {
		return logManifest{}, err
	}
	var m logManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return logManifest{}, fmt.Errorf("%s: %w", manifest, err)
	}
	if _, err := edge.ParseRule(m.Rule); err != nil {
		return logManifest{}, fmt.Errorf("%s: %w", manifest, err)
	}
	if m.Staleness != "" {
		if d, err := time.ParseDuration(m.Staleness); err != nil || d < 0 {
			return logManifest{}, fmt.Errorf("%s: staleness %q: want a duration of 0 or more", manifest, m.Staleness)
		}
	}
	return m, nil
}

func edgeLogPath(arg string) string {
	if st, err := os.Stat(arg); err == nil && st.IsDir() {
		return filepath.Join(arg, "transitions.jsonl")
	}
	return arg
}
