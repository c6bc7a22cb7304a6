package experiment

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/shoal-project/shoal/experiment/report"
)

// column is one column of the summary tables.
type column struct {
	name   string // table header
	key    string // CSV header
	stat   func(s *Summary) Stat
	better int // -1: lower is better, +1: higher is better, 0: neither
	// show says whether the column means something for a result (nil:
	// always); the CSV and JSON files have every column regardless.
	show func(r *Result, c *column) bool
}

// pct shows a fraction as a percentage.
func pct(f func(s *Summary) Stat) func(s *Summary) Stat {
	return func(s *Summary) Stat { return percent(f(s)) }
}

func percent(st Stat) Stat { return Stat{Mean: 100 * st.Mean, CI95: 100 * st.CI95} }

// When a column is shown: where some policy has a value other than zero;
// where the scenario has a load-balancing choice (explicit LB points), or
// services placed in several locations.
var (
	nonZero = func(r *Result, c *column) bool {
		return slices.ContainsFunc(r.Policies, func(p PolicyResult) bool {
			m := float64(c.stat(&p.Summary).Mean)
			return m != 0 && !math.IsNaN(m)
		})
	}
	// degrades: some policy answered requests degraded, and the scenario
	// has an SLO.
	degrades = func(r *Result, _ *column) bool {
		return slices.ContainsFunc(r.Policies, func(p PolicyResult) bool {
			return p.Summary.Degraded.Mean > 0 && !math.IsNaN(float64(p.Summary.SLOOrDegraded.Mean))
		})
	}
	balancing = func(r *Result, _ *column) bool { return r.Balancing }
	placed    = func(r *Result, _ *column) bool { return r.Placement }
)

// tableSpec is one table of the summary.
type tableSpec struct {
	caption string
	columns []column
}

// tables are the summary tables, each a few columns wide: how fast
// requests were served, what became of them, what it cost, and how evenly
// the servers were loaded.
var tables = []tableSpec{
	{"Response time", []column{
		{"mean (s)", "mean_s", func(s *Summary) Stat { return s.Mean }, -1, nil},
		{"p50 (s)", "p50_s", func(s *Summary) Stat { return s.P50 }, -1, nil},
		{"p90 (s)", "p90_s", func(s *Summary) Stat { return s.P90 }, -1, nil},
		{"p99 (s)", "p99_s", func(s *Summary) Stat { return s.P99 }, -1, nil},
		{"throughput (req/s)", "throughput_rps", func(s *Summary) Stat { return s.Throughput }, +1, nil},
	}},
	{"Outcome (% of requests after the warm-up)", []column{
		{"success %", "success_pct", pct(func(s *Summary) Stat { return s.Success }), +1, nil},
		{"SLO violations %", "slo_violations_pct", pct(func(s *Summary) Stat { return s.SLOViolations }), -1, nonZero},
		{"degraded %", "degraded_pct", pct(func(s *Summary) Stat { return s.Degraded }), -1, nonZero},
		{"SLO violations or degraded %", "slo_violations_or_degraded_pct", pct(func(s *Summary) Stat { return s.SLOOrDegraded }), -1, degrades},
		{"retries/req", "retries_per_request", func(s *Summary) Stat { return s.Retries }, 0, nonZero},
		{"probes/req", "probes_per_request", func(s *Summary) Stat { return s.Probes }, 0, nonZero},
	}},
	{"Failures by kind (% of requests after the warm-up)", []column{
		{"timeout %", "timeout_pct", pct(func(s *Summary) Stat { return s.TimeoutRate }), -1, nonZero},
		{"429 %", "rejected_pct", pct(func(s *Summary) Stat { return s.RejectedRate }), -1, nonZero},
		{"OOM %", "oom_pct", pct(func(s *Summary) Stat { return s.OOMRate }), -1, nonZero},
		{"no capacity %", "no_capacity_pct", pct(func(s *Summary) Stat { return s.NoCapacityRate }), -1, nonZero},
		{"shed %", "shed_pct", pct(func(s *Summary) Stat { return s.ShedRate }), -1, nonZero},
	}},
	{"Resources over the measurement window", []column{
		{"vCPU-s", "vcpu_s", func(s *Summary) Stat { return s.VCPUSeconds }, -1, nil},
		{"GB-s", "gb_s", func(s *Summary) Stat { return s.GBSeconds }, -1, nonZero},
		{"egress (GB)", "egress_gb", func(s *Summary) Stat { return s.EgressGB }, -1, placed},
		{"cost ($)", "cost", func(s *Summary) Stat { return s.Cost }, -1, nil},
		{"CPU utilisation %", "cpu_utilisation_pct", pct(func(s *Summary) Stat { return s.Utilisation }), 0, nil},
		{"scaling actions", "scaling_actions", func(s *Summary) Stat { return s.ScalingActions }, 0, nonZero},
		{"refused actions", "refused_actions", func(s *Summary) Stat { return s.Refused }, -1, nonZero},
	}},
	{"Balance across servers", []column{
		{"fairness (Jain)", "fairness_jain", func(s *Summary) Stat { return s.Fairness }, +1, balancing},
		{"makespan (s)", "makespan_s", func(s *Summary) Stat { return s.Makespan }, -1, balancing},
	}},
}

// classColumns are the per-class tables' columns.
var classColumns = []struct {
	name string
	stat func(c *ClassSummary) Stat
}{
	{"mean (s)", func(c *ClassSummary) Stat { return c.Mean }},
	{"p50 (s)", func(c *ClassSummary) Stat { return c.P50 }},
	{"p90 (s)", func(c *ClassSummary) Stat { return c.P90 }},
	{"p99 (s)", func(c *ClassSummary) Stat { return c.P99 }},
	{"success %", func(c *ClassSummary) Stat { return percent(c.Success) }},
	{"degraded %", func(c *ClassSummary) Stat { return percent(c.Degraded) }},
	{"SLO violations %", func(c *ClassSummary) Stat { return percent(c.SLOViolations) }},
}

// allColumns are the columns of every table.
func allColumns() []column {
	var cs []column
	for _, t := range tables {
		cs = append(cs, t.columns...)
	}
	return cs
}

// shown are the tables' columns that mean something for r; a table with
// none is left out.
func (r *Result) shown() []tableSpec {
	var out []tableSpec
	for _, t := range tables {
		spec := tableSpec{caption: t.caption}
		for i := range t.columns {
			if c := &t.columns[i]; c.show == nil || c.show(r, c) {
				spec.columns = append(spec.columns, *c)
			}
		}
		if len(spec.columns) > 0 {
			out = append(out, spec)
		}
	}
	return out
}

// cell formats a statistic as "mean ± ci" with 4 significant digits, whole
// numbers from 1000 with thousands separators; an interval of zero (every
// seed gave the same) is left out.
func cell(s Stat) string {
	m, h := float64(s.Mean), float64(s.CI95)
	if math.IsNaN(m) {
		return "-"
	}
	if math.IsNaN(h) || h == 0 {
		return fmtNum(m)
	}
	if h >= 10 && h < 1e15 { // two significant digits, as a whole number
		unit := math.Pow(10, math.Floor(math.Log10(h))-1)
		return fmtNum(m) + " ± " + grouped(math.Round(h/unit)*unit)
	}
	return fmtNum(m) + " ± " + strconv.FormatFloat(h, 'g', 2, 64)
}

func fmtNum(x float64) string {
	switch {
	case math.Abs(x) >= 1000 && math.Abs(x) < 1e15:
		return grouped(math.Round(x))
	case x != 0 && math.Abs(x) < 1e-3:
		return strconv.FormatFloat(x, 'e', 3, 64)
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// grouped formats a whole number with commas between groups of three
// digits: 1409000 as "1,409,000".
func grouped(x float64) string {
	digits := strconv.FormatFloat(math.Abs(x), 'f', 0, 64)
	var b strings.Builder
	if x < 0 {
		b.WriteByte('-')
	}
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String()
}

// Count is n and the noun, singular for one: "1 seed", "3 seeds",
// "2 policies".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])) {
		return fmt.Sprintf("%d %sies", n, noun[:len(noun)-1])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Header is a one-line description of the comparison.
func (r *Result) Header() string {
	h := fmt.Sprintf("%s: %s (root seed %d), horizon %s, warm-up %s", r.Scenario, Count(r.Seeds, "seed"), r.RootSeed, r.Horizon, r.Warmup)
	if r.Load > 0 {
		h += fmt.Sprintf(", load %g", r.Load)
	}
	return h + "; ± is the 95% confidence interval over seeds"
}

// WriteTable prints the summary tables as aligned text, and the per-class
// table when there are several classes.
func (r *Result) WriteTable(w io.Writer) error {
	fmt.Fprintln(w, r.Header())
	for _, t := range r.shown() {
		fmt.Fprintln(w)
		fmt.Fprintln(w, t.caption)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, "policy")
		for _, c := range t.columns {
			fmt.Fprint(tw, "\t", c.name)
		}
		fmt.Fprintln(tw)
		for i := range r.Policies {
			p := &r.Policies[i]
			fmt.Fprint(tw, p.Policy)
			for _, c := range t.columns {
				fmt.Fprint(tw, "\t", cell(c.stat(&p.Summary)))
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if r.severalClasses() {
		if err := r.writeClassTable(w); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	_, err := fmt.Fprintln(w, Verdict(r.points()))
	return err
}

// points are the policies in the quality-cost plane.
func (r *Result) points() []Point {
	pts := make([]Point, len(r.Policies))
	for i := range r.Policies {
		pts[i] = Point{r.Policies[i].Policy, r.Policies[i].Summary}
	}
	return pts
}

// writeClassTable prints the per-class table.
func (r *Result) writeClassTable(w io.Writer) error {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Per request class")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "class\tpolicy")
	for _, c := range classColumns {
		fmt.Fprint(tw, "\t", c.name)
	}
	fmt.Fprintln(tw)
	for _, row := range r.classRows() {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

func (r *Result) severalClasses() bool { return len(r.Policies) > 0 && len(r.Policies[0].Classes) > 1 }

// classRows are the per-class table's rows, by class then policy.
func (r *Result) classRows() [][]string {
	var rows [][]string
	for k := range r.Policies[0].Classes {
		for i := range r.Policies {
			c := &r.Policies[i].Classes[k]
			name := c.Class
			if c.SLO > 0 {
				name += fmt.Sprintf(" (SLO %gs)", c.SLO)
			}
			rows = append(rows, append([]string{name}, r.classRow(k, i)...))
		}
	}
	return rows
}

// WriteJSON writes the whole result as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteRunsCSV writes one row per (policy, seed).
func (r *Result) WriteRunsCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"scenario", "policy", "seed", "mean_s", "p50_s", "p90_s", "p99_s", "throughput_rps",
		"arrivals", "completed", "degraded", "timeouts", "rejected", "oom", "no_capacity", "shed", "unfinished", "retries", "probes", "slo_violations", "slo_violations_or_degraded", "slo_requests",
		"vcpu_s", "gb_s", "busy_cpu_s", "cost", "scaling_actions", "refused_actions", "fairness_jain", "makespan_s", "events"})
	f := func(x Num) string { return strconv.FormatFloat(float64(x), 'g', -1, 64) }
	i := func(x int64) string { return strconv.FormatInt(x, 10) }
	for _, p := range r.Policies {
		for _, run := range p.Runs {
			cw.Write([]string{r.Scenario, p.Policy, strconv.FormatUint(run.Seed, 10), f(run.Mean), f(run.P50), f(run.P90), f(run.P99),
				f(run.Throughput), i(run.Arrivals), i(run.Completed), i(run.Degraded), i(run.Failures.Timeout), i(run.Failures.Rejected),
				i(run.Failures.OOM), i(run.Failures.NoCapacity), i(run.Failures.Shed), i(run.Unfinished), i(run.Retries), i(run.Probes), i(run.SLOViolations), i(run.SLOOrDegraded), i(run.SLORequests),
				f(run.VCPUSeconds), f(run.GBSeconds), f(run.BusyCPUSeconds), f(run.Cost), strconv.Itoa(run.ScalingActions), i(run.Refused),
				f(run.Fairness), f(run.Makespan), strconv.FormatUint(run.Events, 10)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteClassesCSV writes one row per (policy, seed, class).
func (r *Result) WriteClassesCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"scenario", "policy", "seed", "class", "arrivals", "completed", "degraded", "timeouts", "rejected", "oom", "no_capacity", "shed",
		"slo_violations", "mean_s", "p50_s", "p90_s", "p99_s"})
	f := func(x Num) string { return strconv.FormatFloat(float64(x), 'g', -1, 64) }
	i := func(x int64) string { return strconv.FormatInt(x, 10) }
	for _, p := range r.Policies {
		for _, run := range p.Runs {
			for _, c := range run.Classes {
				cw.Write([]string{r.Scenario, p.Policy, strconv.FormatUint(run.Seed, 10), c.Class, i(c.Arrivals), i(c.Completed),
					i(c.Degraded), i(c.Failures.Timeout), i(c.Failures.Rejected), i(c.Failures.OOM), i(c.Failures.NoCapacity), i(c.Failures.Shed), i(c.SLOViolations),
					f(c.Mean), f(c.P50), f(c.P90), f(c.P99)})
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteScalingCSV writes every action that changed a service, with the
// service's configuration after it, one row per (policy, seed, action).
func (r *Result) WriteScalingCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"scenario", "policy", "seed", "time_s", "service", "replicas", "cpu", "memory_mb", "concurrency", "brownout"})
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	for _, p := range r.Policies {
		for _, run := range p.Runs {
			for _, e := range run.Scaling {
				cw.Write([]string{r.Scenario, p.Policy, strconv.FormatUint(run.Seed, 10), f(e.At.Seconds()), e.Service,
					strconv.Itoa(e.Replicas), f(e.CPU), f(e.MemoryMB), strconv.Itoa(e.Concurrency), strconv.FormatBool(e.Brownout)})
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteSummaryCSV writes one row per policy: each statistic's mean and CI.
func (r *Result) WriteSummaryCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"scenario", "policy", "seeds", "root_seed"}
	for _, c := range allColumns() {
		head = append(head, c.key, c.key+"_ci95")
	}
	cw.Write(head)
	for i := range r.Policies {
		p := &r.Policies[i]
		row := []string{r.Scenario, p.Policy, strconv.Itoa(r.Seeds), strconv.FormatUint(r.RootSeed, 10)}
		for _, c := range allColumns() {
			s := c.stat(&p.Summary)
			row = append(row, strconv.FormatFloat(float64(s.Mean), 'g', -1, 64), strconv.FormatFloat(float64(s.CI95), 'g', -1, 64))
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// Report builds the HTML report: the summary chart of quality against
// cost, the tables that mean something for the scenario, per-class tables
// folded, the latency CDF, the load per server where a balancer chooses,
// and the figures over time.
func (r *Result) Report(meta []report.KV) *report.Report {
	rep := &report.Report{
		Title:    "Shoal: " + r.Scenario,
		Subtitle: r.Description,
		Meta: append([]report.KV{
			{Key: "scenario", Value: r.Scenario},
			{Key: "seeds", Value: fmt.Sprintf("%d (root seed %d; run i uses seed %d+i)", r.Seeds, r.RootSeed, r.RootSeed)},
			{Key: "horizon", Value: r.Horizon},
			{Key: "warm-up", Value: r.Warmup},
			{Key: "±", Value: "the 95% confidence interval over seeds"},
		}, meta...),
	}
	if r.Load > 0 {
		rep.Meta = append(rep.Meta, report.KV{Key: "load", Value: strconv.FormatFloat(r.Load, 'g', -1, 64)})
	}
	rep.Summary = append(rep.Summary, QualityCost("Which policy, at what cost", r.points()))
	for _, spec := range r.shown() {
		t := report.Table{Caption: spec.caption, Columns: []string{"policy"}}
		t.Highlight = []int{-1}
		for _, c := range spec.columns {
			t.Columns = append(t.Columns, c.name)
			t.Highlight = append(t.Highlight, r.best(c))
		}
		for i := range r.Policies {
			row := []string{r.Policies[i].Policy}
			for _, c := range spec.columns {
				row = append(row, cell(c.stat(&r.Policies[i].Summary)))
			}
			t.Rows = append(t.Rows, row)
		}
		rep.Tables = append(rep.Tables, t)
	}
	if r.severalClasses() {
		rep.Tables = append(rep.Tables, r.classTables()...)
	}

	cdf := report.Figure{Title: "Completion time distribution (all seeds)", XLabel: "completion time (s)", YLabel: "fraction of requests", Kind: report.KindStep, LogX: true}
	for _, p := range r.Policies {
		s := report.Series{Name: p.Policy}
		for _, pt := range p.CDF {
			s.X = append(s.X, pt.X)
			s.Y = append(s.Y, pt.Y)
		}
		cdf.Series = append(cdf.Series, s)
	}
	rep.Figures = append(rep.Figures, cdf)
	if r.Balancing {
		rep.Figures = append(rep.Figures, r.loadFigure())
	}
	rep.Figures = append(rep.Figures, r.timeFigures()...)
	rep.Figures = append(rep.Figures, r.Figures...)
	return rep
}

// classTables are the per-class tables, one per class, folded.
func (r *Result) classTables() []report.Table {
	var out []report.Table
	for k, c := range r.Policies[0].Classes {
		caption := "Request class " + c.Class
		if c.SLO > 0 {
			caption += fmt.Sprintf(" (SLO %g s)", c.SLO)
		}
		t := report.Table{Caption: caption, Columns: []string{"policy"}, Collapsed: true}
		for _, col := range classColumns {
			t.Columns = append(t.Columns, col.name)
		}
		for i := range r.Policies {
			t.Rows = append(t.Rows, r.classRow(k, i))
		}
		out = append(out, t)
	}
	return out
}

// classRow is policy i's row of class k: its name and its cells.
func (r *Result) classRow(k, i int) []string {
	row := []string{r.Policies[i].Policy}
	for _, col := range classColumns {
		row = append(row, cell(col.stat(&r.Policies[i].Classes[k])))
	}
	return row
}

// loadFigure is the requests in flight per server over time, one panel
// per policy.
func (r *Result) loadFigure() report.Figure {
	load := report.Figure{Title: "Requests in flight per server over time (first seed)", XLabel: "time (s)", YLabel: "requests in flight", LogY: true,
		Caption: "Calls admitted at each server, averaged over windows of 1/100 of the run; one line per server (log scale)."}
	for _, p := range r.Policies {
		panel := report.Figure{Title: p.Policy}
		for j, name := range p.Series.Names {
			x, y := windowMeans(p.Series.Times, p.Series.InFlight[j], 100)
			panel.Series = append(panel.Series, report.Series{Name: name, X: x, Y: y})
		}
		load.Panels = append(load.Panels, panel)
	}
	return load
}

// best is the index of the policy with the best mean in a column, or -1
// when the column has no better direction or every policy is level.
func (r *Result) best(c column) int {
	best, level := -1, true
	for i := range r.Policies {
		m := float64(c.stat(&r.Policies[i].Summary).Mean)
		if math.IsNaN(m) || c.better == 0 {
			continue
		}
		if best >= 0 && m != float64(c.stat(&r.Policies[best].Summary).Mean) {
			level = false
		}
		if best < 0 || float64(c.better)*(m-float64(c.stat(&r.Policies[best].Summary).Mean)) > 0 {
			best = i
		}
	}
	if level {
		return -1
	}
	return best
}

// WriteFiles writes results.json, runs.csv, summary.csv, classes.csv,
// scaling.csv and report.html
// into dir, creating it.
func (r *Result) WriteFiles(dir string, meta []report.KV) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"results.json", r.WriteJSON},
		{"runs.csv", r.WriteRunsCSV},
		{"summary.csv", r.WriteSummaryCSV},
		{"classes.csv", r.WriteClassesCSV},
		{"scaling.csv", r.WriteScalingCSV},
		{"report.html", func(w io.Writer) error { return report.Write(w, r.Report(meta)) }},
	} {
		if err := writeFile(filepath.Join(dir, f.name), f.write); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
