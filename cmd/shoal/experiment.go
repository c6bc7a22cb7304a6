package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shoal-project/shoal/experiment"
	"github.com/shoal-project/shoal/store"
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
				return usagef("want a paper (distr-lb, drpc, faasconf, multicloud or edge)")
			}
			return usagef("unknown paper %q (want distr-lb, drpc, faasconf, multicloud or edge)", args[0])
		}),
	}
	cmd.FParseErrWhitelist.UnknownFlags = true
	r := &experimentRecorder{cl: cl}
	r.rec.register(cmd.PersistentFlags())
	cmd.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		r.cmd, r.start = cmd, time.Now()
		if !r.rec.off {
			cmd.SetContext(experiment.WithRecorder(cmd.Context(), r.comparison))
		}
	}
	cmd.PersistentPostRun = func(*cobra.Command, []string) { r.close() }
	cmd.AddCommand(cl.experimentDistrLB(), cl.experimentDRPC(), cl.experimentFaaSConf(r), cl.experimentMultiCloud(), cl.experimentEdge(r))
	return cmd
}

func (cl *cli) experimentDRPC() *cobra.Command {
	var (
		out       string
		seeds     int
		budget    time.Duration
		trainSeed uint64
		quiet     bool
		cpuBudget float64
		forecast  bool
	)
	names := experiment.DRPCStudyNames()
	cmd := &cobra.Command{
		Use:   "drpc NAME|all",
		Short: "DRPC paper: " + strings.Join(names, ", "),
		Long: `Train DRPC and the FIRM-like and CoScal-like baselines on TrainTicket (or reuse
DIR/policies), then compare them with the Kubernetes HPA, the Knative KPA and
DRPC's own teacher acting alone, as the DRPC paper does: Fig. 3 (successful
requests/s, failure rate and mean response time over five periods), Table 4
(response-time percentiles), the scalability fit and the computation table,
each with 95% intervals over seeds. An interrupted DRPC training resumes from
its checkpoint in DIR/policies. NAME is one of
` + strings.Join(names, ", ") + `, or all:
  surge        DRPC's motivating surge, 200 to 800 req/s within a minute
  paper        the paper's 5000-minute Alibaba workload (scenario trainticket-alibaba)
  mixchange    users move from searching to buying; the retraining notifier,
               with the teacher taking over for 2 minutes (training noise) or
               10 minutes (a third of it), and the policy fine-tuned in the
               simulator on the new mix (trainticket-buyers, 40 episodes:
               drpc+finetune), against no retraining
  sensitivity  policies trained with equation 2's weight 1 (the paper's), 4 and 8`,
		Example: `  shoal experiment drpc surge
  shoal experiment drpc all --out out/drpc --seeds 5`,
		Args:      exactArgs(1, "one study name or all"),
		ValidArgs: append(names, "all"),
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "out/drpc", "results `DIR`; policies in DIR/policies are reused")
	f.IntVar(&seeds, "seeds", 5, "evaluation seeds")
	f.DurationVar(&budget, "budget", 15*time.Minute, "a cap on each learner's training wall time (DRPC's teacher stops at its episode count first on an idle 2-core machine; FIRM and CoScal train for it)")
	f.Uint64Var(&trainSeed, "train-seed", 1, "training seed")
	f.Float64Var(&cpuBudget, "budget-cpu", 0, "train DRPC under this budget (vCPUs, memory at its price; train drpc --budget-cpu), or reuse such a policy from DIR/policies")
	f.BoolVar(&forecast, "forecast", false, "train DRPC with the GRU workload predictor (train drpc --forecast), or reuse such a policy from DIR/policies")
	f.BoolVar(&quiet, "quiet", false, "no progress lines")
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		if seeds <= 0 || budget <= 0 || cpuBudget < 0 {
			return usagef("--seeds and --budget must be positive, --budget-cpu not negative")
		}
		studies := names
		if args[0] != "all" {
			if !slices.Contains(names, args[0]) {
				return usagef("unknown drpc experiment %q (known: %s, all)", args[0], strings.Join(names, ", "))
			}
			studies = []string{args[0]}
		}
		for _, n := range studies {
			s := experiment.DRPCStudies()[n]
			s.Dir, s.PolicyDir = filepath.Join(out, n), filepath.Join(out, "policies")
			s.Seeds, s.TrainSeed, s.Budget, s.Now, s.CPUBudget, s.Forecast = seeds, trainSeed, budget, time.Now, cpuBudget, forecast
			if !quiet {
				s.Log = cl.stderr
			}
			if err := s.Run(cmd.Context(), cl.stdout); err != nil {
				return err
			}
			fmt.Fprintf(cl.stdout, "wrote %s (report.html, drpc.json, summary.csv)\n\n", s.Dir)
		}
		return nil
	})
	cmd.AddCommand(cl.experimentDRPCPareto())
	return cmd
}

func (cl *cli) experimentDRPCPareto() *cobra.Command {
	p := experiment.DefaultDRPCPareto()
	var (
		out   string
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "pareto",
		Short: "DRPC against its baselines at equal cost: every method's quality-cost frontier",
		Long: `Judge DRPC on frontiers, not single points. Each baseline runs at every setting
of its own knob: the HPA's CPU target, the KPA's target concurrency (a factor on
every service's), the SLO FIRM-like and CoScal-like are told (a factor), and
the p99 the Autothrottle-like baseline aims at (a factor of the SLO; warmed up
once, as 'shoal train autothrottle' does, and kept in DIR/policies).
DRPC is trained at several cost budgets (train drpc --budget-cpu) with several
training seeds, or reused from DIR/policies; at each budget the seed whose
policy does best on selection episodes of its own is kept (--select-episodes;
DIR/selection.csv). Every point runs on each workload with the same arrivals
for the evaluation seeds:
  steady       TrainTicket at a steady 200 req/s, 5 minutes
  steady-30m   the same for 30 minutes
  surge        DRPC's surge, 200 to 800 req/s within a minute, 10 minutes
  alibaba      the held-out second half of the Alibaba trace (training never
               sees it)
  mixchange    users turn from searching to buying halfway through
  mixshift     unseen: cancellations rise from 10% to 35% of 240 req/s, 30
               minutes (open loop)
  alibaba-segment
               unseen: 20 minutes of the held-out half (trace minutes
               3700-3900)
The unseen workloads were fixed before any policy ran on them and choose no
setting; mixshift-validation (admin users rise from 5% to 20%) and
alibaba-validation (20 minutes of the trace's first half) are where settings
are chosen, and run only when --workloads names them.
Quality is the share of requests that violated the SLO or were answered
degraded (an optional call browned out); cost is vCPU-seconds, and dollars with
memory at its price. DIR gets pareto.csv and pareto.json (every point with 95%
intervals), equal-cost.csv (DRPC interpolated between its budgets at each
baseline point's vCPU-seconds), report.html with the frontier charts, and each
workload's full comparison in DIR/WORKLOAD. Every setting is fixed before the
evaluation runs; DRPC's teachers are validated on seeds of their own.`,
		Example: `  shoal experiment drpc pareto --workloads steady,surge --seeds 3
  shoal experiment drpc pareto --budgets 40,60 --train-seeds 1 --alibaba-horizon 60m
  shoal experiment drpc pareto --budgets none --policies drpc.policy --workloads mixshift,alibaba-segment`,
		Args: exactArgs(0, "no arguments"),
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "out/drpc-pareto", "results `DIR`; policies in DIR/policies are reused")
	f.StringSliceVar(&p.Workloads, "workloads", p.Workloads, "workloads to run")
	f.Float64SliceVar(&p.HPATargets, "hpa-targets", p.HPATargets, "the HPA's CPU targets (%)")
	f.Float64SliceVar(&p.KPAFactors, "kpa-factors", p.KPAFactors, "factors on the KPA's target concurrency")
	f.Float64SliceVar(&p.SLOFactors, "slo-factors", p.SLOFactors, "factors on the SLO FIRM-like and CoScal-like are told")
	f.Float64SliceVar(&p.AutothrottleP99s, "autothrottle-p99s", p.AutothrottleP99s, "the p99 latencies the Autothrottle-like baseline aims at, as factors of the SLO")
	budgets := f.StringSlice("budgets", []string{"45", "60", "75", "95"}, "DRPC's training budgets (vCPUs, memory at its price), or none")
	f.StringSliceVar(&p.Policies, "policies", nil, "trained DRPC policy `FILES` to run as points of their own, each against every method's frontier at its cost")
	trainSeeds := f.UintSlice("train-seeds", []uint{1, 2}, "DRPC's training seeds")
	f.BoolVar(&p.Forecast, "forecast", p.Forecast, "train DRPC with the GRU workload predictor (train drpc --forecast; --forecast=false: without)")
	f.IntVar(&p.SelectEpisodes, "select-episodes", p.SelectEpisodes, "keep at each budget the training seed whose policy does best on this many selection episodes (never an evaluation seed); 0: keep every seed, pooled")
	f.Uint64Var(&p.Seed, "seed", p.Seed, "the first evaluation seed")
	f.IntVar(&p.Seeds, "seeds", p.Seeds, "evaluation seeds")
	f.DurationVar(&p.AlibabaHorizon, "alibaba-horizon", p.AlibabaHorizon, "how much of the held-out half of the Alibaba trace to run (all of it: 250m)")
	f.BoolVar(&quiet, "quiet", false, "no progress lines")
	cmd.RunE = cl.action(func(cmd *cobra.Command, _ []string) error {
		for _, w := range p.Workloads {
			if !slices.Contains(experiment.DRPCParetoWorkloadNames(true), w) {
				return usagef("--workloads: unknown workload %q (known: %s)", w, strings.Join(experiment.DRPCParetoWorkloadNames(true), ", "))
			}
		}
		p.Budgets = p.Budgets[:0]
		for _, b := range *budgets {
			if b == "none" && len(*budgets) == 1 {
				break
			}
			x, err := strconv.ParseFloat(b, 64)
			if err != nil || !(x > 0) {
				return usagef("--budgets: %q is not a positive number of vCPUs (or none)", b)
			}
			p.Budgets = append(p.Budgets, x)
		}
		p.TrainSeeds = p.TrainSeeds[:0]
		for _, s := range *trainSeeds {
			p.TrainSeeds = append(p.TrainSeeds, uint64(s))
		}
		if p.Seeds <= 0 || len(p.TrainSeeds) == 0 || p.AlibabaHorizon <= 0 || p.SelectEpisodes < 0 {
			return usagef("--seeds and --alibaba-horizon must be positive, --select-episodes not negative, and --train-seeds not empty")
		}
		if len(p.Budgets) == 0 && len(p.Policies) == 0 {
			return usagef("--budgets none: then name the DRPC policies to judge (--policies FILE,...)")
		}
		p.Dir, p.PolicyDir, p.Now = out, filepath.Join(out, "policies"), time.Now
		if !quiet {
			p.Log = cl.stderr
		}
		if err := p.Run(cmd.Context(), cl.stdout); err != nil {
			return err
		}
		fmt.Fprintf(cl.stdout, "wrote %s (report.html, pareto.csv, pareto.json, equal-cost.csv)\n", out)
		return nil
	})
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

// experimentRecorder records an experiment's results as they come, in a
// store opened at the first: every comparison, one run per policy, and
// the rows of the studies not made of comparisons. A store that fails is
// warned about once, and the experiment goes on.
type experimentRecorder struct {
	cl    *cli
	rec   recording
	cmd   *cobra.Command
	start time.Time

	mu     sync.Mutex
	st     *store.Store
	failed bool
}

// comparison records a comparison's result (experiment.WithRecorder),
// with the times it ran and its learned policies' hashes.
func (r *experimentRecorder) comparison(c experiment.Recorded) {
	hash, err := experiment.ScenarioHash(c.Scenario)
	r.save(hash, err, func(tmpl store.Run) ([]*store.Run, error) {
		tmpl.Started = c.Started
		return experiment.StoreRuns(c.Result, tmpl, func(p string) string { return c.PolicyHashes[p] })
	})
}

// study records a study's rows; hash identifies what they ran on (the
// scenario's or the world's configuration), unless err says why there is
// none.
func (r *experimentRecorder) study(hash string, err error, rows []experiment.StudyRow) {
	r.save(hash, err, func(tmpl store.Run) ([]*store.Run, error) { return experiment.StudyRuns(rows, tmpl) })
}

func (r *experimentRecorder) save(hash string, err error, runs func(tmpl store.Run) ([]*store.Run, error)) {
	if r.rec.off {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed {
		return
	}
	err = func() error {
		if err != nil {
			return err
		}
		if r.st == nil {
			st, err := openStore(r.cmd.Context(), r.rec.db)
			if err != nil {
				return err
			}
			r.st = st
		}
		tmpl, err := r.rec.template(r.cmd, store.KindExperiment, r.start, nil)
		if err != nil {
			return err
		}
		tmpl.ScenarioHash = hash
		tmpl.Flags["command"] = "shoal " + strings.Join(r.cl.args, " ")
		rs, err := runs(tmpl)
		for _, run := range rs {
			if err == nil {
				err = r.st.Record(r.cmd.Context(), run)
			}
		}
		return err
	}()
	if err != nil {
		r.failed = true
		fmt.Fprintf(r.cl.stderr, "shoal: warning: results not recorded: %v\n", err)
	}
}

func (r *experimentRecorder) close() {
	if r.st != nil {
		r.st.Close()
	}
}
