package main

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/envs/multicloudenv"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/scenario"
	"github.com/spf13/cobra"
)

func (cl *cli) trainMultiCloud(short string) *cobra.Command {
	var (
		out    string
		seed   uint64
		quiet  bool
		epochs int
		inputs string
		shift  string
		rec    recording
	)
	def := multicloudenv.DefaultConfig()
	periods := def.Collection.Periods
	cmd := &cobra.Command{
		Use:   "multicloud SCENARIO -o FILE",
		Short: short,
		Long: short + `.

The multi-cloud routing paper's performance models (section II-C1): for every
service placed in several clouds, the mean response time of its calls from
the replicas in each cloud, the RTTs between clouds, the calls from each
cloud, each cloud's background load, the service's standard processing
times and the request shift. Training collects the offline data set in the
simulator (--periods measurement periods of 10 s under random replicas,
RTTs, background loads, user rates and request shifts; 70% to fit, 30% to
test), then fits both models of the paper: SVR (RBF kernel, C = 960.77) and
the 5-layer network (100 units, batch normalisation, Leaky ReLU; Adam on
the mean squared error for --epochs epochs). It prints each model's R², MSE
and MAE on the test split, and records in FILE each service's model of
lower MAE there. 'shoal sim SCENARIO --policy multicloud:FILE' routes with
BO on those chosen models; multicloud-nn:FILE and multicloud-svr:FILE on one
kind. The models read measured series only (probed RTTs, node and pod CPU),
as 'shoal operator' reads them from Prometheus.`,
		Example: `  shoal train multicloud bookinfo -o bookinfo.models
  shoal sim bookinfo --policy local,even,locality,multicloud:bookinfo.models`,
		Args:              exactArgs(1, "one scenario"),
		ValidArgsFunction: completeScenarios,
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "where to save the models `FILE` (required)")
	f.IntVar(&periods, "periods", periods, "measurement periods of the offline data set (each a sample per routed service)")
	f.IntVar(&epochs, "epochs", def.Epochs, "epochs of the network's training")
	f.Uint64Var(&seed, "seed", 1, "seed of the data collection and the training")
	f.StringVar(&inputs, "inputs", def.Inputs, "the models' inputs: paper (section II-C1's), or derived (the paper's plus the mean RTT, share of the calls and calls per replica each location gets under the shift)")
	f.StringVar(&shift, "shift", def.Collection.Shift, shiftHelp)
	f.BoolVar(&quiet, "quiet", false, "no progress bar")
	rec.register(f)
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if out == "" {
			return usagef("-o FILE is required (where to save the models)")
		}
		if periods < 10 || epochs < 1 {
			return usagef("--periods must be at least 10 and --epochs at least 1, got %d and %d", periods, epochs)
		}
		if inputs != multicloud.InputsPaper && inputs != multicloud.InputsDerived {
			return usagef("--inputs must be paper or derived, got %q", inputs)
		}
		if err := checkShift(shift); err != nil {
			return err
		}
		sc, err := scenario.Lookup(args[0])
		if err != nil {
			return err
		}
		cfg := def
		cfg.Seed, cfg.Collection.Seed, cfg.Collection.Periods, cfg.Epochs, cfg.Inputs = seed, seed, periods, epochs, inputs
		cfg.Collection.Shift = shift
		if !quiet {
			bar := newProgressBar(cl.stderr)
			defer bar.done()
			cfg.Progress = func(frac float64, stage string) { bar.show(frac, stage, false) }
		}
		start := time.Now()
		res, err := multicloudenv.Train(cmd.Context(), sc, cfg)
		if err != nil {
			return fmt.Errorf("train multicloud: %w", err)
		}
		if err := modelfile.WriteFile(out, res.Policy.Write); err != nil {
			return err
		}
		fmt.Fprintf(cl.stdout, "trained the performance models of %d services on %s (seed %d, %d periods) in %s; wrote %s\n",
			len(res.Policy.Services), sc.Name, seed, periods, time.Since(start).Round(time.Second), out)
		fmt.Fprintf(cl.stdout, "offline test split (30%%):\n%-24s %5s %8s %10s %8s\n", "service", "model", "R²", "MSE (ms²)", "MAE (ms)")
		for _, s := range res.Policy.Services {
			for _, kind := range slices.Sorted(maps.Keys(res.Test[s.Name])) {
				a := res.Test[s.Name][kind]
				fmt.Fprintf(cl.stdout, "%-24s %5s %8.3f %10.2f %8.2f\n", s.Name, kind, a.R2, a.MSE, a.MAE)
			}
		}
		return cl.recordTraining(cmd, &rec, start, sc, "multicloud", seed, out, figures("services", len(res.Policy.Services), "periods", periods))
	})
	return cmd
}
