package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/shoal-project/shoal/experiment"
	"github.com/shoal-project/shoal/scenario"
	"github.com/spf13/cobra"
)

// faasWorkflows are the FaaSConf paper's four workflows.
var faasWorkflows = []string{"faas-sequential", "faas-parallel", "faas-branch", "faas-ticket-search"}

func (cl *cli) experimentFaaSConf(rec *experimentRecorder) *cobra.Command {
	var (
		out                     string
		seeds, iterations, warm int
		firstSeed               uint64
		windows                 int
		budget                  time.Duration
		trainSeed               uint64
		quiet                   bool
		workflows               []string
	)
	cmd := &cobra.Command{
		Use:   "faasconf effectiveness|adaptability|ablation|validation|all",
		Short: "FaaSConf paper: effectiveness, adaptability and ablations",
		Long: `Train FaaSConf on each serverless workflow as 'shoal train faasconf' does with
its defaults (or reuse DIR/policies), then let it
and the other methods tune every workflow for --iterations rounds at each of
five workload levels, --seeds sessions each, on the same measurement seeds, as
the FaaSConf paper's Fig. 8 does: the price per hour of the cheapest
configuration meeting the QoS each found (and of the cheapest that meets it
again on the oracle's three seeds: verified), with 95% intervals over the
sessions, and how many found one.

effectiveness (Fig. 8): faasconf against the paper's four baselines in the
  hardware-only space (firm, rambo, aquatope, random) and the Jolteon-like
  configurator (jolteon, NSDI '24) in the same space, the Aquatope-like and
  random searches given the hybrid space too, and the exhaustive oracle
  (searched once per workflow, kept in DIR/policies/oracle-WORKFLOW.json).
adaptability (Figs. 9-10, Parallel): faasconf, firm, rambo, aquatope, jolteon
  and the oracle configure the workflow every 30 s window of an 85-minute dynamic
  workload (--windows) with the Azure Functions trace's shape, learning
  online: QoS violations, latency and price, and the low, middle and high
  windows.
ablation (Figs. 11-14, the ML workflows): faasconf with the mean-field,
  plain MADDPG and independent DDPG critics, in the hardware-only space,
  without the safe exploration, and the FIRM-like tuner in both spaces.
validation: faasconf and its trained actors alone (faasconf-actors: no safe
  exploration, no noise, no fine-tuning) on sessions of their own (seeds
  from --first-seed, default 1001 here), where training settings are chosen:
  the rounds that met the QoS.
all: effectiveness, adaptability and ablation.

Writes DIR/effectiveness/effectiveness.csv, .json and the report .html, the
same in DIR/ablation/, and DIR/adaptability/adaptability.json, .html and
adaptability-windows.csv.`,
		Example: `  shoal experiment faasconf effectiveness
  shoal experiment faasconf ablation --workflows faas-sequential --seeds 3`,
		Args:      exactArgs(1, "effectiveness, adaptability, ablation, validation or all"),
		ValidArgs: []string{"effectiveness", "adaptability", "ablation", "validation", "all"},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "out/faasconf", "results `DIR`; policies in DIR/policies are reused")
	f.IntVar(&seeds, "seeds", 5, "tuning sessions per workflow, level and method")
	f.Uint64Var(&firstSeed, "first-seed", 0, "the first session's measurement seed (default 1, validation 1001)")
	f.IntVar(&iterations, "iterations", 15, "rounds per session (the paper's 15)")
	f.IntVar(&warm, "warm", 20, "random measurements at the level the Bayesian optimisations are warmed up with")
	f.DurationVar(&budget, "budget", 12*time.Minute, "a cap on each policy's training wall time")
	f.Uint64Var(&trainSeed, "train-seed", 1, "training seed")
	f.BoolVar(&quiet, "quiet", false, "no progress lines")
	f.IntVar(&windows, "windows", 170, "30 s windows of the adaptability study's dynamic workload (170: 85 minutes)")
	f.StringSliceVar(&workflows, "workflows", nil, "the workflows (scenarios) to tune (default: all four; the ablation the ML workflows, the adaptability Parallel)")
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		var studies []string
		switch args[0] {
		case "effectiveness", "adaptability", "ablation", "validation":
			studies = []string{args[0]}
		case "all":
			studies = []string{"effectiveness", "adaptability", "ablation"}
		default:
			return usagef("unknown faasconf experiment %q (known: effectiveness, adaptability, ablation, validation, all)", args[0])
		}
		if seeds <= 0 || iterations <= 0 || windows <= 0 || warm < 0 || budget <= 0 {
			return usagef("--seeds, --iterations, --windows and --budget must be positive, --warm not negative")
		}
		for _, w := range workflows {
			if !slices.Contains(faasWorkflows, w) {
				return usagef("--workflows: %q is none of %s", w, strings.Join(faasWorkflows, ", "))
			}
		}
		for _, name := range studies {
			s := experiment.FaaSConfStudy{Name: name, Scenarios: workflows, Seeds: seeds, Iterations: iterations, Warm: warm, TrainSeed: trainSeed,
				Budget: budget, Dir: filepath.Join(out, name), PolicyDir: filepath.Join(out, "policies"), Now: time.Now}
			if !quiet {
				s.Log = cl.stderr
			}
			s.FirstSeed = firstSeed
			if s.FirstSeed == 0 {
				s.FirstSeed = 1
				if name == "validation" {
					s.FirstSeed = 1001
				}
			}
			// Sessions use seeds FirstSeed on, so each row's root seed is FirstSeed.
			var rows []experiment.StudyRow
			switch name {
			case "effectiveness", "ablation", "validation":
				switch name {
				case "effectiveness":
					s.Methods, s.Oracle, s.Scenarios = experiment.FaaSEffectiveness, true, or(s.Scenarios, faasWorkflows)
				case "ablation":
					s.Methods, s.Scenarios = experiment.FaaSAblation, or(s.Scenarios, faasWorkflows[:3])
				default:
					s.Methods, s.Scenarios = experiment.FaaSValidation, or(s.Scenarios, faasWorkflows)
				}
				cells, err := s.Run(cmd.Context(), cl.stdout)
				if err != nil {
					return err
				}
				for _, c := range cells {
					rows = append(rows, experiment.StudyRow{Scenario: c.Scenario, Policy: c.Tuner, Load: c.Level, RootSeed: s.FirstSeed, Seeds: c.Sessions, Row: c})
				}
			case "adaptability":
				s.Scenarios = or(s.Scenarios, []string{"faas-parallel"})[:1]
				adapt, err := s.Adapt(cmd.Context(), cl.stdout, windows)
				if err != nil {
					return err
				}
				for _, r := range adapt {
					rows = append(rows, experiment.StudyRow{Scenario: s.Scenarios[0], Policy: r.Method, RootSeed: 1, Seeds: seeds, Row: r})
				}
			}
			if err := recordFaaSRows(rec, rows); err != nil {
				return err
			}
			fmt.Fprintf(cl.stdout, "wrote %s (training seed %d)\n", s.Dir, trainSeed)
		}
		return nil
	})
	return cmd
}

// recordFaaSRows records a FaaSConf study's rows, each workflow's with
// its scenario's hash.
func recordFaaSRows(rec *experimentRecorder, rows []experiment.StudyRow) error {
	for len(rows) > 0 {
		n := 1
		for n < len(rows) && rows[n].Scenario == rows[0].Scenario {
			n++
		}
		sc, err := scenario.Lookup(rows[0].Scenario)
		if err != nil {
			return err
		}
		hash, err := experiment.ScenarioHash(sc)
		rec.study(hash, err, rows[:n])
		rows = rows[n:]
	}
	return nil
}

// or is xs, or def when xs is empty.
func or(xs, def []string) []string {
	if len(xs) == 0 {
		return def
	}
	return xs
}
