package experiment

import (
	"math"
	"strconv"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/experiment/report"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/scenario"
)

// Result is a whole comparison: every policy, every seed, and summaries.
type Result struct {
	Scenario    string         `json:"scenario"`
	Description string         `json:"description"`
	RootSeed    uint64         `json:"root_seed"` // run i used RootSeed+i
	Seeds       int            `json:"seeds"`
	Horizon     string         `json:"horizon"`
	Warmup      string         `json:"warmup"`
	Load        float64        `json:"load,omitempty"`
	Policies    []PolicyResult `json:"policies"`
	// Figures are extra figures for the report, e.g. learning curves.
	Figures []report.Figure `json:"-"`
}

// PolicyResult is one policy over all seeds.
type PolicyResult struct {
	Policy  string      `json:"policy"`
	Summary Summary     `json:"summary"`
	Runs    []RunResult `json:"runs"`
	// CDF is the latency distribution of all seeds' requests together.
	CDF []metrics.Point `json:"cdf"`
	// Series is the first seed's load per server over time.
	Series cluster.LoadSeries `json:"-"`
}

// Stat is a mean over seeds with the half-width of its 95% confidence
// interval (Student's t; NaN with one seed).
type Stat struct {
	Mean Num `json:"mean"`
	CI95 Num `json:"ci95"`
}

// Num is a float64 that encodes NaN and infinities as JSON null (for
// example the confidence interval of a single seed, or a percentile of no
// requests).
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	x := float64(n)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, x, 'g', -1, 64), nil
}

// Summary holds the table's figures for one policy. Times are seconds.
type Summary struct {
	Mean       Stat `json:"mean"`
	P50        Stat `json:"p50"`
	P90        Stat `json:"p90"`
	P99        Stat `json:"p99"`
	Throughput Stat `json:"throughput"` // successful requests per second
	Rejected   Stat `json:"rejected"`   // requests rejected (429) or without capacity
	Failed     Stat `json:"failed"`     // requests that failed for any reason
	Fairness   Stat `json:"fairness"`   // Jain's index of server utilisation
	Makespan   Stat `json:"makespan"`   // mean max_j l_j, seconds
}

// RunResult is one policy with one seed.
type RunResult struct {
	Seed       uint64              `json:"seed"`
	Mean       Num                 `json:"mean"`
	P50        Num                 `json:"p50"`
	P90        Num                 `json:"p90"`
	P99        Num                 `json:"p99"`
	Throughput Num                 `json:"throughput"`
	Arrivals   int64               `json:"arrivals"`
	Completed  int64               `json:"completed"`
	Failures   metrics.Failures    `json:"failures"`
	Unfinished int64               `json:"unfinished"`
	Fairness   Num                 `json:"fairness"`
	Makespan   Num                 `json:"makespan"`
	Cost       Num                 `json:"cost"`
	Little     cluster.LittleCheck `json:"little"`
	Events     uint64              `json:"events"`
}

func summarise(sc *scenario.Scenario, policies []string, seeds int, runs [][]*cluster.Results) *Result {
	res := &Result{
		Scenario: sc.Name, Description: sc.Description, RootSeed: sc.Seed, Seeds: seeds,
		Horizon: sc.Horizon.String(), Warmup: sc.Warmup.String(), Load: sc.Load,
	}
	for p, name := range policies {
		pr := PolicyResult{Policy: name, Series: runs[p][0].Series}
		var all metrics.Histogram
		for s, r := range runs[p] {
			all.Merge(&r.Latency)
			pr.Runs = append(pr.Runs, RunResult{
				Seed: sc.Seed + uint64(s), Mean: Num(r.Latency.Mean()), P50: quantile(&r.Latency, 0.5),
				P90: quantile(&r.Latency, 0.9), P99: quantile(&r.Latency, 0.99), Throughput: Num(r.Throughput),
				Arrivals: r.Arrivals, Completed: r.Completed, Failures: r.Failures, Unfinished: r.Unfinished,
				Fairness: Num(r.Fairness), Makespan: Num(r.Makespan), Cost: Num(r.Cost), Little: r.Little, Events: r.Events,
			})
		}
		pr.CDF = all.CDF(nil, 200)
		pr.Summary = summary(pr.Runs)
		res.Policies = append(res.Policies, pr)
	}
	return res
}

func summary(runs []RunResult) Summary {
	stat := func(f func(r *RunResult) float64) Stat {
		xs := make([]float64, len(runs))
		for i := range runs {
			xs[i] = f(&runs[i])
		}
		m, h := metrics.MeanCI(xs, 0.95)
		return Stat{Mean: Num(m), CI95: Num(h)}
	}
	return Summary{
		Mean:       stat(func(r *RunResult) float64 { return float64(r.Mean) }),
		P50:        stat(func(r *RunResult) float64 { return float64(r.P50) }),
		P90:        stat(func(r *RunResult) float64 { return float64(r.P90) }),
		P99:        stat(func(r *RunResult) float64 { return float64(r.P99) }),
		Throughput: stat(func(r *RunResult) float64 { return float64(r.Throughput) }),
		Rejected:   stat(func(r *RunResult) float64 { return float64(r.Failures.Rejected + r.Failures.NoCapacity) }),
		Failed:     stat(func(r *RunResult) float64 { return float64(r.Failures.Total()) }),
		Fairness:   stat(func(r *RunResult) float64 { return float64(r.Fairness) }),
		Makespan:   stat(func(r *RunResult) float64 { return float64(r.Makespan) }),
	}
}

// quantile is a latency percentile, NaN when nothing completed.
func quantile(h *metrics.Histogram, q float64) Num {
	if h.Count() == 0 {
		return Num(math.NaN())
	}
	return Num(h.Quantile(q))
}
