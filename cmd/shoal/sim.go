package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/control/policy"
	"github.com/shoal-project/shoal/experiment"
	"github.com/shoal-project/shoal/experiment/report"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/store"
	"github.com/shoal-project/shoal/workload"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

func (cl *cli) sim() *cobra.Command {
	var (
		policies, out, arrivals string
		seeds, workers          int
		dropMismatch            bool
		route                   = multicloud.DefaultOptions()
		seed                    uint64
		load                    float64
		horizon, slo            time.Duration
		asJSON, quiet           bool
		rec                     recording
	)
	cmd := &cobra.Command{
		Use:   "sim SCENARIO|FILE",
		Short: "Compare policies on a scenario, on the same arrivals",
		Long: `Run every policy on a scenario (a name from 'shoal scenarios' or a scenario file)
for several seeds, on the same arrivals and demands (common random numbers), and
print the tables that mean something for the scenario (response time, outcome,
failures, resources, balance), with 95% confidence intervals over seeds, and the
best policy at each cost. --out also writes the files and a report that opens
with a chart of quality against cost.

Policies are the ones 'shoal policies' lists: request selectors (rr, lsq, sed,
prequal, ...), autoscalers set up in the scenario's autoscaling section (static,
hpa, kpa, vpa, keda, openfaas; a+b runs both together), routes, or KIND:FILE, a
trained policy file (e.g. distr-lb:policy.slb from 'shoal train'). A policy
takes its parameters in its name, hpa:target=45 (several: NAME:A=1:B=2), and a
range FROM..TO/STEP runs one policy per setting: hpa:target=30..90/15 sweeps the
HPA's target, and the report draws the settings as the HPA's frontier.`,
		Example: `  shoal sim lb-moderate-cpu --out out/lb-moderate-cpu
  shoal sim trainticket --policy hpa,kpa --arrivals '{kind: trace, trace: nasa, rate: 300, speedup: 60}' --horizon 10m
  shoal sim trainticket-surge --policy hpa:target=30..90/15,kpa --out out/surge
  shoal sim lb-moderate-cpu --policy sed,prequal:qrif=0.9,distr-lb:distr.slb --load 0.95 --seeds 10`,
		Args:              exactArgs(1, "one scenario (a name from 'shoal scenarios' or a file)"),
		ValidArgsFunction: completeScenarios,
	}
	f := cmd.Flags()
	f.StringVar(&policies, "policy", "", "comma-separated `policies` to compare, with their settings (NAME:PARAM=VALUE, a range FROM..TO/STEP; default: the scenario's list)")
	f.IntVar(&seeds, "seeds", 0, "seeds per policy; run i uses seed+i (default: the scenario's)")
	f.Uint64Var(&seed, "seed", 0, "root seed (default: the scenario's)")
	f.Float64Var(&load, "load", 0, "offered load as a fraction of capacity, in (0, 10] (load-balancing scenarios)")
	f.StringVar(&arrivals, "arrivals", "", "every source's arrival process in `YAML`, keeping the sources' mix, e.g.\n'{kind: series, step: 10s, rates: [200, 400, 800]}'")
	f.DurationVar(&slo, "slo", 0, "response-time target of every class, e.g. 500ms (default: the scenario's)")
	f.DurationVar(&horizon, "horizon", 0, "simulated time with arrivals, e.g. 10m; the warm-up becomes horizon/20 (default: the scenario's)")
	f.StringVar(&out, "out", "", "write results.json, runs.csv, summary.csv, classes.csv, scaling.csv and report.html to `DIR`")
	f.BoolVar(&asJSON, "json", false, "print the results as JSON instead of the tables")
	f.IntVar(&workers, "workers", 0, "runs in parallel (default: the number of CPUs)")
	f.BoolVar(&quiet, "quiet", false, "no progress bar")
	f.BoolVar(&dropMismatch, "drop-mismatch", false, "run a learned policy that does not fit the scenario without what does not fit (brownout of a service that is not optional, replicas beyond its bounds) instead of refusing it")
	f.StringVar(&route.Objective, "objective", route.Objective, "multicloud routes: "+objectiveHelp)
	f.Float64Var(&route.MaxEgressGBPerHour, "max-egress-gb-per-hour", 0, "multicloud routes: a budget of the bytes sent between locations, GB per hour (0: none)")
	rec.register(cmd.Flags())
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		sc, err := scenario.Lookup(args[0])
		if err != nil {
			return err
		}
		if seeds < 0 || workers < 0 || horizon < 0 {
			return usagef("--seeds, --workers and --horizon must not be negative")
		}
		if seed != 0 {
			sc.Seed = seed
		}
		if horizon > 0 {
			sc.SetHorizon(horizon)
		}
		if load != 0 && arrivals != "" {
			return usagef("--load and --arrivals both set the arrivals; give one")
		}
		if load != 0 {
			if err := sc.SetLoad(load); err != nil {
				return fmt.Errorf("sim --load: %w", err)
			}
		}
		if arrivals != "" {
			spec, err := parseArrivals(arrivals)
			if err == nil {
				err = sc.SetArrivals(spec)
			}
			if err != nil {
				return fmt.Errorf("sim --arrivals: %w", err)
			}
		}
		if slo < 0 {
			return usagef("--slo must not be negative")
		}
		if err := checkRouteFlags(route); err != nil {
			return err
		}
		if slo > 0 {
			sc.SetSLO(slo)
		}
		if err := sc.Validate(); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		cmp := experiment.Comparison{
			Scenario:  sc,
			Seeds:     seeds,
			Selectors: lb.Classical(),
			Workers:   workers,
		}
		fileHashes := map[string]string{}
		if policies != "" {
			var specs []string
			for _, p := range strings.Split(policies, ",") {
				names, err := policy.Expand(p)
				if err != nil {
					return usagef("--policy: %v", err)
				}
				specs = append(specs, names...)
			}
			cmp.Policies, cmp.Learned, err = learnedPolicies(specs, sc, fitting{drop: dropMismatch, warn: cl.stderr, route: route})
			if err != nil {
				return fmt.Errorf("sim: %w", err)
			}
			if fileHashes, err = policyFileHashes(specs, cmp.Policies); err != nil {
				return fmt.Errorf("sim: %w", err)
			}
		}
		if !quiet && cl.stderr == os.Stderr && isTerminal(os.Stderr) {
			bar := newProgressBar(cl.stderr)
			cmp.Progress = bar.update
			defer bar.done()
		}
		start := time.Now()
		res, err := cmp.Run(cmd.Context())
		if err != nil {
			return err
		}
		if err := cl.recordSim(cmd, &rec, start, sc, res, fileHashes); err != nil {
			return err
		}
		warnRefusals(cl.stderr, res)
		if asJSON {
			err = res.WriteJSON(cl.stdout)
		} else {
			err = res.WriteTable(cl.stdout)
		}
		if err != nil {
			return err
		}
		if out == "" {
			return nil
		}
		meta := []report.KV{{Key: "command", Value: "shoal " + strings.Join(cl.args, " ")}}
		if err := res.WriteFiles(out, meta); err != nil {
			return err
		}
		if !asJSON {
			fmt.Fprintf(cl.stdout, "wrote %s/{results.json,runs.csv,summary.csv,classes.csv,scaling.csv,report.html}\n", strings.TrimSuffix(out, "/"))
		}
		return nil
	})
	return cmd
}

// recordSim records a comparison's runs, one per policy.
// warnRefusals says which policies' actions the simulated world refused
// (the runs went on without them), and why the first was.
func warnRefusals(w io.Writer, res *experiment.Result) {
	for _, p := range res.Policies {
		var n int64
		first := ""
		for _, r := range p.Runs {
			n += r.Refused
			if first == "" {
				first = r.FirstRefusal
			}
		}
		if n > 0 {
			fmt.Fprintf(w, "shoal: %s: %d actions refused by the simulated cluster and skipped over %d runs (first %s)\n", p.Policy, n, len(p.Runs), first)
		}
	}
}

func (cl *cli) recordSim(cmd *cobra.Command, rec *recording, start time.Time, sc *scenario.Scenario, res *experiment.Result, fileHashes map[string]string) error {
	if rec.off {
		return nil
	}
	tmpl, err := rec.template(cmd, store.KindSim, start, sc)
	if err != nil {
		return err
	}
	runs, err := experiment.StoreRuns(res, tmpl, func(p string) string { return fileHashes[p] })
	if err != nil {
		return err
	}
	rec.save(cmd.Context(), cl, runs)
	return nil
}

// policyFileHashes are the hashes of the policy files of --policy's
// KIND:FILE entries, by their names in the results.
func policyFileHashes(specs, names []string) (map[string]string, error) {
	out := map[string]string{}
	for i, s := range specs {
		if _, file, ok := policyFile(s); ok {
			b, err := os.ReadFile(file)
			if err != nil {
				return nil, err
			}
			out[names[i]] = store.Hash(b)
		}
	}
	return out, nil
}

// parseArrivals reads an arrival process given as YAML, strictly, e.g.
// '{kind: trace, trace: nasa, rate: 200, speedup: 60}'.
func parseArrivals(text string) (workload.ProcessSpec, error) {
	var spec workload.ProcessSpec
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&spec); err != nil {
		return spec, fmt.Errorf("want an arrival process in YAML, like '{kind: trace, trace: nasa, rate: 200}': %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return spec, nil
}
