package experiment

import (
	"cmp"
	"context"
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
	"time"

	"github.com/shoal-project/shoal/control/autothrottle"
	"github.com/shoal-project/shoal/control/coscal"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/control/firm"
	"github.com/shoal-project/shoal/envs/drpcenv"
	"github.com/shoal-project/shoal/experiment/report"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
)

// DRPCPareto judges DRPC against its baselines at equal cost: it sweeps
// each baseline's own knob (the HPA's target utilisation, the KPA's target
// concurrency, the SLO FIRM-like and CoScal-like are told), trains DRPC at
// several cost budgets with several training seeds, runs every point on
// each workload with the same arrivals, and draws each method's frontier
// of quality (SLO violations, a degraded request counted as one) against
// cost (vCPU-seconds, and dollars with memory at its price), with 95%
// intervals over the evaluation seeds.
//
// Nothing here is chosen on the evaluation seeds: the knobs' grids and the
// budgets are fixed in advance (DefaultDRPCPareto), DRPC's validation runs
// on seeds of its own drawn from the training seed, and training never
// sees the evaluation workloads (the held-out half of the Alibaba trace,
// the surge, the mix change).
type DRPCPareto struct {
	// Workloads are the names of DRPCParetoWorkloads to run.
	Workloads []string
	// HPATargets are the HPA's CPU targets, % of the request.
	HPATargets []float64
	// KPAFactors multiply the KPA's target concurrency, every service's.
	KPAFactors []float64
	// SLOFactors multiply the SLO that FIRM-like and CoScal-like are told
	// at run time (the one they were trained with).
	SLOFactors []float64
	// AutothrottleP99s are the p99 latencies the Autothrottle-like
	// baseline's tower aims at, as factors of the scenario's SLO.
	AutothrottleP99s []float64
	// Policies are trained DRPC policy files run as points of their own
	// (a user's, 'shoal train drpc' with no flags), each set against every
	// other method's frontier at its cost (AtItsCost).
	Policies []string
	// Budgets are DRPC's training budgets (vCPUs per training episode,
	// drpcenv.Config.Budget) and TrainSeeds its training seeds.
	Budgets    []float64
	TrainSeeds []uint64
	// Forecast trains DRPC with the GRU workload predictor (train drpc
	// --forecast).
	Forecast bool
	// SelectEpisodes, if > 0, keeps at each budget only the training seed
	// whose policy did best on that many selection episodes
	// (drpcenv.Validate: the students as deployed, on generated training
	// workloads with seeds of their own; within the budget first, then the
	// higher reward): training several seeds and keeping the best on
	// validation is part of training, and no evaluation seed is looked at.
	SelectEpisodes int
	// Seed and Seeds are the evaluation seeds: Seed, Seed+1, ...
	Seed  uint64
	Seeds int
	// AlibabaHorizon is how much of the held-out half of the Alibaba
	// trace (250 simulated minutes) the alibaba workload runs.
	AlibabaHorizon time.Duration
	// BaselineBudget is FIRM-like's and CoScal-like's training wall time.
	BaselineBudget time.Duration
	Dir, PolicyDir string
	Now            func() time.Time
	Log            io.Writer
}

// DefaultDRPCPareto is the study's grid: the HPA from 30% to 90% CPU, the
// KPA at a half to four times its targets, FIRM-like and CoScal-like told
// half to twice the SLO, DRPC at four budgets of 1.2 to 2.6 times what the
// base rule alone allocates on the training workloads (37 vCPUs with
// memory, over its first four training episodes), trained with the
// workload forecast, two training seeds of which the selection episodes
// keep one, and three evaluation seeds from 401 (seeds 101-103 were looked
// at while the learner was being built, 301-303 when the forecast and the
// selection were chosen).
func DefaultDRPCPareto() DRPCPareto {
	return DRPCPareto{Workloads: DRPCParetoWorkloadNames(false), HPATargets: []float64{30, 45, 60, 75, 90},
		KPAFactors: []float64{0.5, 1, 2, 4}, SLOFactors: []float64{0.5, 1, 2}, AutothrottleP99s: []float64{0.5, 1, 2, 4},
		Budgets: []float64{45, 60, 75, 95}, TrainSeeds: []uint64{1, 2}, Forecast: true, SelectEpisodes: 8, Seed: 401, Seeds: 3,
		AlibabaHorizon: 250 * time.Minute, BaselineBudget: 4 * time.Minute}
}

// DRPCParetoWorkload is one workload of the study.
type DRPCParetoWorkload struct {
	Name, Description string
	scenario          func(p *DRPCPareto) (*scenario.Scenario, error)
}

// DRPCParetoWorkloads are the study's workloads, in order.
func DRPCParetoWorkloads() []DRPCParetoWorkload {
	tt := func(horizon time.Duration) func(*DRPCPareto) (*scenario.Scenario, error) {
		return func(*DRPCPareto) (*scenario.Scenario, error) {
			sc, err := scenario.Lookup("trainticket")
			if err == nil {
				sc.SetHorizon(horizon)
			}
			return sc, err
		}
	}
	return []DRPCParetoWorkload{
		{"steady", "TrainTicket at a steady 200 req/s, 5 minutes", tt(5 * time.Minute)},
		{"steady-30m", "TrainTicket at a steady 200 req/s, 30 minutes", tt(30 * time.Minute)},
		{"surge", "DRPC's surge: 200 req/s for two minutes, then 800 within a minute, 10 minutes", func(*DRPCPareto) (*scenario.Scenario, error) {
			sc, err := scenario.Lookup("trainticket")
			if err != nil {
				return nil, err
			}
			if err := sc.SetArrivals(drpcenv.Surge(sc, 4)); err != nil {
				return nil, err
			}
			sc.SetHorizon(10 * time.Minute)
			return sc, nil
		}},
		{"alibaba", "the held-out second half of the Alibaba trace (trace minutes 2500-5000 at 10x)", func(p *DRPCPareto) (*scenario.Scenario, error) {
			sc, err := scenario.Lookup("trainticket-alibaba")
			if err != nil {
				return nil, err
			}
			for i := range sc.Sources {
				sc.Sources[i].Arrivals.Start, sc.Sources[i].Arrivals.Window = 2500*time.Minute, 2500*time.Minute
			}
			sc.SetHorizon(cmp.Or(p.AlibabaHorizon, 250*time.Minute))
			return sc, nil
		}},
		{"mixchange", "users turn from searching to buying halfway through 30 minutes", func(*DRPCPareto) (*scenario.Scenario, error) {
			return scenario.Lookup("trainticket-mixchange")
		}},
		// Unseen traffic (issue 48): fixed on 2026-11-28 before any policy
		// ran on it, and never used to choose a setting; settings are
		// chosen on the validation workloads that follow.
		{"mixshift", "unseen: cancellations rise from 10% to 35% of 240 req/s while searches fall from 60% to 35%, in four steps of 7.5 minutes",
			mixShift(map[string][]float64{"query": {144, 120, 100, 84}, "buy": {60, 60, 60, 60}, "cancel": {24, 48, 68, 84}, "admin": {12, 12, 12, 12}})},
		{"alibaba-segment", "unseen: 20 minutes of the held-out half of the Alibaba trace (trace minutes 3700-3900 at 10x)", alibabaSegment(3700 * time.Minute)},
		{"mixshift-validation", "validation: admin users rise from 5% to 20% of 220 req/s while buyers fall from 25% to 10%, in four steps of 7.5 minutes",
			mixShift(map[string][]float64{"query": {132, 132, 132, 132}, "buy": {55, 44, 33, 22}, "cancel": {22, 22, 22, 22}, "admin": {11, 22, 33, 44}})},
		{"alibaba-validation", "validation: 20 minutes of the Alibaba trace's first half (trace minutes 1200-1400 at 10x)", alibabaSegment(1200 * time.Minute)},
	}
}

// mixShift is TrainTicket for 30 minutes with open-loop Poisson arrivals
// of each user class at the given rates (req/s), one per 7.5 minutes.
func mixShift(rates map[string][]float64) func(*DRPCPareto) (*scenario.Scenario, error) {
	return func(*DRPCPareto) (*scenario.Scenario, error) {
		sc, err := scenario.Lookup("trainticket")
		if err != nil {
			return nil, err
		}
		for i := range sc.Sources {
			r, ok := rates[sc.Sources[i].Class]
			if !ok {
				return nil, fmt.Errorf("mix shift: no rates for class %s", sc.Sources[i].Class)
			}
			a := workload.ProcessSpec{Kind: workload.KindSeries, Step: 450 * time.Second, Rates: r}
			if err := a.Validate(""); err != nil {
				return nil, err
			}
			sc.Sources[i].Arrivals = a
		}
		sc.SetHorizon(30 * time.Minute)
		return sc, nil
	}
}

// alibabaSegment is 20 minutes of trainticket-alibaba from trace minute
// start (200 trace minutes at its 10x).
func alibabaSegment(start time.Duration) func(*DRPCPareto) (*scenario.Scenario, error) {
	return func(*DRPCPareto) (*scenario.Scenario, error) {
		sc, err := scenario.Lookup("trainticket-alibaba")
		if err != nil {
			return nil, err
		}
		for i := range sc.Sources {
			sc.Sources[i].Arrivals.Start, sc.Sources[i].Arrivals.Window = start, 200*time.Minute
		}
		sc.SetHorizon(20 * time.Minute)
		return sc, nil
	}
}

// validation reports whether a workload may choose settings (and so is
// not reported as unseen).
func (w DRPCParetoWorkload) validation() bool { return strings.HasSuffix(w.Name, "-validation") }

// DRPCParetoWorkloadNames lists the workloads in order: with validation,
// every one; without, those the study reports (the default).
func DRPCParetoWorkloadNames(validation bool) []string {
	var names []string
	for _, w := range DRPCParetoWorkloads() {
		if validation || !w.validation() {
			names = append(names, w.Name)
		}
	}
	return names
}

// paretoPoint is one method at one setting of its knob (DRPC: at one
// training seed too, which its name says).
type paretoPoint struct {
	Method  string  // hpa, kpa, firm, coscal, drpc
	Knob    string  // what the setting is, e.g. "target CPU %"
	Setting float64 // its value
	Name    string  // the policy's name in the comparison
}

// ParetoRow is one method's point on one workload, over the evaluation
// seeds (DRPC's: over every training seed's runs at a budget).
type ParetoRow struct {
	Workload string  `json:"workload"`
	Method   string  `json:"method"`
	Knob     string  `json:"knob"`
	Setting  float64 `json:"setting"`
	Runs     int     `json:"runs"`
	// Quality: SLO violations counting a degraded request as one, and its
	// two parts.
	SLOOrDegraded Stat `json:"slo_violations_or_degraded"`
	SLOViolations Stat `json:"slo_violations"`
	Degraded      Stat `json:"degraded"`
	Failures      Stat `json:"failures"`
	MeanRT        Stat `json:"mean_rt_s"`
	// Cost.
	VCPUSeconds Stat `json:"vcpu_seconds"`
	GBSeconds   Stat `json:"gb_seconds"`
	Dollars     Stat `json:"cost"`
	// OnFrontier: no other point of any method is both cheaper (in
	// vCPU-seconds) and better.
	OnFrontier bool `json:"on_frontier"`
}

// EqualCost compares DRPC with one baseline point at the baseline's cost:
// DRPC's quality interpolated linearly between its budgets' points (their
// means), NaN where the cost is outside DRPC's range.
type EqualCost struct {
	Workload  string `json:"workload"`
	Baseline  string `json:"baseline"`
	Cost      Num    `json:"vcpu_seconds"`
	Quality   Num    `json:"baseline_slo_violations_or_degraded"`
	DRPC      Num    `json:"drpc_slo_violations_or_degraded"`
	Reduction Num    `json:"reduction"` // 1 - DRPC / baseline
}

// Run trains or loads the policies, runs every workload and writes the
// frontiers into Dir: pareto.csv and pareto.json (every point),
// equal-cost.csv, report.html, and each workload's comparison in its own
// directory.
func (p DRPCPareto) Run(ctx context.Context, w io.Writer) error {
	train, err := scenario.Lookup("trainticket") // the training application, at its own rates
	if err != nil {
		return err
	}
	study := DRPCStudy{Name: "pareto", PolicyDir: p.PolicyDir, TrainSeed: 1, Budget: p.BaselineBudget, Now: p.Now, Log: p.Log}
	fp, cp, err := study.baselinePolicies(ctx, train)
	if err != nil {
		return err
	}
	var ap *autothrottle.Policy
	if len(p.AutothrottleP99s) > 0 {
		if ap, err = study.autothrottlePolicy(ctx, train); err != nil {
			return err
		}
	}
	var drpcs []*drpc.Policy
	var drpcPoints []paretoPoint
	var selection []SelectionRow
	for _, b := range p.Budgets {
		pols := make([]*drpc.Policy, len(p.TrainSeeds))
		for i, seed := range p.TrainSeeds {
			tr := drpcTraining{Budget: b, Seed: seed, Forecast: p.Forecast, Log: p.logf}
			if pols[i], err = tr.policy(ctx, train, p.PolicyDir); err != nil {
				return err
			}
		}
		keep, rows, err := p.selectSeed(ctx, train, b, pols)
		if err != nil {
			return err
		}
		selection = append(selection, rows...)
		for _, i := range keep {
			drpcs = append(drpcs, pols[i])
			drpcPoints = append(drpcPoints, paretoPoint{Method: "drpc", Knob: "budget vCPUs", Setting: b, Name: fmt.Sprintf("drpc@%g/s%d", b, p.TrainSeeds[i])})
		}
	}
	if err := p.writeSelection(w, selection); err != nil {
		return err
	}
	files, filePoints, err := p.policyFiles()
	if err != nil {
		return err
	}
	var rows []ParetoRow
	var equal []EqualCost
	var atCost []AtCost
	rep := &report.Report{Title: "DRPC at equal cost", Subtitle: "Every method's frontier of SLO violations (a degraded request counted as one) against cost",
		Meta: p.meta()}
	all := DRPCParetoWorkloads()
	for _, name := range p.Workloads { // in the order asked
		i := slices.IndexFunc(all, func(w DRPCParetoWorkload) bool { return w.Name == name })
		if i < 0 {
			return fmt.Errorf("pareto: unknown workload %q (known: %s)", name, strings.Join(DRPCParetoWorkloadNames(true), ", "))
		}
		wl := all[i]
		sc, err := wl.scenario(&p)
		if err != nil {
			return fmt.Errorf("pareto %s: %w", wl.Name, err)
		}
		sc.Seed = p.Seed
		points, learned, err := p.points(sc, fp, cp, ap)
		if err != nil {
			return fmt.Errorf("pareto %s: %w", wl.Name, err)
		}
		for i, pt := range drpcPoints {
			learned[pt.Name] = drpcLearned(drpcs[i], sc, drpc.Options{})
			points = append(points, pt)
		}
		for i, pt := range filePoints {
			learned[pt.Name] = drpcLearned(files[i], sc, drpc.Options{})
			points = append(points, pt)
		}
		var names []string
		for _, pt := range points {
			names = append(names, pt.Name)
		}
		p.logf("pareto %s: %d points, %d seeds from %d", wl.Name, len(points), p.Seeds, p.Seed)
		c := Comparison{Scenario: sc, Policies: names, Learned: learned, Seeds: p.Seeds, Progress: p.progress(wl.Name)}
		res, err := c.Run(ctx)
		if err != nil {
			return fmt.Errorf("pareto %s: %w", wl.Name, err)
		}
		meta := append(p.meta(), report.KV{Key: "workload", Value: wl.Description})
		if err := res.WriteFiles(filepath.Join(p.Dir, wl.Name), meta); err != nil {
			return err
		}
		wrows := paretoRows(wl.Name, points, res)
		weq := equalCost(wl.Name, wrows)
		rows, equal, atCost = append(rows, wrows...), append(equal, weq...), append(atCost, atItsCost(wl.Name, wrows)...)
		rep.Figures = append(rep.Figures, paretoFigures(wl, wrows)...)
		rep.Tables = append(rep.Tables, equalCostTable(wl, weq))
		fmt.Fprintf(w, "drpc pareto %s: %s\n", wl.Name, res.Header())
		if err := writeParetoText(w, wrows, weq, atItsCost(wl.Name, wrows)); err != nil {
			return err
		}
		// The files so far after every workload: a long study cut off
		// keeps what it measured.
		if err := p.write(rows, equal, atCost, rep); err != nil {
			return err
		}
	}
	return nil
}

// SelectionRow is one training seed's policy at a budget on the selection
// episodes, and whether the study kept it.
type SelectionRow struct {
	Budget        float64 `json:"budget"`
	Seed          uint64  `json:"train_seed"`
	Reward        float64 `json:"reward"`
	VCPUs         float64 `json:"vcpus"`
	SLOViolations float64 `json:"slo_violations"`
	Kept          bool    `json:"kept"`
}

func (p DRPCPareto) keptSeeds() string {
	if p.SelectEpisodes > 0 && len(p.TrainSeeds) > 1 {
		return fmt.Sprintf("at each budget, the best on %d selection episodes", p.SelectEpisodes)
	}
	return "all, pooled at each budget"
}

// selectSeed returns the indices of the policies (one per training seed)
// the study keeps at budget b: with SelectEpisodes, the one that did best
// on the selection episodes; otherwise all.
func (p DRPCPareto) selectSeed(ctx context.Context, train *scenario.Scenario, b float64, pols []*drpc.Policy) ([]int, []SelectionRow, error) {
	if p.SelectEpisodes <= 0 || len(pols) < 2 {
		all := make([]int, len(pols))
		for i := range all {
			all[i] = i
		}
		return all, nil, nil
	}
	best, vs, err := drpcenv.Select(ctx, train, pols, b, p.SelectEpisodes, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("pareto: selecting at budget %g: %w", b, err)
	}
	rows := make([]SelectionRow, len(pols))
	for i, v := range vs {
		rows[i] = SelectionRow{Budget: b, Seed: p.TrainSeeds[i], Reward: v.Reward, VCPUs: v.Cost, SLOViolations: v.SLOViolations}
		p.logf("pareto: budget %g, training seed %d: selection reward %.3f at %.1f vCPUs, SLO violations %.1f%%", b, p.TrainSeeds[i], v.Reward, v.Cost, 100*v.SLOViolations)
	}
	rows[best].Kept = true
	return []int{best}, rows, nil
}

// writeSelection prints the selection and writes it to selection.csv.
func (p DRPCPareto) writeSelection(w io.Writer, rows []SelectionRow) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "drpc pareto: each budget's training seed kept on %d selection episodes (never an evaluation seed)\n", p.SelectEpisodes)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "budget vCPUs\ttraining seed\treward\tvCPUs\tSLO violations %\tkept")
	for _, r := range rows {
		fmt.Fprintf(tw, "%g\t%d\t%.3f\t%.1f\t%.2f\t%v\n", r.Budget, r.Seed, r.Reward, r.VCPUs, 100*r.SLOViolations, r.Kept)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return writeFile(filepath.Join(p.Dir, "selection.csv"), func(w io.Writer) error {
		cw := csv.NewWriter(w)
		cw.Write([]string{"budget_vcpus", "train_seed", "reward", "vcpus", "slo_violations", "kept"})
		for _, r := range rows {
			cw.Write([]string{strconv.FormatFloat(r.Budget, 'g', -1, 64), strconv.FormatUint(r.Seed, 10), strconv.FormatFloat(r.Reward, 'g', -1, 64),
				strconv.FormatFloat(r.VCPUs, 'g', -1, 64), strconv.FormatFloat(r.SLOViolations, 'g', -1, 64), strconv.FormatBool(r.Kept)})
		}
		cw.Flush()
		return cw.Error()
	})
}

func (p DRPCPareto) meta() []report.KV {
	seeds := make([]string, len(p.TrainSeeds))
	for i, s := range p.TrainSeeds {
		seeds[i] = fmt.Sprint(s)
	}
	return []report.KV{{Key: "study", Value: "drpc pareto"},
		{Key: "evaluation seeds", Value: fmt.Sprintf("%d from %d", p.Seeds, p.Seed)},
		{Key: "DRPC training seeds", Value: strings.Join(seeds, ", ")},
		{Key: "DRPC budgets (vCPUs, memory at its price)", Value: fmt.Sprint(p.Budgets)},
		{Key: "DRPC reads a workload forecast", Value: fmt.Sprint(p.Forecast)},
		{Key: "DRPC training seeds kept", Value: p.keptSeeds()},
		{Key: "HPA targets (% CPU)", Value: fmt.Sprint(p.HPATargets)},
		{Key: "KPA target concurrency factors", Value: fmt.Sprint(p.KPAFactors)},
		{Key: "FIRM-like and CoScal-like SLO factors", Value: fmt.Sprint(p.SLOFactors)},
		{Key: "Autothrottle-like p99 targets (x SLO)", Value: fmt.Sprint(p.AutothrottleP99s)},
		{Key: "how settings were chosen", Value: "fixed before any evaluation run; DRPC's teachers validated on seeds of their own"}}
}

// points are the baselines' points on sc and their policies.
func (p DRPCPareto) points(sc *scenario.Scenario, fp *firm.Policy, cp *coscal.Policy, ap *autothrottle.Policy) ([]paretoPoint, map[string]Learned, error) {
	var pts []paretoPoint
	learned := map[string]Learned{}
	for _, t := range p.HPATargets {
		name := fmt.Sprintf("hpa@%g", t)
		learned[name] = TimedAutoscalers(sc, fmt.Sprintf("hpa:target=%g", t))
		pts = append(pts, paretoPoint{Method: "hpa", Knob: "target CPU %", Setting: t, Name: name})
	}
	for _, f := range p.KPAFactors {
		name := fmt.Sprintf("kpa@x%g", f)
		learned[name] = TimedAutoscalers(sc, fmt.Sprintf("kpa:scale=%g", f))
		pts = append(pts, paretoPoint{Method: "kpa", Knob: "target concurrency factor", Setting: f, Name: name})
	}
	for _, f := range p.SLOFactors {
		ff, cc := *fp, *cp
		ff.SLO, cc.SLO = drpc.Duration(float64(fp.SLO)*f), drpc.Duration(float64(cp.SLO)*f)
		for _, m := range []struct {
			method string
			l      Learned
		}{{"firm", FIRMPolicy(&ff, sc)}, {"coscal", CoScalPolicy(&cc, sc)}} {
			name := fmt.Sprintf("%s@slo-x%g", m.method, f)
			learned[name] = m.l
			pts = append(pts, paretoPoint{Method: m.method, Knob: "SLO factor", Setting: f, Name: name})
		}
	}
	for _, f := range p.AutothrottleP99s {
		name := fmt.Sprintf("autothrottle@p99-x%g", f)
		learned[name] = AutothrottlePolicy(ap, f*sc.SLO.Seconds(), 0)
		pts = append(pts, paretoPoint{Method: "autothrottle", Knob: "p99 target, x SLO", Setting: f, Name: name})
	}
	return pts, learned, nil
}

// paretoRows summarises every point of a workload; DRPC's training seeds
// at one budget pool into one row.
func paretoRows(workload string, points []paretoPoint, res *Result) []ParetoRow {
	byName := map[string]*PolicyResult{}
	for i := range res.Policies {
		byName[res.Policies[i].Policy] = &res.Policies[i]
	}
	type key struct {
		method  string
		setting float64
	}
	var order []key
	runs := map[key][]RunResult{}
	knob := map[key]string{}
	for _, pt := range points {
		k := key{pt.Method, pt.Setting}
		if _, ok := runs[k]; !ok {
			order = append(order, k)
		}
		runs[k] = append(runs[k], byName[pt.Name].Runs...)
		knob[k] = pt.Knob
	}
	var rows []ParetoRow
	for _, k := range order {
		rs := runs[k]
		share := func(f func(r *RunResult) int64) Stat {
			return meanCI(rs, func(r *RunResult) float64 { return frac(f(r), r.SLORequests) })
		}
		rows = append(rows, ParetoRow{Workload: workload, Method: k.method, Knob: knob[k], Setting: k.setting, Runs: len(rs),
			SLOOrDegraded: share(func(r *RunResult) int64 { return r.SLOOrDegraded }),
			SLOViolations: share(func(r *RunResult) int64 { return r.SLOViolations }),
			Degraded:      meanCI(rs, func(r *RunResult) float64 { return frac(r.Degraded, r.Arrivals) }),
			Failures:      meanCI(rs, func(r *RunResult) float64 { return frac(r.Failures.Total(), r.Arrivals) }),
			MeanRT:        meanCI(rs, func(r *RunResult) float64 { return float64(r.Mean) }),
			VCPUSeconds:   meanCI(rs, func(r *RunResult) float64 { return float64(r.VCPUSeconds) }),
			GBSeconds:     meanCI(rs, func(r *RunResult) float64 { return float64(r.GBSeconds) }),
			Dollars:       meanCI(rs, func(r *RunResult) float64 { return float64(r.Cost) }),
		})
	}
	cost, quality := make([]float64, len(rows)), make([]float64, len(rows))
	for i := range rows {
		cost[i], quality[i] = float64(rows[i].VCPUSeconds.Mean), float64(rows[i].SLOOrDegraded.Mean)
	}
	for _, i := range Frontier(cost, quality) {
		rows[i].OnFrontier = true
	}
	return rows
}

// equalCost compares DRPC, interpolated between its budgets, with every
// baseline point at that point's vCPU-seconds.
func equalCost(workload string, rows []ParetoRow) []EqualCost {
	fx, fy := methodFrontier(rows, "drpc")
	var out []EqualCost
	for _, r := range rows {
		if r.Method == "drpc" || r.Method == "policy" {
			continue
		}
		e := EqualCost{Workload: workload, Baseline: fmt.Sprintf("%s %s %g", r.Method, r.Knob, r.Setting),
			Cost: r.VCPUSeconds.Mean, Quality: r.SLOOrDegraded.Mean}
		e.DRPC = Num(interpolate(fx, fy, float64(e.Cost)))
		e.Reduction = 1 - e.DRPC/e.Quality
		out = append(out, e)
	}
	return out
}

// AtCost is a policy file's point against one method's frontier at its
// vCPU-seconds.
type AtCost struct {
	Workload  string `json:"workload"`
	Policy    string `json:"policy"`
	Cost      Num    `json:"vcpu_seconds"`
	Quality   Num    `json:"slo_violations_or_degraded"`
	Method    string `json:"method"`
	Frontier  Num    `json:"frontier_slo_violations_or_degraded"` // interpolated; NaN below its cheapest point
	Reduction Num    `json:"reduction"`                           // 1 - policy / frontier
}

// atItsCost sets every policy file's point against each other method's
// frontier (DRPC's budgets' included), interpolated at its cost.
func atItsCost(workload string, rows []ParetoRow) []AtCost {
	var out []AtCost
	for _, r := range rows {
		if r.Method != "policy" {
			continue
		}
		for _, method := range paretoMethods[:len(paretoMethods)-1] { // not the policy files
			fx, fy := methodFrontier(rows, method)
			if len(fx) == 0 {
				continue
			}
			a := AtCost{Workload: workload, Policy: r.Knob, Cost: r.VCPUSeconds.Mean, Quality: r.SLOOrDegraded.Mean, Method: method}
			a.Frontier = Num(interpolate(fx, fy, float64(a.Cost)))
			a.Reduction = 1 - a.Quality/a.Frontier
			out = append(out, a)
		}
	}
	return out
}

// paretoMethods are the study's methods, in the charts' order; the
// policy files come last.
var paretoMethods = []string{"hpa", "kpa", "firm", "coscal", "autothrottle", "drpc", "policy"}

// methodFrontier is a method's own frontier: its points, by cost, that
// no cheaper setting beats.
func methodFrontier(rows []ParetoRow, method string) (cost, quality []float64) {
	var xs, ys []float64
	for _, r := range rows {
		if r.Method == method {
			xs, ys = append(xs, float64(r.VCPUSeconds.Mean)), append(ys, float64(r.SLOOrDegraded.Mean))
		}
	}
	for _, i := range Frontier(xs, ys) {
		cost, quality = append(cost, xs[i]), append(quality, ys[i])
	}
	return cost, quality
}

// policyFiles reads Policies and names their points by file (the base
// name, or the path where two share one).
func (p DRPCPareto) policyFiles() ([]*drpc.Policy, []paretoPoint, error) {
	var pols []*drpc.Policy
	var pts []paretoPoint
	for i, path := range p.Policies {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		pol, err := drpc.ReadPolicy(f)
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		name := filepath.Base(path)
		if slices.ContainsFunc(p.Policies, func(q string) bool { return q != path && filepath.Base(q) == name }) {
			name = path
		}
		pols = append(pols, pol)
		pts = append(pts, paretoPoint{Method: "policy", Knob: name, Setting: float64(i), Name: "policy:" + name})
	}
	return pols, pts, nil
}

// interpolate is the frontier (xs increasing) at x, linearly between its
// points; beyond the last point the frontier holds (spending more cannot
// do worse than the best cheaper point), before the first it is NaN.
func interpolate(xs, ys []float64, x float64) float64 {
	if len(xs) == 0 || x < xs[0] {
		return math.NaN()
	}
	for i := 1; i < len(xs); i++ {
		if x <= xs[i] {
			t := (x - xs[i-1]) / (xs[i] - xs[i-1])
			return ys[i-1] + t*(ys[i]-ys[i-1])
		}
	}
	return ys[len(ys)-1]
}

// paretoFigures are a workload's frontiers against vCPU-seconds and
// against dollars: each method's points, its own frontier joined.
func paretoFigures(wl DRPCParetoWorkload, rows []ParetoRow) []report.Figure {
	var figs []report.Figure
	for _, axis := range []struct {
		label string
		stat  func(r *ParetoRow) Stat
	}{{"vCPU-seconds", func(r *ParetoRow) Stat { return r.VCPUSeconds }}, {"cost ($, memory at its price)", func(r *ParetoRow) Stat { return r.Dollars }}} {
		f := report.Figure{Title: wl.Name + ": " + wl.Description, XLabel: axis.label, YLabel: "SLO violations or degraded (%)", Kind: report.KindScatter,
			Caption: "Each method at every setting of its knob; a line joins the settings that no cheaper setting of the same method beats. Bars: 95% intervals over the evaluation seeds (DRPC: over both training seeds' runs)."}
		var ys, xsAll []float64
		for _, method := range paretoMethods {
			var pts, line report.Series
			pts.Name, line.Name, line.Connect = method, method, true
			var xs, qs []float64
			for i := range rows {
				r := &rows[i]
				if r.Method != method {
					continue
				}
				x, q := axis.stat(r), r.SLOOrDegraded
				pts.X, pts.Y = append(pts.X, float64(x.Mean)), append(pts.Y, 100*float64(q.Mean))
				pts.XLo, pts.XHi = append(pts.XLo, float64(x.Mean-x.CI95)), append(pts.XHi, float64(x.Mean+x.CI95))
				pts.Lo, pts.Hi = append(pts.Lo, 100*max(0, float64(q.Mean-q.CI95))), append(pts.Hi, 100*float64(q.Mean+q.CI95))
				xs, qs = append(xs, float64(x.Mean)), append(qs, 100*float64(q.Mean))
			}
			if len(xs) == 0 {
				continue
			}
			ys, xsAll = append(ys, qs...), append(xsAll, xs...)
			for _, i := range Frontier(xs, qs) {
				line.X, line.Y = append(line.X, xs[i]), append(line.Y, qs[i])
			}
			f.Series = append(f.Series, pts)
			if len(line.X) > 1 && method != "policy" { // policy files are not one method's settings
				f.Series = append(f.Series, line)
			}
		}
		f.LogY = spansDecades(ys)
		f.LogX = spans(xsAll, 4)
		figs = append(figs, f)
	}
	return figs
}

func equalCostTable(wl DRPCParetoWorkload, eq []EqualCost) report.Table {
	t := report.Table{Caption: wl.Name + ": DRPC at each baseline point's vCPU-seconds (interpolated between its budgets; blank outside its range)",
		Columns: []string{"baseline point", "vCPU-s", "baseline SLO violations or degraded %", "DRPC %", "DRPC's reduction"}}
	for _, e := range eq {
		t.Rows = append(t.Rows, []string{e.Baseline, grouped(math.Round(float64(e.Cost))), sig3(100 * float64(e.Quality)), pctOrBlank(float64(e.DRPC)), reductionOrBlank(float64(e.Reduction))})
	}
	return t
}

func pctOrBlank(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return sig3(100 * v)
}

func reductionOrBlank(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return sig3(100*v) + "%"
}

// writeParetoText prints a workload's points and the equal-cost
// comparison.
func writeParetoText(w io.Writer, rows []ParetoRow, eq []EqualCost, at []AtCost) error {
	fmt.Fprintf(w, "%-8s %-26s %8s %22s %10s %10s %14s %10s %s\n", "method", "knob", "setting", "SLO viol.+degraded %", "SLO viol.%", "degraded%", "vCPU-s", "cost $", "frontier")
	for _, r := range rows {
		mark := ""
		if r.OnFrontier {
			mark = "*"
		}
		fmt.Fprintf(w, "%-8s %-26s %8g %22s %10s %10s %14s %10s %s\n", r.Method, r.Knob, r.Setting, cell(scaled(r.SLOOrDegraded, 100)),
			sig3(100*float64(r.SLOViolations.Mean)), sig3(100*float64(r.Degraded.Mean)), grouped(math.Round(float64(r.VCPUSeconds.Mean))),
			sig3(float64(r.Dollars.Mean)), mark)
	}
	fmt.Fprintln(w, "at equal vCPU-seconds:")
	for _, e := range eq {
		fmt.Fprintf(w, "  %-34s %14s  baseline %6s%%  drpc %6s%%  reduction %s\n", e.Baseline, grouped(math.Round(float64(e.Cost))), sig3(100*float64(e.Quality)),
			pctOrBlank(float64(e.DRPC)), reductionOrBlank(float64(e.Reduction)))
	}
	if len(at) > 0 {
		fmt.Fprintln(w, "each policy file against every method's frontier at its vCPU-seconds:")
	}
	for _, a := range at {
		fmt.Fprintf(w, "  %-20s %14s  %6s%%  %-12s frontier %6s%%  reduction %s\n", a.Policy, grouped(math.Round(float64(a.Cost))), sig3(100*float64(a.Quality)),
			a.Method, pctOrBlank(float64(a.Frontier)), reductionOrBlank(float64(a.Reduction)))
	}
	fmt.Fprintln(w)
	return nil
}

// write saves pareto.csv, pareto.json, equal-cost.csv and report.html.
func (p DRPCPareto) write(rows []ParetoRow, equal []EqualCost, atCost []AtCost, rep *report.Report) error {
	if err := writeFile(filepath.Join(p.Dir, "pareto.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Points    []ParetoRow `json:"points"`
			EqualCost []EqualCost `json:"equal_cost"`
			AtItsCost []AtCost    `json:"at_its_cost,omitempty"`
		}{rows, equal, atCost})
	}); err != nil {
		return err
	}
	f := func(s Stat) []string {
		return []string{strconv.FormatFloat(float64(s.Mean), 'g', -1, 64), strconv.FormatFloat(float64(s.CI95), 'g', -1, 64)}
	}
	if err := writeFile(filepath.Join(p.Dir, "pareto.csv"), func(w io.Writer) error {
		cw := csv.NewWriter(w)
		cw.Write([]string{"workload", "method", "knob", "setting", "runs", "slo_violations_or_degraded", "ci95", "slo_violations", "ci95",
			"degraded", "ci95", "failures", "ci95", "mean_rt_s", "ci95", "vcpu_s", "ci95", "gb_s", "ci95", "cost", "ci95", "on_frontier"})
		for _, r := range rows {
			rec := []string{r.Workload, r.Method, r.Knob, strconv.FormatFloat(r.Setting, 'g', -1, 64), strconv.Itoa(r.Runs)}
			for _, s := range []Stat{r.SLOOrDegraded, r.SLOViolations, r.Degraded, r.Failures, r.MeanRT, r.VCPUSeconds, r.GBSeconds, r.Dollars} {
				rec = append(rec, f(s)...)
			}
			cw.Write(append(rec, strconv.FormatBool(r.OnFrontier)))
		}
		cw.Flush()
		return cw.Error()
	}); err != nil {
		return err
	}
	if len(atCost) > 0 {
		if err := writeFile(filepath.Join(p.Dir, "at-its-cost.csv"), func(w io.Writer) error {
			cw := csv.NewWriter(w)
			cw.Write([]string{"workload", "policy", "vcpu_s", "slo_violations_or_degraded", "method", "frontier_slo_violations_or_degraded", "reduction"})
			g := func(v Num) string { return strconv.FormatFloat(float64(v), 'g', -1, 64) }
			for _, a := range atCost {
				cw.Write([]string{a.Workload, a.Policy, g(a.Cost), g(a.Quality), a.Method, g(a.Frontier), g(a.Reduction)})
			}
			cw.Flush()
			return cw.Error()
		}); err != nil {
			return err
		}
	}
	if err := writeFile(filepath.Join(p.Dir, "equal-cost.csv"), func(w io.Writer) error {
		cw := csv.NewWriter(w)
		cw.Write([]string{"workload", "baseline", "vcpu_s", "baseline_slo_violations_or_degraded", "drpc_slo_violations_or_degraded", "reduction"})
		g := func(v Num) string { return strconv.FormatFloat(float64(v), 'g', -1, 64) }
		for _, e := range equal {
			cw.Write([]string{e.Workload, e.Baseline, g(e.Cost), g(e.Quality), g(e.DRPC), g(e.Reduction)})
		}
		cw.Flush()
		return cw.Error()
	}); err != nil {
		return err
	}
	return report.WriteFile(filepath.Join(p.Dir, "report.html"), rep)
}

// progress logs a workload's runs every tenth of them.
func (p DRPCPareto) progress(workload string) func(done float64) {
	next := 0.1
	return func(done float64) {
		if done >= next-1e-9 {
			p.logf("pareto %s: %.0f%% of the runs done", workload, 100*done)
			for next <= done+1e-9 {
				next += 0.1
			}
		}
	}
}

func (p DRPCPareto) logf(format string, a ...any) {
	if p.Log != nil {
		fmt.Fprintf(p.Log, format+"\n", a...)
	}
}
