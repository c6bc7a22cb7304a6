package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/shoal-project/shoal/experiment"
	"github.com/spf13/cobra"
)

func (cl *cli) experiment() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "experiment PAPER NAME|all [flags]",
		Short: "Reproduce a paper's experiments: train, compare, write tables and reports",
		Long: `Reproduce the experiments of one of the papers Shoal implements: train the learned
policies, compare them with the paper's baselines on the same arrivals, and write
tables, CSV files and HTML reports.`,
		Example: "  shoal experiment distr-lb table3\n  shoal experiment distr-lb all --out out/distr-lb",
		RunE: cl.action(func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("want a paper (distr-lb)")
			}
			return usagef("unknown paper %q (want distr-lb)", args[0])
		}),
	}
	cmd.FParseErrWhitelist.UnknownFlags = true
	cmd.AddCommand(cl.experimentDistrLB())
	return cmd
}

func distrLBStudyNames() []string {
	var names []string
	for n := range experiment.DistrLBStudies() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (cl *cli) experimentDistrLB() *cobra.Command {
	var (
		out             string
		episodes, seeds int
		horizon         time.Duration
		trainSeed       uint64
		quiet           bool
	)
	names := distrLBStudyNames()
	cmd := &cobra.Command{
		Use:   "distr-lb NAME|all",
		Short: "Distr-LB paper: " + strings.Join(names, ", "),
		Long: `Train Distr-LB and its comparisons (Centr-LB, QMix-LB) and compare them with the
classical selectors as the Distr-LB paper does. NAME is one of ` + strings.Join(names, ", ") + `,
or all. Trained policies are kept in DIR/policies and reused by later runs.`,
		Example: `  shoal experiment distr-lb table3
  shoal experiment distr-lb all --out out/distr-lb --seeds 10`,
		Args:      exactArgs(1, "one experiment name or all"),
		ValidArgs: append(names, "all"),
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "out/distr-lb", "results `DIR`; policies in DIR/policies are reused")
	f.IntVar(&episodes, "episodes", 0, "training episodes per policy (default 60)")
	f.IntVar(&seeds, "seeds", 0, "evaluation seeds (default: the scenario's)")
	f.DurationVar(&horizon, "horizon", 0, "evaluation horizon (default: the scenario's)")
	f.Uint64Var(&trainSeed, "train-seed", 1, "training seed")
	f.BoolVar(&quiet, "quiet", false, "no progress lines")
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if episodes < 0 || seeds < 0 || horizon < 0 {
			return usagef("--episodes, --seeds and --horizon must not be negative")
		}
		var studies []experiment.LBStudy
		if args[0] == "all" {
			for _, n := range names {
				studies = append(studies, experiment.DistrLBStudies()[n])
			}
		} else {
			s, err := experiment.LookupDistrLBStudy(args[0])
			if err != nil {
				return usagef("%w", err)
			}
			studies = append(studies, s)
		}
		for _, s := range studies {
			s.Dir, s.PolicyDir = filepath.Join(out, s.Name), filepath.Join(out, "policies")
			s.Episodes, s.Seeds, s.Horizon, s.TrainSeed = episodes, seeds, horizon, trainSeed
			if !quiet {
				s.Log = cl.stderr
			}
			res, err := s.Run(cmd.Context())
			if err != nil {
				return err
			}
			if err := res.WriteTable(cl.stdout); err != nil {
				return err
			}
			fmt.Fprintf(cl.stdout, "wrote %s (one directory per case with report.html; summary.txt)\n\n", s.Dir)
		}
		return nil
	})
	return cmd
}
