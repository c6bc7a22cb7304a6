package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/shoal-project/shoal/experiment"
	"github.com/spf13/cobra"
)

// faasWorkflows are the FaaSConf paper's four workflows.
var faasWorkflows = []string{"faas-sequential", "faas-parallel", "faas-branch", "faas-ticket-search"}

func (cl *cli) experimentFaaSConf() *cobra.Command {
	var (
		out                     string
		seeds, iterations, warm int
		budget                  time.Duration
		trainSeed               uint64
		quiet                   bool
		workflows               []string
	)
	cmd := &cobra.Command{
		Use:   "faasconf effectiveness",
		Short: "FaaSConf paper: effectiveness",
		Long: `Train FaaSConf on each serverless workflow (or reuse DIR/policies), then let it,
random search and an Aquatope-like Bayesian optimisation tune every workflow
for --iterations rounds at each of five workload levels, --seeds sessions each,
on the same measurement seeds, as the FaaSConf paper's Fig. 8 does: the price
per hour of the cheapest configuration meeting the QoS each found, with 95%
intervals over the sessions, and how many found one. Writes
DIR/effectiveness/effectiveness.csv and .json. The paper's adaptability and
ablation studies, the RAMBO-like and FIRM-like methods and the exhaustive
oracle are not built yet.`,
		Example: `  shoal experiment faasconf effectiveness
  shoal experiment faasconf effectiveness --workflows faas-sequential --seeds 3`,
		Args:      exactArgs(1, "effectiveness"),
		ValidArgs: []string{"effectiveness"},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "out/faasconf", "results `DIR`; policies in DIR/policies are reused")
	f.IntVar(&seeds, "seeds", 5, "tuning sessions per workflow, level and method")
	f.IntVar(&iterations, "iterations", 15, "rounds per session (the paper's 15)")
	f.IntVar(&warm, "warm", 20, "random measurements at the level the Bayesian optimisation is warmed up with")
	f.DurationVar(&budget, "budget", 12*time.Minute, "a cap on each workflow's training wall time")
	f.Uint64Var(&trainSeed, "train-seed", 1, "training seed")
	f.BoolVar(&quiet, "quiet", false, "no progress lines")
	f.StringSliceVar(&workflows, "workflows", faasWorkflows, "the workflows (scenarios) to tune")
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if args[0] != "effectiveness" {
			return usagef("unknown faasconf experiment %q (known: effectiveness)", args[0])
		}
		if seeds <= 0 || iterations <= 0 || warm < 0 || budget <= 0 {
			return usagef("--seeds, --iterations and --budget must be positive, --warm not negative")
		}
		for _, w := range workflows {
			if !slices.Contains(faasWorkflows, w) {
				return usagef("--workflows: %q is none of %s", w, strings.Join(faasWorkflows, ", "))
			}
		}
		s := experiment.FaaSConfStudy{Scenarios: workflows, Seeds: seeds, Iterations: iterations, Warm: warm, TrainSeed: trainSeed,
			Budget: budget, Dir: filepath.Join(out, "effectiveness"), PolicyDir: filepath.Join(out, "policies"), Now: time.Now}
		if !quiet {
			s.Log = cl.stderr
		}
		if _, err := s.Run(cmd.Context(), cl.stdout); err != nil {
			return err
		}
		fmt.Fprintf(cl.stdout, "wrote %s (effectiveness.csv, effectiveness.json; training seed %d)\n", s.Dir, trainSeed)
		return nil
	})
	return cmd
}
