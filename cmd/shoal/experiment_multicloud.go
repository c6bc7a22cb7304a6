package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/experiment"
	"github.com/spf13/cobra"
)

// objectiveHelp describes --objective.
const shiftHelp = "the request shifts' layout: one-way (the paper's: one signed value per pair of clouds) or two-way (a share per ordered pair, so that every cloud may send to every other)"

// checkShift refuses an unknown --shift.
func checkShift(shift string) error {
	if shift != multicloud.ShiftOneWay && shift != multicloud.ShiftTwoWay {
		return usagef("--shift must be %s or %s, got %q", multicloud.ShiftOneWay, multicloud.ShiftTwoWay, shift)
	}
	return nil
}

const objectiveHelp = "what the learned routes' BO minimises: headroom (the mean with every location's predicted utilisation under 0.7), mean (the paper's) or p95 (the predicted 95th percentile)"

// checkRouteFlags checks --objective and --max-egress-gb-per-hour as the
// routes will (multicloud.Options.Check), as a usage error.
func checkRouteFlags(o multicloud.Options) error {
	if err := o.Check(nil); err != nil {
		return usagef("--objective or --max-egress-gb-per-hour: %v", err)
	}
	return nil
}

// multiCloudBenchmarks are the multi-cloud routing paper's benchmarks.
var multiCloudBenchmarks = []string{"bookinfo", "online-boutique"}

func (cl *cli) experimentMultiCloud() *cobra.Command {
	var (
		out        string
		seeds      int
		trainSeed  uint64
		periods    int
		online     int
		moments    int
		inputs     string
		shift      string
		objective  string
		share      float64
		budget     float64
		quiet      bool
		benchmarks []string
	)
	def := experiment.DefaultMultiCloudStudy("")
	cmd := &cobra.Command{
		Use:   "multicloud models|convergence|overall|time|egress|all",
		Short: "Multi-cloud routing paper: models, BO convergence, response time, rebalance time and an egress budget",
		Long: `Train each benchmark's performance models (or reuse DIR/policies/BENCHMARK.models),
then reproduce the multi-cloud routing paper's evaluation on Bookinfo and Online
Boutique in three clouds (section III):

models (Tables I and II): each service's SVR and network, R², MSE and MAE on
  the offline test split and on --online periods collected under the online
  test settings, per service and their mean.
convergence (Fig. 7): BO with 20 steps on each model of the first routed
  service, the minimum found per step, over --moments moments.
overall (Figs. 8-9): every route (local, even, locality, bo-system, random,
  the SLATE-like slate, multicloud-nn, multicloud-svr, and multicloud: each
  service's model chosen on the held-out split) for --seeds seeds on the
  benchmark's online test
  settings: response time, p99, egress, and the rebalances' compute time and
  span; the full comparison in DIR/overall-BENCHMARK.
time (Fig. 9): one rebalance of all services on each model, wall time, and
  its simulated span beside BO on the system's.
egress (beyond the paper): the learned route (chosen models) under an egress
  budget, --egress-share of Even's egress per hour (or --max-egress-gb-per-hour),
  beside local, locality and spread:X (X of every cloud's calls sent away,
  0.1-0.6): each route's mean, p99 and egress per hour, and the gain over the
  best baseline within the budget.
frontier (beyond the paper): every route's knob swept on the test settings:
  spread:X and Istio's distribute:X (X sent to the nearest other cloud) at
  0.1-0.6 and 0.1-0.5, local, even, locality, and the SLATE-like and the
  learned routes at egress prices 0-30000 s/GB: the mean and the p99 against
  egress per hour, each route's frontier marked.
all: the six.

Every result file names its seeds; 95% intervals are over seeds (overall) or
moments (convergence, time).`,
		Example: `  shoal experiment multicloud all
  shoal experiment multicloud overall --benchmarks bookinfo --seeds 3
  shoal experiment multicloud egress --egress-share 0.25
  shoal experiment multicloud frontier --benchmarks online-boutique`,
		Args:      exactArgs(1, "models, convergence, overall, time, egress, frontier or all"),
		ValidArgs: []string{"models", "convergence", "overall", "time", "egress", "frontier", "all"},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "out/multicloud", "results `DIR`; models in DIR/policies are reused")
	f.IntVar(&seeds, "seeds", def.Seeds, "seeds of the overall comparison")
	f.Uint64Var(&trainSeed, "train-seed", def.TrainSeed, "seed of the offline data and the training")
	f.IntVar(&periods, "periods", def.Train.Collection.Periods, "periods of the offline data set")
	f.IntVar(&online, "online", def.OnlinePeriods, "periods collected under the online test settings (models)")
	f.IntVar(&moments, "moments", def.Moments, "moments of the online test settings (convergence, time)")
	f.StringVar(&inputs, "inputs", def.Train.Inputs, "the models' inputs: paper or derived (see 'shoal train multicloud --help')")
	f.StringVar(&objective, "objective", def.Options.Objective, objectiveHelp)
	f.StringVar(&shift, "shift", def.Train.Collection.Shift, shiftHelp)
	f.Float64Var(&share, "egress-share", 0.5, "the egress study's budget as a share of Even's egress, in (0, 1]")
	f.Float64Var(&budget, "max-egress-gb-per-hour", 0, "the egress study's budget, GB per hour (default: --egress-share of Even's)")
	f.StringSliceVar(&benchmarks, "benchmarks", nil, "bookinfo, online-boutique (default: both)")
	f.BoolVar(&quiet, "quiet", false, "no progress lines")
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		studies := []string{args[0]}
		switch args[0] {
		case "models", "convergence", "overall", "time", "egress", "frontier":
		case "all":
			studies = []string{"models", "convergence", "overall", "time", "egress", "frontier"}
		default:
			return usagef("unknown multicloud experiment %q (known: models, convergence, overall, time, egress, frontier, all)", args[0])
		}
		if !(share > 0 && share <= 1) {
			return usagef("--egress-share must be in (0, 1], got %g", share)
		}
		if seeds <= 0 || periods < 10 || online < 2 || moments <= 0 {
			return usagef("--seeds and --moments must be positive, --periods at least 10, --online at least 2")
		}
		if inputs != multicloud.InputsPaper && inputs != multicloud.InputsDerived {
			return usagef("--inputs must be paper or derived, got %q", inputs)
		}
		if err := checkShift(shift); err != nil {
			return err
		}
		opt := multicloud.Options{Objective: objective, MaxEgressGBPerHour: budget}
		if err := checkRouteFlags(opt); err != nil {
			return err
		}
		for _, b := range benchmarks {
			if !slices.Contains(multiCloudBenchmarks, b) {
				return usagef("--benchmarks: %q is none of %s", b, strings.Join(multiCloudBenchmarks, ", "))
			}
		}
		s := experiment.DefaultMultiCloudStudy(out)
		s.Scenarios = or(benchmarks, multiCloudBenchmarks)
		s.Seeds, s.TrainSeed, s.OnlinePeriods, s.Moments = seeds, trainSeed, online, moments
		s.Train.Collection.Periods, s.Train.Inputs, s.Train.Collection.Shift = periods, inputs, shift
		s.Options.Objective = objective
		s.EgressShare, s.BudgetGBPerHour = share, budget
		if !quiet {
			s.Progress = func(msg string) { fmt.Fprintln(cl.stderr, msg) }
		}
		for _, name := range studies {
			var err error
			switch name {
			case "models":
				var rows []experiment.ModelRow
				if rows, err = s.Models(cmd.Context()); err == nil {
					for _, r := range rows {
						if r.Service == "mean" {
							fmt.Fprintf(cl.stdout, "%s %s: mean R² offline %.3f (MSE %.1f, MAE %.2f), online %.3f (MSE %.1f, MAE %.2f)\n",
								r.Scenario, r.Model, r.Offline.R2, r.Offline.MSE, r.Offline.MAE, r.Online.R2, r.Online.MSE, r.Online.MAE)
						}
					}
				}
			case "convergence":
				_, err = s.Convergence(cmd.Context())
			case "overall":
				var rows []experiment.OverallRow
				if rows, err = s.Overall(cmd.Context()); err == nil {
					for _, g := range experiment.Gains(rows) {
						fmt.Fprintln(cl.stdout, g)
					}
				}
			case "egress":
				var rows []experiment.EgressRow
				if rows, err = s.Egress(cmd.Context()); err == nil {
					for _, g := range experiment.EgressGains(rows) {
						fmt.Fprintln(cl.stdout, g)
					}
				}
			case "frontier":
				var rows []experiment.FrontierRow
				if rows, err = s.Frontier(cmd.Context()); err == nil {
					for _, sc := range s.Scenarios {
						for _, f := range []string{"spread", "distribute", "slate"} {
							if b, n := experiment.Beaten(rows, sc, "multicloud", f); n > 0 {
								fmt.Fprintf(cl.stdout, "%s: the learned routes' frontier beats %d of %s's %d frontier points\n", sc, b, f, n)
							}
						}
					}
				}
			case "time":
				var rows []experiment.TimeRow
				if rows, err = s.Time(cmd.Context()); err == nil {
					for _, r := range rows {
						fmt.Fprintf(cl.stdout, "%s %s: rebalance compute %.1f ± %.1f ms, span %.0f s (%d layers, %d services)\n",
							r.Scenario, r.Model, 1000*float64(r.Compute.Mean), 1000*float64(r.Compute.CI95), r.Span, r.Layers, r.Services)
					}
				}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cl.stdout, "wrote %s/%s.csv, .json, .html (training seed %d)\n", out, name, trainSeed)
		}
		return nil
	})
	return cmd
}
