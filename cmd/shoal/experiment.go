package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/shoal-project/shoal/experiment"
)

// cmdExperiment runs the experiments that reproduce a paper.
func cmdExperiment(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "distr-lb" {
		return fmt.Errorf("experiment: want distr-lb: %w", errUsage)
	}
	fs := flag.NewFlagSet("experiment", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("out", "out/distr-lb", "")
	episodes := fs.Int("episodes", 0, "")
	seeds := fs.Int("seeds", 0, "")
	horizon := fs.Duration("horizon", 0, "")
	trainSeed := fs.Uint64("train-seed", 1, "")
	quiet := fs.Bool("quiet", false, "")
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("experiment distr-lb: want one experiment name or all: %w", errUsage)
	}
	if *episodes < 0 || *seeds < 0 || *horizon < 0 {
		return fmt.Errorf("experiment distr-lb: --episodes, --seeds and --horizon must not be negative: %w", errUsage)
	}
	var studies []experiment.LBStudy
	if pos[0] == "all" {
		all := experiment.DistrLBStudies()
		var names []string
		for n := range all {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			studies = append(studies, all[n])
		}
	} else {
		s, err := experiment.LookupDistrLBStudy(pos[0])
		if err != nil {
			return fmt.Errorf("experiment: %w: %w", err, errUsage)
		}
		studies = append(studies, s)
	}
	for _, s := range studies {
		s.Dir, s.PolicyDir = filepath.Join(*out, s.Name), filepath.Join(*out, "policies")
		s.Episodes, s.Seeds, s.Horizon, s.TrainSeed = *episodes, *seeds, *horizon, *trainSeed
		if !*quiet {
			s.Log = stderr
		}
		res, err := s.Run(ctx)
		if err != nil {
			return err
		}
		if err := res.WriteTable(stdout); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s (one directory per case with report.html; summary.txt)\n\n", s.Dir)
	}
	return nil
}
