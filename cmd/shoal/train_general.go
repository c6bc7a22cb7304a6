package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/envs/lbenv"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/store"
	"go.yaml.in/yaml/v3"
)

// generalFlags are the flags of 'shoal train distr-lb --family'.
type generalFlags struct {
	family      string
	generations int
	workers     int
	pairs       int
	sigma, lr   float64
	hidden      []int
	checkpoint  string
	validate    string
}

// builtinFamily is --family's value for the embedded default family.
const builtinFamily = "default"

func (g *generalFlags) register(f *pflag.FlagSet) {
	f.StringVar(&g.family, "family", "", "train one general policy across a family of worlds: a `FILE` of ranges (YAML), or \"default\" for the built-in family; no scenario then")
	f.IntVar(&g.generations, "generations", 0, "with --family: generations of the evolution strategy (default 300)")
	f.IntVar(&g.pairs, "pairs", 0, "with --family: mirrored pairs of episodes per generation (default 16)")
	f.Float64Var(&g.sigma, "sigma", 0, "with --family: standard deviation of the parameter noise (default 0.05)")
	f.Float64Var(&g.lr, "learning-rate", 0, "with --family: the evolution strategy's Adam step (default 0.02)")
	f.IntSliceVar(&g.hidden, "hidden", nil, "with --family: hidden layer widths of the per-server network (default 32)")
	f.IntVar(&g.workers, "workers", 2, "with --family: episodes simulated at once; the policy is the same for any number")
	f.StringVar(&g.validate, "validate", "", "with --family: train nothing; run the general policy `FILE` on the family's validation worlds and print its score")
	f.StringVar(&g.checkpoint, "checkpoint", "", "with --family: save the search to `FILE` after every generation, and resume from it")
}

// command is the canonical command line that trains what these flags
// train, for the policy's provenance: the family, the seed and the search
// flags set, without the output file or the workers (which change
// nothing), so that training again writes the same file.
func (g *generalFlags) command(cmd *cobra.Command, seed uint64) string {
	line := fmt.Sprintf("shoal train distr-lb --family %s --seed %d", g.family, seed)
	for _, name := range []string{"generations", "pairs", "sigma", "learning-rate", "hidden"} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			v := f.Value.String()
			if sv, ok := f.Value.(pflag.SliceValue); ok {
				v = strings.Join(sv.GetSlice(), ",")
			}
			line += fmt.Sprintf(" --%s %s", name, v)
		}
	}
	return line
}

// readFamily reads --family's ranges: the default family, with the
// file's fields over it.
func readFamily(name string) (lbenv.Family, error) {
	f := lbenv.DefaultFamily()
	if name == builtinFamily {
		return f, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return f, fmt.Errorf("--family: %w", err)
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("--family %s: %w", name, err)
	}
	if err := f.Validate(); err != nil {
		return f, fmt.Errorf("--family %s: %w", name, err)
	}
	return f, nil
}

// trainGeneral trains the general Distr-LB policy across a family.
func (cl *cli) trainGeneral(cmd *cobra.Command, g *generalFlags, out string, seed uint64, quiet bool, rec *recording) error {
	fam, err := readFamily(g.family)
	if err != nil {
		return err
	}
	if g.generations < 0 || g.pairs < 0 || g.sigma < 0 || g.lr < 0 {
		return usagef("--generations, --pairs, --sigma and --learning-rate must not be negative")
	}
	if g.validate != "" {
		return cl.validateGeneral(cmd, fam, g)
	}
	start := time.Now()
	cfg := lbenv.GeneralConfig{Family: fam, Generations: g.generations, Seed: seed, Workers: g.workers, Checkpoint: g.checkpoint,
		Command: g.command(cmd, seed)}
	cfg.ES.Pairs, cfg.ES.Sigma, cfg.ES.LR, cfg.Hidden = g.pairs, g.sigma, g.lr, g.hidden
	var bar *progressBar
	if !quiet && cl.stderr == os.Stderr && isTerminal(os.Stderr) {
		bar = newProgressBar(cl.stderr)
	}
	if !quiet {
		cfg.Progress = func(p lbenv.GeneralProgress) {
			if !math.IsNaN(p.Validation) {
				line := fmt.Sprintf("generation %4d/%d  score %+.4f  validation %+.4f (log ratio to probing-sed; best %+.4f), p99 over 2%% worse in %.0f%% of worlds  %d episodes",
					p.Index, p.Of, p.Mean, p.Validation, p.Best, 100*p.Worse, p.Episodes)
				if bar == nil {
					fmt.Fprintln(cl.stderr, line)
				} else {
					bar.println(line)
				}
			}
			if bar != nil {
				bar.show(float64(p.Index)/float64(p.Of), fmt.Sprintf("generation %d/%d  best %+.4f", p.Index, p.Of, p.Best), false)
			}
		}
	}
	pol, err := lbenv.TrainGeneral(cmd.Context(), cfg)
	if bar != nil {
		bar.done()
	}
	if err != nil {
		return fmt.Errorf("train distr-lb --family: %w", err)
	}
	if err := modelfile.WriteFile(out, pol.Write); err != nil {
		return err
	}
	pv := pol.Provenance
	fmt.Fprintf(cl.stdout, "trained a general distr-lb policy (seed %d, %d workers): %d generations, %d episodes in %.1f s; kept generation %d, validation %+.4f against probing-sed; wrote %s\n",
		seed, cfg.Workers, pv.Generations, pv.Episodes, time.Since(start).Seconds(), pv.Selected, pv.Validation, out)
	if rec.off {
		return nil
	}
	run, err := rec.template(cmd, store.KindTrain, start, nil)
	if err != nil {
		return err
	}
	run.Scenario, run.ScenarioHash = "family:"+g.family, store.Hash([]byte(pv.Family))
	return cl.saveTraining(cmd, rec, run, "distr-lb-general", seed, out, figures("validation", pv.Validation, "episodes", pv.Episodes))
}

// validateGeneral prints a general policy's score on a family's
// validation worlds.
func (cl *cli) validateGeneral(cmd *cobra.Command, fam lbenv.Family, g *generalFlags) error {
	f, err := os.Open(g.validate)
	if err != nil {
		return fmt.Errorf("--validate: %w", err)
	}
	defer f.Close()
	pol, err := lb.ReadGeneralPolicy(f)
	if err != nil {
		return fmt.Errorf("--validate %s: %w", g.validate, err)
	}
	score, worse, err := lbenv.ValidateGeneral(cmd.Context(), lbenv.GeneralConfig{Family: fam, Workers: g.workers}, pol)
	if err != nil {
		return err
	}
	fmt.Fprintf(cl.stdout, "%s on the validation worlds of family %s: %+.4f (mean log ratio to probing-sed of p99 and mean); p99 over 2%% worse in %.0f%% of worlds\n",
		g.validate, g.family, score, 100*worse)
	return nil
}
