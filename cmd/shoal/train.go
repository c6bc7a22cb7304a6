package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/control/lb/lbenv"
	"github.com/shoal-project/shoal/experiment"
	"github.com/shoal-project/shoal/scenario"
)

// cmdTrain trains a learned controller in the simulator and saves it.
func cmdTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("train: want what to train (distr-lb, centr-lb or qmix-lb): %w", errUsage)
	}
	switch args[0] {
	case "distr-lb", "centr-lb", "qmix-lb":
		return trainLB(ctx, lbenv.Algorithm(args[0]), args[1:], stdout, stderr)
	}
	return fmt.Errorf("train: unknown learner %q (want distr-lb, centr-lb or qmix-lb): %w", args[0], errUsage)
}

func trainLB(ctx context.Context, alg lbenv.Algorithm, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "", "")
	reward := fs.String("reward", "vbf", "")
	episodes := fs.Int("episodes", 0, "")
	steps := fs.Int("episode-steps", 0, "")
	seed := fs.Uint64("seed", 1, "")
	noGRU := fs.Bool("no-gru", false, "")
	estimate := fs.String("estimate", "backlog", "")
	load := fs.Float64("load", 0, "")
	curve := fs.String("curve", "", "")
	quiet := fs.Bool("quiet", false, "")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("train %s: want one scenario, got %d: %w", alg, len(pos), errUsage)
	}
	if *out == "" {
		return fmt.Errorf("train %s: -o FILE is required (where to save the policy): %w", alg, errUsage)
	}
	if *episodes < 0 || *steps < 0 {
		return fmt.Errorf("train %s: --episodes and --episode-steps must not be negative: %w", alg, errUsage)
	}
	sc, err := scenario.Lookup(pos[0])
	if err != nil {
		return err
	}
	if *load != 0 {
		if err := sc.SetLoad(*load); err != nil {
			return fmt.Errorf("train --load: %w", err)
		}
	}
	start := time.Now()
	cfg := lbenv.TrainConfig{Algorithm: alg, Reward: lb.Reward(*reward), Episodes: *episodes,
		EpisodeSteps: *steps, Seed: *seed, NoGRU: *noGRU, Estimate: lb.Estimate(*estimate)}
	if !*quiet {
		cfg.Progress = func(e lbenv.Episode) {
			el := time.Since(start).Seconds()
			fmt.Fprintf(stderr, "episode %3d  return %s  mean %.3f s  p99 %.3f s  %d steps  %.1f steps/s\n",
				e.Index, fmtReturns(e.Returns), e.Mean, e.P99, e.EnvSteps, float64(e.EnvSteps)/el)
		}
	}
	tr, err := lbenv.Train(ctx, sc, cfg)
	if err != nil {
		return fmt.Errorf("train %s: %w", alg, err)
	}
	wall := time.Since(start).Seconds()
	tr.Policy.Provenance.WallSeconds = wall
	tr.Policy.Provenance.StepsPerSecond = float64(tr.EnvSteps) / wall
	if err := writeFileAtomic(*out, tr.Policy.Write); err != nil {
		return err
	}
	if *curve != "" {
		if err := writeFileAtomic(*curve, func(w io.Writer) error { return experiment.WriteCurve(w, tr.Curve) }); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "trained %s on %s (reward %s, seed %d): %d episodes, %d environment steps in %.1f s (%.1f steps/s); wrote %s\n",
		alg, sc.Name, tr.Policy.Provenance.Reward, *seed, len(tr.Curve), tr.EnvSteps, wall, tr.Policy.Provenance.StepsPerSecond, *out)
	return nil
}

func fmtReturns(r []float64) string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = fmt.Sprintf("%9.2f", v)
	}
	return strings.Join(parts, " ")
}

// writeFileAtomic writes a file through a temporary file renamed into
// place, so an interrupted run leaves no half-written file.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".shoal-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// learnedPolicies resolves the KIND:FILE entries of --policy to learned
// policies, keyed by their name in the results (KIND, or the whole entry
// when KIND appears twice), and returns the policy list with those names.
func learnedPolicies(specs []string) ([]string, map[string]experiment.Learned, error) {
	kinds := map[string]int{}
	for _, s := range specs {
		if k, _, ok := strings.Cut(s, ":"); ok {
			kinds[k]++
		}
	}
	names := make([]string, len(specs))
	learned := map[string]experiment.Learned{}
	for i, s := range specs {
		kind, file, ok := strings.Cut(s, ":")
		if !ok {
			names[i] = s
			continue
		}
		p, err := readPolicy(file)
		if err != nil {
			return nil, nil, fmt.Errorf("--policy %s: %w", s, err)
		}
		if p.Algorithm != kind {
			return nil, nil, fmt.Errorf("--policy %s: the file holds a %s policy, not %s", s, p.Algorithm, kind)
		}
		names[i] = kind
		if kinds[kind] > 1 {
			names[i] = s
		}
		learned[names[i]] = experiment.LBPolicy(p)
	}
	return names, learned, nil
}

func readPolicy(path string) (*lb.Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := lb.ReadPolicy(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
