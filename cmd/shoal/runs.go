package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shoal-project/shoal/experiment"
	"github.com/shoal-project/shoal/experiment/report"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/store"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// openStore opens the run store a --db flag names (else SHOAL_DB, else the
// default file).
func openStore(ctx context.Context, flag string) (*store.Store, error) {
	dsn, err := store.DSN(flag)
	if err != nil {
		return nil, err
	}
	return store.Open(ctx, dsn)
}

const dbHelp = "run store: a SQLite file or a postgres:// URL (default: $SHOAL_DB, else ~/.local/share/shoal/shoal.db)"

func (cl *cli) runsCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "Query the run store: list, show, compare and export recorded runs",
		Long: `Every 'shoal sim', 'shoal train' and 'shoal sweep' run, and every comparison (or
row of a study's table) of 'shoal experiment', is recorded in the run store: the
scenario and policy (with hashes of what they ran), seeds, load, code version,
flags, times, the summary and per-class statistics. The store is a SQLite file
by default, or PostgreSQL with --db postgres://... or SHOAL_DB.`,
		Example: `  shoal runs list --scenario lb-moderate-cpu
  shoal runs show 3f9a2c
  shoal runs compare distr-lb distr-lb-again
  shoal runs export --sweep distr-lb --format csv -o runs.csv`,
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", dbHelp)
	cmd.AddCommand(cl.runsList(&db), cl.runsShow(&db), cl.runsCompare(&db), cl.runsExport(&db))
	return cmd
}

// runFilter is list's and export's selection.
type runFilter struct {
	f     store.Filter
	since string
}

func (r *runFilter) register(cmd *cobra.Command, limit int) {
	f := cmd.Flags()
	f.StringVar(&r.f.Scenario, "scenario", "", "only runs of this scenario")
	f.StringVar(&r.f.Policy, "policy", "", "only runs of this policy")
	f.StringVar(&r.f.Kind, "kind", "", "only runs of this kind: sim, train, experiment or sweep")
	f.StringVar(&r.f.Sweep, "sweep", "", "only the runs of this sweep")
	f.StringVar(&r.since, "since", "", "only runs started within this `DURATION` (e.g. 24h) or since this date (2026-11-01)")
	f.IntVar(&r.f.Limit, "limit", limit, "at most this many, the newest (0: all)")
}

func (r *runFilter) filter(now time.Time) (store.Filter, error) {
	f := r.f
	if f.Limit < 0 {
		return f, usagef("--limit must not be negative")
	}
	if r.since == "" {
		return f, nil
	}
	if d, err := time.ParseDuration(r.since); err == nil && d > 0 {
		f.Since = now.Add(-d)
		return f, nil
	}
	for _, layout := range []string{time.RFC3339, time.DateTime, time.DateOnly} {
		if t, err := time.ParseInLocation(layout, r.since, time.Local); err == nil {
			f.Since = t
			return f, nil
		}
	}
	return f, usagef("--since %q: want a duration (24h) or a date (2026-11-01)", r.since)
}

// list returns the runs the flags select from the store db names, and
// where that store is.
func (r *runFilter) list(ctx context.Context, db string) ([]*store.Run, string, error) {
	f, err := r.filter(time.Now())
	if err != nil {
		return nil, "", err
	}
	st, err := openStore(ctx, db)
	if err != nil {
		return nil, "", err
	}
	defer st.Close()
	runs, err := st.List(ctx, f)
	return runs, st.Location(), err
}

func (cl *cli) runsList(db *string) *cobra.Command {
	var (
		rf    runFilter
		stats string
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List recorded runs, newest first",
		Example: `  shoal runs list --policy sed --since 24h
  shoal runs list --scenario faas-parallel --stats best,found`,
		Args: cobra.NoArgs,
	}
	rf.register(cmd, 50)
	cmd.Flags().StringVar(&stats, "stats", "mean,p99", "comma-separated statistics to show ('shoal runs show ID' lists a run's)")
	cmd.RunE = cl.action(func(cmd *cobra.Command, _ []string) error {
		runs, where, err := rf.list(cmd.Context(), *db)
		if err != nil {
			return err
		}
		names := strings.Split(stats, ",")
		w := tabwriter.NewWriter(cl.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(w, "id\tstarted\tkind\tscenario\tload\tpolicy\tseeds\t%s\tsweep\n", strings.Join(names, "\t"))
		for _, r := range runs {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t", r.ID[:12], r.Started.Local().Format(time.DateTime),
				r.Kind, r.Scenario, fmtLoad(r.Load), r.Policy, r.Seeds)
			for _, n := range names {
				fmt.Fprintf(w, "%s\t", fmtStat(store.StatOf(r.Summary, n)))
			}
			fmt.Fprintln(w, r.Sweep)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(cl.stderr, "%s in %s\n", experiment.Count(len(runs), "run"), where)
		return nil
	})
	return cmd
}

func fmtLoad(l float64) string {
	if l == 0 {
		return "-"
	}
	return strconv.FormatFloat(l, 'g', 4, 64)
}

// fmtStat is mean ± the 95% interval's half-width ("-": no mean).
func fmtStat(s store.Stat) string {
	if math.IsNaN(s.Mean) {
		return "-"
	}
	if math.IsNaN(s.CI95) || s.CI95 == 0 {
		return strconv.FormatFloat(s.Mean, 'g', 4, 64)
	}
	return fmt.Sprintf("%.4g ± %.2g", s.Mean, s.CI95)
}

func (cl *cli) runsShow(db *string) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one run: what ran, and every statistic",
		Long: fmt.Sprintf(`Show one run: what ran (scenario, policy, seeds, code version, flags) and
every statistic of the whole run and of each request class. ID is a run id as
'shoal runs list' prints it, or a unique prefix of one, %d characters or more.`, store.MinPrefix),
		Example: "  shoal runs show 3f9a",
		Args:    exactArgs(1, fmt.Sprintf("one run id (or a unique prefix of %d characters or more)", store.MinPrefix)),
		RunE: cl.action(func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd.Context(), *db)
			if err != nil {
				return err
			}
			defer st.Close()
			r, err := st.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return writeRun(cl.stdout, r)
		}),
	}
}

func writeRun(out io.Writer, r *store.Run) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, kv := range [][2]string{
		{"id", r.ID}, {"kind", r.Kind}, {"scenario", r.Scenario}, {"scenario hash", r.ScenarioHash},
		{"policy", r.Policy}, {"policy hash", r.PolicyHash}, {"load", fmtLoad(r.Load)},
		{"seeds", fmt.Sprintf("%d from root seed %d", r.Seeds, r.RootSeed)}, {"code", r.CodeVersion},
		{"flags", fmtFlags(r.Flags)}, {"started", r.Started.Local().Format(time.RFC3339)},
		{"took", r.Finished.Sub(r.Started).Round(time.Millisecond).String()},
		{"sweep", strings.TrimSpace(r.Sweep + " " + r.Shard)}, {"key", r.Key},
	} {
		fmt.Fprintf(w, "%s\t%s\n", kv[0], kv[1])
	}
	fmt.Fprintln(w, "\nstatistic\twhole run")
	writeStats(w, "", r.Summary)
	for _, c := range r.Classes {
		writeStats(w, c.Class+" ", c.Stats)
	}
	return w.Flush()
}

func writeStats(w io.Writer, prefix string, m map[string]store.Stat) {
	for _, name := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(w, "%s%s\t%s\n", prefix, name, fmtStat(m[name]))
	}
}

func fmtFlags(f map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(f)) {
		parts = append(parts, "--"+k+"="+f[k])
	}
	return strings.Join(parts, " ")
}

func (cl *cli) runsCompare(db *string) *cobra.Command {
	var stats, reportFile string
	cmd := &cobra.Command{
		Use:   "compare SWEEP|ID [SWEEP|ID...]",
		Short: "Compare sweeps (or runs) side by side, with 95% intervals; --report draws their frontiers",
		Long: `Compare sets of runs side by side: each argument is a sweep id (all its runs)
or a run id (or a unique prefix of one, 4 characters or more). Rows are the
(scenario, load, policy) of any set, with each set's statistics (mean ± the
half-width of the 95% interval over seeds) and, for two sets or more, the last
set's over the first's.

How run ids are paired: runs given by id share one row when they ran the same
policy, labelled with the first run's scenario and load (one policy before and
after a change, or on two loads). Runs of different policies each get a row of
their own, with "-" where a set has no such run.

--report FILE writes an HTML report of the same runs: per scenario and load, a
chart of quality (SLO violations, or p99 where no SLO is set) against cost with
every policy of every set and the frontier marked, and a table of --stats. With
one sweep it shows the frontier across the sweep.`,
		Example: `  shoal runs compare distr-lb distr-lb-again --stats mean,p99,throughput
  shoal runs compare distr-lb --report out/distr-lb-sweep.html`,
		Args: cobra.MinimumNArgs(1),
	}
	cmd.Flags().StringVar(&stats, "stats", "mean,p99", "comma-separated statistics to compare")
	cmd.Flags().StringVar(&reportFile, "report", "", "also write an HTML report of the runs to this file")
	cmd.RunE = cl.action(func(cmd *cobra.Command, args []string) error {
		st, err := openStore(cmd.Context(), *db)
		if err != nil {
			return err
		}
		defer st.Close()
		sets := make([]experiment.RunSet, len(args))
		for i, a := range args {
			sets[i].Name = a
			if sets[i].Runs, err = runSet(cmd.Context(), st, a); err != nil {
				return err
			}
		}
		names := strings.Split(stats, ",")
		if err := writeComparison(cl.stdout, sets, names); err != nil {
			return err
		}
		if reportFile == "" {
			return nil
		}
		meta := []report.KV{{Key: "store", Value: st.Location()}, {Key: "command", Value: "shoal " + strings.Join(cl.args, " ")}}
		if err := report.WriteFile(reportFile, experiment.RunsReport(sets, names, meta)); err != nil {
			return err
		}
		fmt.Fprintf(cl.stdout, "wrote %s\n", reportFile)
		return nil
	})
	return cmd
}

// runSet is a sweep's runs, or the one run an id names.
func runSet(ctx context.Context, st *store.Store, arg string) ([]*store.Run, error) {
	runs, err := st.List(ctx, store.Filter{Sweep: arg})
	if err != nil || len(runs) > 0 {
		return runs, err
	}
	r, err := st.Get(ctx, arg)
	if err != nil {
		return nil, fmt.Errorf("%s is no sweep, and as a run id: %w", arg, err)
	}
	return []*store.Run{r}, nil
}

func writeComparison(out io.Writer, sets []experiment.RunSet, stats []string) error {
	byPoint, order := experiment.LineUp(sets)
	ratio := len(sets) > 1
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	head := []string{"scenario", "load", "policy"}
	for _, s := range stats {
		for _, set := range sets {
			head = append(head, s+" "+set.Name)
		}
		if ratio {
			head = append(head, s+" ratio")
		}
	}
	fmt.Fprintln(w, strings.Join(head, "\t"))
	shared := 0
	for _, p := range order {
		label := p.Policy
		if p.Kind != store.KindSim {
			label += " (" + p.Kind + ")" // a training run beside its policy's evaluations
		}
		row := []string{p.Scenario, fmtLoad(p.Load), label}
		all := true
		for _, s := range stats {
			first, last := store.NoStat, store.NoStat
			for i := range sets {
				r, ok := byPoint[i][p]
				if !ok {
					all = false
					row = append(row, "-")
					continue
				}
				v := store.StatOf(r.Summary, s)
				if i == 0 {
					first = v
				}
				last = v
				row = append(row, fmtStat(v))
			}
			if ratio {
				row = append(row, fmtRatio(last.Mean, first.Mean))
			}
		}
		if all {
			shared++
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if !ratio {
		fmt.Fprintln(out, experiment.Count(len(order), "point"))
		return nil
	}
	fmt.Fprintf(out, "%s, %d in every set; ratio: %s over %s\n", experiment.Count(len(order), "point"), shared, sets[len(sets)-1].Name, sets[0].Name)
	return nil
}

func fmtRatio(a, b float64) string {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "-"
	}
	return strconv.FormatFloat(a/b, 'f', 3, 64)
}

func (cl *cli) runsExport(db *string) *cobra.Command {
	var (
		rf          runFilter
		format, out string
	)
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write recorded runs as JSON or CSV",
		Long: `Write the selected runs with every field and statistic: JSON (an array of runs)
or CSV (a row per run, a column per statistic of the whole run: NAME_mean and
NAME_ci95).`,
		Example: "  shoal runs export --sweep distr-lb --format csv -o runs.csv",
		Args:    cobra.NoArgs,
	}
	rf.register(cmd, 0)
	cmd.Flags().StringVar(&format, "format", "json", "json or csv")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to `FILE` (default: standard output)")
	cmd.RunE = cl.action(func(cmd *cobra.Command, _ []string) error {
		if format != "json" && format != "csv" {
			return usagef("--format %q: want json or csv", format)
		}
		runs, _, err := rf.list(cmd.Context(), *db)
		if err != nil {
			return err
		}
		w := cl.stdout
		if out != "" {
			file, err := os.Create(out)
			if err != nil {
				return err
			}
			defer file.Close()
			w = file
		}
		if format == "csv" {
			err = writeRunsCSV(w, runs)
		} else {
			err = writeRunsJSON(w, runs)
		}
		if err != nil {
			return err
		}
		if out != "" {
			fmt.Fprintf(cl.stderr, "wrote %s to %s\n", experiment.Count(len(runs), "run"), out)
		}
		return nil
	})
	return cmd
}

// toJSONStats is a run's statistics as results.json writes them (NaN and
// infinities as null).
func toJSONStats(m map[string]store.Stat) map[string]experiment.Stat {
	out := map[string]experiment.Stat{}
	for k, v := range m {
		out[k] = experiment.Stat{Mean: experiment.Num(v.Mean), CI95: experiment.Num(v.CI95)}
	}
	return out
}

func writeRunsJSON(w io.Writer, runs []*store.Run) error {
	type class struct {
		Class string                     `json:"class"`
		Stats map[string]experiment.Stat `json:"stats"`
	}
	type run struct {
		ID           string                     `json:"id"`
		Kind         string                     `json:"kind"`
		Scenario     string                     `json:"scenario"`
		ScenarioHash string                     `json:"scenario_hash"`
		Policy       string                     `json:"policy"`
		PolicyHash   string                     `json:"policy_hash,omitempty"`
		RootSeed     uint64                     `json:"root_seed"`
		Seeds        int                        `json:"seeds"`
		Load         float64                    `json:"load,omitempty"`
		CodeVersion  string                     `json:"code_version"`
		Flags        map[string]string          `json:"flags,omitempty"`
		Started      time.Time                  `json:"started"`
		Finished     time.Time                  `json:"finished"`
		Summary      map[string]experiment.Stat `json:"summary"`
		Classes      []class                    `json:"classes,omitempty"`
		Key          string                     `json:"key"`
		Sweep        string                     `json:"sweep,omitempty"`
		Shard        string                     `json:"shard,omitempty"`
	}
	out := make([]run, len(runs))
	for i, r := range runs {
		out[i] = run{r.ID, r.Kind, r.Scenario, r.ScenarioHash, r.Policy, r.PolicyHash, r.RootSeed, r.Seeds, r.Load,
			r.CodeVersion, r.Flags, r.Started, r.Finished, toJSONStats(r.Summary), nil, r.Key, r.Sweep, r.Shard}
		for _, c := range r.Classes {
			out[i].Classes = append(out[i].Classes, class{c.Class, toJSONStats(c.Stats)})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeRunsCSV(w io.Writer, runs []*store.Run) error {
	names := map[string]bool{}
	for _, r := range runs {
		for k := range r.Summary {
			names[k] = true
		}
	}
	stats := slices.Sorted(maps.Keys(names))
	cw := csv.NewWriter(w)
	head := []string{"id", "kind", "scenario", "scenario_hash", "policy", "policy_hash", "load", "root_seed", "seeds",
		"code_version", "started", "finished", "sweep", "shard", "key"}
	for _, s := range stats {
		head = append(head, s+"_mean", s+"_ci95")
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	for _, r := range runs {
		row := []string{r.ID, r.Kind, r.Scenario, r.ScenarioHash, r.Policy, r.PolicyHash, num(r.Load),
			strconv.FormatUint(r.RootSeed, 10), strconv.Itoa(r.Seeds), r.CodeVersion,
			r.Started.Format(time.RFC3339Nano), r.Finished.Format(time.RFC3339Nano), r.Sweep, r.Shard, r.Key}
		for _, s := range stats {
			v, ok := r.Summary[s]
			if !ok {
				row = append(row, "", "")
				continue
			}
			row = append(row, num(v.Mean), num(v.CI95))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// recording is the --db and --no-record flags of a command whose runs the
// store records.
type recording struct {
	db  string
	off bool
}

func (r *recording) register(f *pflag.FlagSet) {
	f.StringVar(&r.db, "db", "", dbHelp)
	f.BoolVar(&r.off, "no-record", false, "do not record the runs in the run store")
}

// template is the part of a command's runs that the command line gives:
// the kind, the code, the flags set and the scenario's hash (sc nil: none).
func (r *recording) template(cmd *cobra.Command, kind string, start time.Time, sc *scenario.Scenario) (store.Run, error) {
	flags := map[string]string{}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name != "db" && f.Name != "no-record" && f.Name != "quiet" && f.Name != "workers" {
			flags[f.Name] = f.Value.String()
		}
	})
	run := store.Run{Kind: kind, CodeVersion: version(), Flags: flags, Started: start, Finished: time.Now()}
	var err error
	if sc != nil {
		run.ScenarioHash, err = experiment.ScenarioHash(sc)
	}
	return run, err
}

// save records runs; a store that cannot take them is a warning, since the
// runs themselves succeeded.
func (r *recording) save(ctx context.Context, cl *cli, runs []*store.Run) {
	if r.off || len(runs) == 0 {
		return
	}
	err := func() error {
		st, err := openStore(ctx, r.db)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, run := range runs {
			if err := st.Record(ctx, run); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		fmt.Fprintf(cl.stderr, "shoal: warning: runs not recorded: %v\n", err)
	}
}
