package experiment

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"

	"github.com/shoal-project/shoal/experiment/report"
)

// column is one column of the summary table.
type column struct {
	name   string // table header
	key    string // CSV header
	stat   func(s *Summary) Stat
	better int // -1: lower is better, +1: higher is better, 0: neither
}

var columns = []column{
	{"mean (s)", "mean_s", func(s *Summary) Stat { return s.Mean }, -1},
	{"p50 (s)", "p50_s", func(s *Summary) Stat { return s.P50 }, -1},
	{"p90 (s)", "p90_s", func(s *Summary) Stat { return s.P90 }, -1},
	{"p99 (s)", "p99_s", func(s *Summary) Stat { return s.P99 }, -1},
	{"throughput (req/s)", "throughput_rps", func(s *Summary) Stat { return s.Throughput }, +1},
	{"rejected", "rejected", func(s *Summary) Stat { return s.Rejected }, -1},
	{"fairness (Jain)", "fairness_jain", func(s *Summary) Stat { return s.Fairness }, +1},
	{"makespan (s)", "makespan_s", func(s *Summary) Stat { return s.Makespan }, -1},
}

// cell formats a statistic as "mean ± ci" with 4 significant digits.
func cell(s Stat) string {
	m, h := float64(s.Mean), float64(s.CI95)
	if math.IsNaN(m) {
		return "-"
	}
	if math.IsNaN(h) {
		return fmtNum(m)
	}
	return fmtNum(m) + " ± " + strconv.FormatFloat(h, 'g', 2, 64)
}

func fmtNum(x float64) string {
	if x != 0 && (math.Abs(x) >= 1e5 || math.Abs(x) < 1e-3) {
		return strconv.FormatFloat(x, 'e', 3, 64)
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// Header is a one-line description of the comparison.
func (r *Result) Header() string {
	h := fmt.Sprintf("%s: %d seeds (root seed %d), horizon %s, warm-up %s", r.Scenario, r.Seeds, r.RootSeed, r.Horizon, r.Warmup)
	if r.Load > 0 {
		h += fmt.Sprintf(", load %g", r.Load)
	}
	return h + "; ± is the 95% confidence interval over seeds"
}

// WriteTable prints the summary table as aligned text.
func (r *Result) WriteTable(w io.Writer) error {
	fmt.Fprintln(w, r.Header())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "policy")
	for _, c := range columns {
		fmt.Fprint(tw, "\t", c.name)
	}
	fmt.Fprintln(tw)
	for i := range r.Policies {
		p := &r.Policies[i]
		fmt.Fprint(tw, p.Policy)
		for _, c := range columns {
			fmt.Fprint(tw, "\t", cell(c.stat(&p.Summary)))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
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
		"arrivals", "completed", "timeouts", "rejected", "oom", "no_capacity", "unfinished", "fairness_jain", "makespan_s", "cost", "events"})
	f := func(x Num) string { return strconv.FormatFloat(float64(x), 'g', -1, 64) }
	i := func(x int64) string { return strconv.FormatInt(x, 10) }
	for _, p := range r.Policies {
		for _, run := range p.Runs {
			cw.Write([]string{r.Scenario, p.Policy, strconv.FormatUint(run.Seed, 10), f(run.Mean), f(run.P50), f(run.P90), f(run.P99),
				f(run.Throughput), i(run.Arrivals), i(run.Completed), i(run.Failures.Timeout), i(run.Failures.Rejected),
				i(run.Failures.OOM), i(run.Failures.NoCapacity), i(run.Unfinished), f(run.Fairness), f(run.Makespan), f(run.Cost),
				strconv.FormatUint(run.Events, 10)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteSummaryCSV writes one row per policy: each statistic's mean and CI.
func (r *Result) WriteSummaryCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"scenario", "policy", "seeds", "root_seed"}
	for _, c := range columns {
		head = append(head, c.key, c.key+"_ci95")
	}
	cw.Write(head)
	for i := range r.Policies {
		p := &r.Policies[i]
		row := []string{r.Scenario, p.Policy, strconv.Itoa(r.Seeds), strconv.FormatUint(r.RootSeed, 10)}
		for _, c := range columns {
			s := c.stat(&p.Summary)
			row = append(row, strconv.FormatFloat(float64(s.Mean), 'g', -1, 64), strconv.FormatFloat(float64(s.CI95), 'g', -1, 64))
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// Report builds the HTML report: the table, the latency CDF per policy and
// the load per server over time.
func (r *Result) Report(meta []report.KV) *report.Report {
	rep := &report.Report{
		Title:    "Shoal: " + r.Scenario,
		Subtitle: r.Description,
		Meta: append([]report.KV{
			{Key: "scenario", Value: r.Scenario},
			{Key: "seeds", Value: fmt.Sprintf("%d (root seed %d; run i uses seed %d+i)", r.Seeds, r.RootSeed, r.RootSeed)},
			{Key: "horizon", Value: r.Horizon},
			{Key: "warm-up", Value: r.Warmup},
		}, meta...),
	}
	if r.Load > 0 {
		rep.Meta = append(rep.Meta, report.KV{Key: "load", Value: strconv.FormatFloat(r.Load, 'g', -1, 64)})
	}
	t := report.Table{Caption: "Completion time and balance by policy (± is the 95% confidence interval over seeds)", Columns: []string{"policy"}}
	t.Highlight = []int{-1}
	for _, c := range columns {
		t.Columns = append(t.Columns, c.name)
		t.Highlight = append(t.Highlight, r.best(c))
	}
	for i := range r.Policies {
		row := []string{r.Policies[i].Policy}
		for _, c := range columns {
			row = append(row, cell(c.stat(&r.Policies[i].Summary)))
		}
		t.Rows = append(t.Rows, row)
	}
	rep.Tables = append(rep.Tables, t)

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
	rep.Figures = append(rep.Figures, load)
	rep.Figures = append(rep.Figures, r.Figures...)
	return rep
}

// windowMeans averages a time series over about n equal windows, returning
// each window's end time and mean.
func windowMeans(t, v []float64, n int) (x, y []float64) {
	w := max(1, (len(t)+n-1)/n)
	for i := 0; i < len(t) && i < len(v); i += w {
		end := min(i+w, len(t), len(v))
		sum := 0.0
		for _, e := range v[i:end] {
			sum += e
		}
		x = append(x, t[end-1])
		y = append(y, sum/float64(end-i))
	}
	return x, y
}

// best is the index of the policy with the best mean in a column, or -1.
func (r *Result) best(c column) int {
	best := -1
	for i := range r.Policies {
		m := float64(c.stat(&r.Policies[i].Summary).Mean)
		if math.IsNaN(m) || c.better == 0 {
			continue
		}
		if best < 0 || float64(c.better)*(m-float64(c.stat(&r.Policies[best].Summary).Mean)) > 0 {
			best = i
		}
	}
	return best
}

// WriteFiles writes results.json, runs.csv, summary.csv and report.html
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
