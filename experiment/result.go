package experiment

import (
	"math"
	"slices"
	"strconv"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/experiment/report"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/scenario"
)

// Result is a whole comparison: every policy, every seed, and summaries.
type Result struct {
	Scenario    string  `json:"scenario"`
	Description string  `json:"description"`
	RootSeed    uint64  `json:"root_seed"` // run i used RootSeed+i
	Seeds       int     `json:"seeds"`
	Horizon     string  `json:"horizon"`
	Warmup      string  `json:"warmup"`
	Load        float64 `json:"load,omitempty"`
	// Balancing: the scenario has explicit LB points, so the policies
	// choose servers; Placement: it places services in several locations.
	// They decide which measures the tables show.
	Balancing bool           `json:"balancing"`
	Placement bool           `json:"placement"`
	Policies  []PolicyResult `json:"policies"`
	// Figures are extra figures for the report, e.g. learning curves.
	Figures []report.Figure `json:"-"`
}

// PolicyResult is one policy over all seeds.
type PolicyResult struct {
	Policy  string      `json:"policy"`
	Summary Summary     `json:"summary"`
	Runs    []RunResult `json:"runs"`
	// Classes summarise each request class over the seeds.
	Classes []ClassSummary `json:"classes"`
	// CDF is the latency distribution of all seeds' requests together.
	CDF []metrics.Point `json:"cdf"`
	// Series is the first seed's load per server over time; Services and
	// Requests are its services and requests over time (at Series.Times).
	Series   cluster.LoadSeries      `json:"-"`
	Services []cluster.ServiceResult `json:"-"`
	Requests cluster.RequestSeries   `json:"-"`
}

// ClassSummary is one request class over all seeds.
type ClassSummary struct {
	Class string `json:"class"`
	// SLO is the class's response-time target, seconds (0 = none).
	SLO           float64 `json:"slo_s"`
	Mean          Stat    `json:"mean"`
	P50           Stat    `json:"p50"`
	P90           Stat    `json:"p90"`
	P99           Stat    `json:"p99"`
	Success       Stat    `json:"success"`        // fraction of the class's requests completed
	Degraded      Stat    `json:"degraded"`       // fraction completed without some optional call
	SLOViolations Stat    `json:"slo_violations"` // fraction not completed within the SLO
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

// Summary holds the table's figures for one policy. Times are seconds;
// rates are fractions of the requests that arrived after the warm-up.
type Summary struct {
	Mean       Stat `json:"mean"`
	P50        Stat `json:"p50"`
	P90        Stat `json:"p90"`
	P99        Stat `json:"p99"`
	Throughput Stat `json:"throughput"` // successful requests per second
	Rejected   Stat `json:"rejected"`   // requests rejected (429), without capacity, or shed
	Failed     Stat `json:"failed"`     // requests that failed for any reason
	Success    Stat `json:"success"`    // fraction completed successfully
	// Degraded is the fraction completed without some optional call
	// (browned out, or failed); they count as successes too.
	Degraded Stat `json:"degraded"`
	// Retries is the number of retried calls per request.
	Retries Stat `json:"retries_per_request"`
	// Probes is the number of load probes sent per request.
	Probes Stat `json:"probes_per_request"`
	// Failure rates by kind.
	TimeoutRate    Stat `json:"timeout_rate"`
	RejectedRate   Stat `json:"rejected_rate"` // 429
	OOMRate        Stat `json:"oom_rate"`
	NoCapacityRate Stat `json:"no_capacity_rate"`
	ShedRate       Stat `json:"shed_rate"` // shed by an LB point's admission: a 503
	// SLOViolations is the fraction of the requests of classes with an SLO
	// not completed successfully within it: failed, slower, or unfinished
	// (NaN: no class has one).
	SLOViolations Stat `json:"slo_violations"`
	// SLOOrDegraded counts a degraded request as a violation too: the
	// quality of a policy that browns services out.
	SLOOrDegraded Stat `json:"slo_violations_or_degraded"`
	// Resources over the measurement window.
	VCPUSeconds    Stat `json:"vcpu_seconds"`
	GBSeconds      Stat `json:"gb_seconds"`
	EgressGB       Stat `json:"egress_gb"` // sent between locations
	Cost           Stat `json:"cost"`
	Utilisation    Stat `json:"utilisation"`     // CPU used / CPU allocated
	ScalingActions Stat `json:"scaling_actions"` // actions that changed a service
	Refused        Stat `json:"refused_actions"` // actions the world refused, skipped
	Fairness       Stat `json:"fairness"`        // Jain's index of server utilisation
	Makespan       Stat `json:"makespan"`        // mean max_j l_j, seconds
}

// RunResult is one policy with one seed.
type RunResult struct {
	Seed       uint64           `json:"seed"`
	Mean       Num              `json:"mean"`
	P50        Num              `json:"p50"`
	P90        Num              `json:"p90"`
	P99        Num              `json:"p99"`
	Throughput Num              `json:"throughput"`
	Arrivals   int64            `json:"arrivals"`
	Completed  int64            `json:"completed"`
	Degraded   int64            `json:"degraded"` // of the completed, those without some optional call
	Failures   metrics.Failures `json:"failures"`
	Unfinished int64            `json:"unfinished"`
	Retries    int64            `json:"retries"` // calls sent again, over the whole run
	Probes     int64            `json:"probes"`  // load probes sent after the warm-up
	// SLOViolations of SLORequests requests of classes with an SLO.
	SLOViolations int64 `json:"slo_violations"`
	SLOOrDegraded int64 `json:"slo_violations_or_degraded"`
	SLORequests   int64 `json:"slo_requests"`
	// Refused counts the controllers' actions the world refused and the
	// run skipped; FirstRefusal says why the first was.
	Refused        int64               `json:"refused_actions"`
	FirstRefusal   string              `json:"first_refusal,omitempty"`
	VCPUSeconds    Num                 `json:"vcpu_seconds"`
	GBSeconds      Num                 `json:"gb_seconds"`
	EgressGB       Num                 `json:"egress_gb"`
	BusyCPUSeconds Num                 `json:"busy_cpu_seconds"`
	Cost           Num                 `json:"cost"`
	ScalingActions int                 `json:"scaling_actions"`
	Fairness       Num                 `json:"fairness"`
	Makespan       Num                 `json:"makespan"`
	Little         cluster.LittleCheck `json:"little"`
	Events         uint64              `json:"events"`
	Classes        []ClassRun          `json:"classes"`
	// Scaling lists the actions that changed a service (scaling.csv).
	Scaling []cluster.ScaleEvent `json:"-"`
}

// ClassRun is one request class in one run.
type ClassRun struct {
	Class         string           `json:"class"`
	Arrivals      int64            `json:"arrivals"`
	Completed     int64            `json:"completed"`
	Degraded      int64            `json:"degraded"`
	Failures      metrics.Failures `json:"failures"`
	SLOViolations int64            `json:"slo_violations"`
	Mean          Num              `json:"mean"`
	P50           Num              `json:"p50"`
	P90           Num              `json:"p90"`
	P99           Num              `json:"p99"`
}

func summarise(sc *scenario.Scenario, policies []string, seeds int, runs [][]*cluster.Results) *Result {
	res := &Result{
		Scenario: sc.Name, Description: sc.Description, RootSeed: sc.Seed, Seeds: seeds,
		Horizon: sc.Horizon.String(), Warmup: sc.Warmup.String(), Load: sc.Load,
		Balancing: len(sc.LBs) > 0,
		Placement: slices.ContainsFunc(sc.Services, func(s cluster.Service) bool { return len(s.Placement) > 0 }),
	}
	for p, name := range policies {
		first := runs[p][0]
		pr := PolicyResult{Policy: name, Series: first.Series, Services: first.Services, Requests: first.Requests}
		var all metrics.Histogram
		for s, r := range runs[p] {
			all.Merge(&r.Latency)
			pr.Runs = append(pr.Runs, runResult(sc, sc.Seed+uint64(s), r))
		}
		pr.CDF = all.CDF(nil, 200)
		pr.Summary = summary(pr.Runs)
		pr.Classes = classSummaries(first.Classes, pr.Runs)
		res.Policies = append(res.Policies, pr)
	}
	return res
}

func runResult(sc *scenario.Scenario, seed uint64, r *cluster.Results) RunResult {
	vcpu, gb, busy := r.Resources()
	run := RunResult{
		Seed: seed, Mean: Num(r.Latency.Mean()), P50: quantile(&r.Latency, 0.5),
		P90: quantile(&r.Latency, 0.9), P99: quantile(&r.Latency, 0.99), Throughput: Num(r.Throughput),
		Arrivals: r.Arrivals, Completed: r.Completed, Degraded: r.Degraded, Failures: r.Failures, Unfinished: r.Unfinished, Retries: r.Retries(), Probes: r.Probes,
		SLOViolations: r.SLOViolations(), SLOOrDegraded: r.SLOViolationsOrDegraded(), SLORequests: r.SLOArrivals(),
		Refused: r.Refused, FirstRefusal: r.FirstRefusal,
		VCPUSeconds: Num(vcpu), GBSeconds: Num(gb), EgressGB: Num(r.EgressGB), BusyCPUSeconds: Num(busy), Cost: Num(r.Cost),
		ScalingActions: r.ScalingActions(sc.Warmup), Scaling: r.Scaling,
		Fairness: Num(r.Fairness), Makespan: Num(r.Makespan), Little: r.Little, Events: r.Events,
	}
	for i := range r.Classes {
		c := &r.Classes[i]
		run.Classes = append(run.Classes, ClassRun{
			Class: c.Name, Arrivals: c.Arrivals, Completed: c.Completed(), Degraded: c.Degraded, Failures: c.Failures, SLOViolations: c.SLOViolations(),
			Mean: Num(c.Latency.Mean()), P50: quantile(&c.Latency, 0.5), P90: quantile(&c.Latency, 0.9), P99: quantile(&c.Latency, 0.99),
		})
	}
	return run
}

// meanCI is a statistic's mean over runs and its 95% confidence interval.
func meanCI[R any](runs []R, f func(r *R) float64) Stat {
	xs := make([]float64, len(runs))
	for i := range runs {
		xs[i] = f(&runs[i])
	}
	m, h := metrics.MeanCI(xs, 0.95)
	return Stat{Mean: Num(m), CI95: Num(h)}
}

// frac is a / b, NaN when b is 0.
func frac(a, b int64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

func summary(runs []RunResult) Summary {
	stat := func(f func(r *RunResult) float64) Stat { return meanCI(runs, f) }
	rate := func(f func(r *RunResult) int64) Stat {
		return stat(func(r *RunResult) float64 { return frac(f(r), r.Arrivals) })
	}
	return Summary{
		Mean:           stat(func(r *RunResult) float64 { return float64(r.Mean) }),
		P50:            stat(func(r *RunResult) float64 { return float64(r.P50) }),
		P90:            stat(func(r *RunResult) float64 { return float64(r.P90) }),
		P99:            stat(func(r *RunResult) float64 { return float64(r.P99) }),
		Throughput:     stat(func(r *RunResult) float64 { return float64(r.Throughput) }),
		Rejected:       stat(func(r *RunResult) float64 { f := r.Failures; return float64(f.Rejected + f.NoCapacity + f.Shed) }),
		Failed:         stat(func(r *RunResult) float64 { return float64(r.Failures.Total()) }),
		Success:        rate(func(r *RunResult) int64 { return r.Completed }),
		Degraded:       rate(func(r *RunResult) int64 { return r.Degraded }),
		Retries:        rate(func(r *RunResult) int64 { return r.Retries }),
		Probes:         rate(func(r *RunResult) int64 { return r.Probes }),
		TimeoutRate:    rate(func(r *RunResult) int64 { return r.Failures.Timeout }),
		RejectedRate:   rate(func(r *RunResult) int64 { return r.Failures.Rejected }),
		OOMRate:        rate(func(r *RunResult) int64 { return r.Failures.OOM }),
		NoCapacityRate: rate(func(r *RunResult) int64 { return r.Failures.NoCapacity }),
		ShedRate:       rate(func(r *RunResult) int64 { return r.Failures.Shed }),
		SLOViolations:  stat(func(r *RunResult) float64 { return frac(r.SLOViolations, r.SLORequests) }),
		SLOOrDegraded:  stat(func(r *RunResult) float64 { return frac(r.SLOOrDegraded, r.SLORequests) }),
		VCPUSeconds:    stat(func(r *RunResult) float64 { return float64(r.VCPUSeconds) }),
		GBSeconds:      stat(func(r *RunResult) float64 { return float64(r.GBSeconds) }),
		EgressGB:       stat(func(r *RunResult) float64 { return float64(r.EgressGB) }),
		Cost:           stat(func(r *RunResult) float64 { return float64(r.Cost) }),
		Utilisation:    stat(func(r *RunResult) float64 { return float64(r.BusyCPUSeconds / r.VCPUSeconds) }),
		ScalingActions: stat(func(r *RunResult) float64 { return float64(r.ScalingActions) }),
		Refused:        stat(func(r *RunResult) float64 { return float64(r.Refused) }),
		Fairness:       stat(func(r *RunResult) float64 { return float64(r.Fairness) }),
		Makespan:       stat(func(r *RunResult) float64 { return float64(r.Makespan) }),
	}
}

// classSummaries summarises each class over the runs.
func classSummaries(classes []cluster.ClassResult, runs []RunResult) []ClassSummary {
	out := make([]ClassSummary, len(classes))
	for k := range classes {
		stat := func(f func(c *ClassRun) float64) Stat {
			return meanCI(runs, func(r *RunResult) float64 { return f(&r.Classes[k]) })
		}
		out[k] = ClassSummary{
			Class: classes[k].Name, SLO: classes[k].SLO.Seconds(),
			Mean:     stat(func(c *ClassRun) float64 { return float64(c.Mean) }),
			P50:      stat(func(c *ClassRun) float64 { return float64(c.P50) }),
			P90:      stat(func(c *ClassRun) float64 { return float64(c.P90) }),
			P99:      stat(func(c *ClassRun) float64 { return float64(c.P99) }),
			Success:  stat(func(c *ClassRun) float64 { return frac(c.Completed, c.Arrivals) }),
			Degraded: stat(func(c *ClassRun) float64 { return frac(c.Degraded, c.Arrivals) }),
			SLOViolations: stat(func(c *ClassRun) float64 {
				if classes[k].SLO == 0 {
					return math.NaN()
				}
				return frac(c.SLOViolations, c.Arrivals)
			}),
		}
	}
	return out
}

// quantile is a latency percentile, NaN when nothing completed.
func quantile(h *metrics.Histogram, q float64) Num {
	if h.Count() == 0 {
		return Num(math.NaN())
	}
	return Num(h.Quantile(q))
}
