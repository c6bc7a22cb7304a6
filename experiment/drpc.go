package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/scenario"
	"gonum.org/v1/gonum/mat"
)

// DRPCTeacher runs a trained DRPC policy's central teacher alone: it
// decides for every deployment at every period (the paper's centralised
// comparison, Fig. 3d), through the same guard rails and fallback.
func DRPCTeacher(p *drpc.Policy, sc *scenario.Scenario) Learned {
	return drpcLearned(p, sc, drpc.Options{Teacher: true})
}

// drpcLearned runs policy p with options opt (the fallback is set here),
// timing its decisions. Retraining changes the policy's networks, so with
// it every run gets a copy of its own (the file read back): runs on other
// goroutines neither share nor race.
func drpcLearned(p *drpc.Policy, sc *scenario.Scenario, opt drpc.Options) Learned {
	policy := func() (*drpc.Policy, error) { return p, nil }
	if opt.Retrain > 0 {
		var buf bytes.Buffer
		err := p.Write(&buf)
		policy = func() (*drpc.Policy, error) {
			if err != nil {
				return nil, err
			}
			return drpc.ReadPolicy(bytes.NewReader(buf.Bytes()))
		}
	}
	return Learned{Period: time.Duration(p.Period), Write: p.Write, New: func(*cluster.Cluster) ([]control.Controller, error) {
		hpa, err := sc.Autoscalers("hpa")
		if err != nil {
			return nil, fmt.Errorf("drpc fallback: %w", err)
		}
		q, err := policy()
		if err != nil {
			return nil, err
		}
		opt := opt
		opt.Fallback = hpa
		c, err := drpc.NewController(q, opt)
		if err != nil {
			return nil, err
		}
		return []control.Controller{&timed{Controller: c, per: func() int { s := c.Stats(); return s.Decisions + s.Fallbacks }}}, nil
	}}
}

// TimedAutoscalers runs the scenario's autoscaler policy (e.g. "hpa"),
// timing its decisions (one per service per period).
func TimedAutoscalers(sc *scenario.Scenario, policy string) Learned {
	return Learned{New: func(*cluster.Cluster) ([]control.Controller, error) {
		ctls, err := sc.Autoscalers(policy)
		if err != nil {
			return nil, err
		}
		t := &timed{Controller: multi(ctls)}
		n := len(ctls)
		t.per = func() int { return t.calls * n }
		return []control.Controller{t}, nil
	}}
}

// multi decides with every controller in turn.
type multi []control.Controller

func (m multi) Decide(now time.Duration, snap *metrics.Snapshot) []control.Action {
	var acts []control.Action
	for _, c := range m {
		acts = append(acts, c.Decide(now, snap)...)
	}
	return acts
}

// DRPCPercentiles are the response-time percentiles of the paper's Table 4.
var DRPCPercentiles = []float64{0.50, 0.66, 0.75, 0.80, 0.90, 0.95, 0.99, 0.9999}

// DRPCFigures are the DRPC paper's figures for one policy, each a mean
// over seeds with its 95% confidence interval.
type DRPCFigures struct {
	Policy string `json:"policy"`
	// Periods split the measurement window into five equal parts (Fig. 3a-c):
	// successful requests per second, the share that failed, and the mean
	// response time of the successful ones (seconds).
	Success     []Stat `json:"success_rps"`
	FailureRate []Stat `json:"failure_rate"`
	MeanRT      []Stat `json:"mean_rt_s"`
	// Percentiles of the successful requests' response time (Table 4), s.
	Percentiles []Stat `json:"percentiles_s"`
	// Quadratic is the coefficient a of the least-squares fit
	// rt = a·rate² + b·rate + c over the sample periods (Fig. 4b), in
	// seconds per (request/s)².
	Quadratic     Stat `json:"quadratic"`
	SLOViolations Stat `json:"slo_violations"`
	// ViolationsOrDegraded also counts a request answered degraded (an
	// optional call browned out) as a violation: brownout is a cost too.
	ViolationsOrDegraded Stat `json:"slo_violations_or_degraded"`
	Failures             Stat `json:"failures"`
	VCPUSeconds          Stat `json:"vcpu_seconds"`
	// Parameters of one decision's network (0: none) and the CPU time per
	// deployment decision (the computation table, section VI-C 1).
	Parameters int  `json:"parameters"`
	DecisionNS Stat `json:"decision_ns"`
	// Fallbacks, Notified and Retrained count a DRPC controller's
	// decisions left to the HPA, the times the retraining notifier fired,
	// and student refreshes (NaN for other policies).
	Fallbacks Stat `json:"fallbacks"`
	Notified  Stat `json:"notified"`
	Retrained Stat `json:"retrained"`
	// RewardBefore and RewardAfter are the mean reward of the notifier's
	// window when it fired and of the first window after the students
	// were refreshed, over the runs that retrained (NaN: none did).
	RewardBefore Stat `json:"reward_before_retraining"`
	RewardAfter  Stat `json:"reward_after_retraining"`
	// Reward is a DRPC controller's mean system reward per period, the
	// notifier's input (drpc.Stats.Reward; NaN for other policies).
	Reward Stat `json:"reward"`
}

// drpcRun is what one run contributes to the figures.
type drpcRun struct {
	success, failRate, meanRT []float64
	pct                       []float64
	quad                      float64
	viol, violDeg, fail, vcpu float64
	decisionNS                float64
	fallbacks, notified, retr float64
	before, after, reward     float64
}

// DRPCComparison runs cmp and returns the paper's figures for every policy
// besides the usual result.
func DRPCComparison(ctx context.Context, cmp Comparison, params map[string]int) (*Result, []DRPCFigures, error) {
	var mu sync.Mutex
	runs := map[string][]drpcRun{}
	sc := cmp.Scenario
	cmp.OnRun = func(policy string, _ uint64, r *cluster.Results, ctls []control.Controller) {
		dr := figuresOf(r, sc.Warmup, sc.Horizon, ctls)
		mu.Lock()
		runs[policy] = append(runs[policy], dr)
		mu.Unlock()
	}
	res, err := cmp.Run(ctx)
	if err != nil {
		return nil, nil, err
	}
	var figs []DRPCFigures
	for _, p := range res.Policies {
		rs := runs[p.Policy]
		sort.Slice(rs, func(i, j int) bool { return rs[i].vcpu < rs[j].vcpu }) // runs finish in any order
		f := DRPCFigures{Policy: p.Policy, Parameters: params[p.Policy]}
		for k := range rs[0].success {
			f.Success = append(f.Success, meanCI(rs, func(r *drpcRun) float64 { return r.success[k] }))
			f.FailureRate = append(f.FailureRate, meanCI(rs, func(r *drpcRun) float64 { return r.failRate[k] }))
			f.MeanRT = append(f.MeanRT, meanCI(rs, func(r *drpcRun) float64 { return r.meanRT[k] }))
		}
		for k := range DRPCPercentiles {
			f.Percentiles = append(f.Percentiles, meanCI(rs, func(r *drpcRun) float64 { return r.pct[k] }))
		}
		f.Quadratic = meanCI(rs, func(r *drpcRun) float64 { return r.quad })
		f.SLOViolations = meanCI(rs, func(r *drpcRun) float64 { return r.viol })
		f.ViolationsOrDegraded = meanCI(rs, func(r *drpcRun) float64 { return r.violDeg })
		f.Failures = meanCI(rs, func(r *drpcRun) float64 { return r.fail })
		f.VCPUSeconds = meanCI(rs, func(r *drpcRun) float64 { return r.vcpu })
		f.DecisionNS = meanCI(rs, func(r *drpcRun) float64 { return r.decisionNS })
		f.Fallbacks = meanCI(rs, func(r *drpcRun) float64 { return r.fallbacks })
		f.Notified = meanCI(rs, func(r *drpcRun) float64 { return r.notified })
		f.Retrained = meanCI(rs, func(r *drpcRun) float64 { return r.retr })
		retrained := slices.DeleteFunc(slices.Clone(rs), func(r drpcRun) bool { return !(r.after > 0) })
		f.RewardBefore = meanCI(retrained, func(r *drpcRun) float64 { return r.before })
		f.RewardAfter = meanCI(retrained, func(r *drpcRun) float64 { return r.after })
		f.Reward = meanCI(rs, func(r *drpcRun) float64 { return r.reward })
		figs = append(figs, f)
	}
	return res, figs, nil
}

// figuresOf computes one run's figures.
func figuresOf(r *cluster.Results, warm, horizon time.Duration, ctls []control.Controller) drpcRun {
	const periods = 5
	dr := drpcRun{success: make([]float64, periods), failRate: make([]float64, periods), meanRT: make([]float64, periods)}
	var rate, failed, latW [periods]float64
	var n [periods]int
	window := (horizon - warm).Seconds()
	var xs, ys []float64
	for i, t := range r.Series.Times {
		at := t - warm.Seconds()
		if at <= 0 || at > window || i >= len(r.Requests.Rate) {
			continue
		}
		k := min(int(at/window*periods), periods-1)
		ok := r.Requests.Rate[i] - r.Requests.Failed[i]
		rate[k] += r.Requests.Rate[i]
		failed[k] += r.Requests.Failed[i]
		n[k]++
		if lat := r.Requests.Latency[i]; !math.IsNaN(lat) {
			latW[k] += lat * ok
			dr.meanRT[k] += ok
			xs, ys = append(xs, r.Requests.Rate[i]), append(ys, lat)
		}
	}
	for k := range periods {
		dr.success[k] = (rate[k] - failed[k]) / float64(max(n[k], 1))
		dr.failRate[k] = failed[k] / math.Max(rate[k], 1e-9)
		if dr.meanRT[k] > 0 {
			dr.meanRT[k] = latW[k] / dr.meanRT[k]
		} else {
			dr.meanRT[k] = math.NaN()
		}
	}
	for _, q := range DRPCPercentiles {
		dr.pct = append(dr.pct, float64(quantile(&r.Latency, q)))
	}
	dr.quad = quadratic(xs, ys)
	dr.viol = frac(r.SLOViolations(), r.SLOArrivals())
	dr.violDeg = frac(r.SLOViolationsOrDegraded(), r.SLOArrivals())
	dr.fail = frac(r.Failures.Total(), r.Arrivals)
	dr.vcpu, _, _ = r.Resources()
	dr.decisionNS, dr.fallbacks, dr.notified, dr.retr, dr.reward = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
	for _, c := range ctls {
		t, ok := c.(*timed)
		if !ok {
			continue
		}
		if t.decisions() > 0 {
			dr.decisionNS = float64(t.ns) / float64(t.decisions())
		}
		if d, ok := t.Controller.(*drpc.Controller); ok {
			st := d.Stats()
			dr.fallbacks, dr.notified, dr.retr = float64(st.Fallbacks), float64(st.Notified), float64(st.Retrained)
			dr.before, dr.after, dr.reward = st.RewardBefore, st.RewardAfter, st.Reward
		}
	}
	return dr
}

// quadratic is the coefficient a of the least-squares fit y = a x² + b x + c
// (NaN with fewer than three distinct points).
func quadratic(xs, ys []float64) float64 {
	if len(xs) < 3 {
		return math.NaN()
	}
	x := mat.NewDense(len(xs), 3, nil)
	for i, v := range xs {
		x.SetRow(i, []float64{v * v, v, 1})
	}
	var coef mat.VecDense
	var cond mat.Condition
	if err := coef.SolveVec(x, mat.NewVecDense(len(ys), ys)); err != nil && !(errors.As(err, &cond) && !math.IsInf(float64(cond), 1)) {
		return math.NaN() // rank-deficient: too few distinct rates
	}
	return coef.AtVec(0)
}

// timed measures the CPU time of a controller's decisions: wall time of
// Decide on the runner's goroutine, which does nothing else meanwhile.
type timed struct {
	control.Controller
	ns    int64
	calls int
	// per returns how many deployment decisions the controller has made
	// (nil: one per call).
	per func() int
}

func (t *timed) Decide(now time.Duration, snap *metrics.Snapshot) []control.Action {
	start := time.Now()
	acts := t.Controller.Decide(now, snap)
	t.ns += time.Since(start).Nanoseconds()
	t.calls++
	return acts
}

func (t *timed) decisions() int {
	if t.per != nil {
		return t.per()
	}
	return t.calls
}

// WriteDRPCTables prints the figures as the paper's Fig. 3, Table 4, the
// scalability fit and the computation table.
func WriteDRPCTables(w io.Writer, figs []DRPCFigures) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Fig. 3: successful requests/s, failure rate % and mean response time (ms) over five periods; ± is the 95% CI over seeds")
	fmt.Fprint(tw, "policy\tmeasure")
	for k := 1; k <= 5; k++ {
		fmt.Fprintf(tw, "\tperiod %d", k)
	}
	fmt.Fprintln(tw)
	for _, f := range figs {
		for _, row := range []struct {
			name  string
			stats []Stat
			scale float64
		}{{"success req/s", f.Success, 1}, {"failure %", f.FailureRate, 100}, {"mean RT ms", f.MeanRT, 1000}} {
			fmt.Fprintf(tw, "%s\t%s", f.Policy, row.name)
			for _, s := range row.stats {
				fmt.Fprintf(tw, "\t%s", cell(scaled(s, row.scale)))
			}
			fmt.Fprintln(tw)
		}
	}
	fmt.Fprintln(tw)
	fmt.Fprint(tw, "Table 4: response time (ms) at percentiles\npolicy")
	for _, q := range DRPCPercentiles {
		fmt.Fprintf(tw, "\t%gth", 100*q)
	}
	fmt.Fprintln(tw)
	for _, f := range figs {
		fmt.Fprint(tw, f.Policy)
		for _, s := range f.Percentiles {
			fmt.Fprintf(tw, "\t%s", cell(scaled(s, 1000)))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "Outcome, scalability and computation\npolicy\tSLO violations %\tviolations or degraded %\tfailures %\tvCPU-s\tquadratic coefficient (ms per (100 req/s)²)\tparameters\tCPU time per decision (µs)\tfallbacks\tnotified\tretrained\treward before\treward after\tmean reward")
	for _, f := range figs {
		params := "-"
		if f.Parameters > 0 {
			params = fmt.Sprint(f.Parameters)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Policy, cell(scaled(f.SLOViolations, 100)),
			cell(scaled(f.ViolationsOrDegraded, 100)), cell(scaled(f.Failures, 100)),
			cell(f.VCPUSeconds), cell(scaled(f.Quadratic, 1000*1e4)), params, cell(scaled(f.DecisionNS, 1e-3)),
			cell(f.Fallbacks), cell(f.Notified), cell(f.Retrained), cell(f.RewardBefore), cell(f.RewardAfter), cell(f.Reward))
	}
	return tw.Flush()
}

func scaled(s Stat, k float64) Stat { return Stat{Mean: s.Mean * Num(k), CI95: s.CI95 * Num(k)} }
