package experiment

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/control/policy"
	"github.com/shoal-project/shoal/experiment/report"
)

// Point is one policy's place in the quality-cost plane: the summary a
// report opens with.
type Point struct {
	Name    string
	Summary Summary
}

// measure is one axis of the quality-cost plane.
type measure struct {
	label  string // axis label
	name   string // in the verdict: "SLO violations", "p99"
	format func(v float64) string
	stat   func(s *Summary) Stat
	// successesOnly: the measure counts only the requests that succeeded,
	// so failing requests would flatter it.
	successesOnly bool
}

var (
	sloMeasure = measure{"SLO violations (%)", "SLO violations", func(v float64) string { return sig3(v) + "%" },
		pct(func(s *Summary) Stat { return s.SLOViolations }), false}
	p99Measure = measure{"p99 response time (s)", "p99", func(v float64) string { return sig3(v) + " s" },
		func(s *Summary) Stat { return s.P99 }, true}
	costMeasure = measure{"cost ($)", "cost", func(v float64) string { return "$" + sig3(v) },
		func(s *Summary) Stat { return s.Cost }, false}
	vcpuMeasure = measure{"vCPU-seconds", "vCPU-seconds", func(v float64) string { return sig3(v) + " vCPU-s" },
		func(s *Summary) Stat { return s.VCPUSeconds }, false}
)

// sig3 formats v with three significant digits, whole numbers from 1000
// with thousands separators.
func sig3(v float64) string {
	if math.Abs(v) >= 1000 && math.Abs(v) < 1e15 {
		return grouped(math.Round(v))
	}
	return fmt.Sprintf("%.3g", v)
}

// qualityOf is what a comparison's points are judged on: SLO violations
// where every policy has them (the scenario sets an SLO), else the p99.
func qualityOf(pts []Point) measure {
	for i := range pts {
		if math.IsNaN(float64(pts[i].Summary.SLOViolations.Mean)) {
			return p99Measure
		}
	}
	return sloMeasure
}

// costOf is what the points pay: the cost in dollars, or the vCPU-seconds
// where nothing has a price.
func costOf(pts []Point) measure {
	for i := range pts {
		if pts[i].Summary.Cost.Mean > 0 {
			return costMeasure
		}
	}
	return vcpuMeasure
}

// Frontier returns the indices of the points that no other point beats on
// both cost and quality (their means; lower is better on both), cheapest
// first. Of points equal on both, the first stands. Points without a finite
// cost or quality are left out.
func Frontier(cost, quality []float64) []int {
	var idx []int
	for i := range cost {
		if finite(cost[i]) && finite(quality[i]) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(cost[a], cost[b]), cmp.Compare(quality[a], quality[b]))
	})
	var front []int
	for _, i := range idx {
		// Cheapest first: a point is on the frontier when it is better than
		// every cheaper (or equally cheap) one already on it.
		if len(front) == 0 || quality[i] < quality[front[len(front)-1]] {
			front = append(front, i)
		}
	}
	return front
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// QualityCost is the summary figure: each point's quality against its cost
// with their 95% intervals, the frontier filled and joined, the others as
// rings; its caption names the best policy at each cost.
func QualityCost(title string, pts []Point) report.Figure {
	q, c := qualityOf(pts), costOf(pts)
	cost, quality := axes(pts, q, c)
	front, dropped := eligibleFrontier(pts, q, cost, quality)
	f := report.Figure{Title: title, XLabel: c.label, YLabel: q.label, Kind: report.KindScatter, LogY: spansDecades(quality)}
	line := report.Series{Name: "frontier", Connect: true}
	family := families(pts)
	for i := range pts {
		qs, cs := q.stat(&pts[i].Summary), c.stat(&pts[i].Summary)
		s := report.Series{Name: pts[i].Name, X: []float64{cost[i]}, Y: []float64{quality[i]}, Label: true,
			Hollow: !slices.Contains(front, i), Group: family[i]}
		if slices.Contains(dropped, i) {
			s.Note = failed(&pts[i]) + " failed"
		}
		if isBound(&pts[i]) {
			s.Note = "bound"
		}
		// Both measures are never negative: an interval stops at zero, or
		// on a log axis at a tenth of the mean.
		if h := float64(qs.CI95); finite(h) && h > 0 {
			floor := 0.0
			if f.LogY {
				floor = quality[i] / 10
			}
			s.Lo, s.Hi = []float64{max(floor, quality[i]-h)}, []float64{quality[i] + h}
		}
		if h := float64(cs.CI95); finite(h) && h > 0 {
			s.XLo, s.XHi = []float64{max(0, cost[i]-h)}, []float64{cost[i] + h}
		}
		f.Series = append(f.Series, s)
	}
	for _, i := range front {
		line.X, line.Y = append(line.X, cost[i]), append(line.Y, quality[i])
	}
	if len(front) > 1 {
		f.Series = append(f.Series, line)
	}
	f.Series = append(f.Series, familyFrontiers(family, cost, quality)...)
	f.Caption = verdict(pts, front, dropped, cost, quality, q, c) + " " + frontierNote

	return f
}

// families names, for each point, the policy it runs at one of several
// settings (hpa for hpa, hpa:target=30 and hpa:target=45), and "" for a
// policy run at one setting only.
func families(pts []Point) []string {
	base := make([]string, len(pts))
	count := map[string]int{}
	for i := range pts {
		if s, err := policy.Parse(pts[i].Name); err == nil && s.File == "" {
			base[i] = s.Name()
			count[base[i]]++
		}
	}
	for i := range base {
		if count[base[i]] < 2 {
			base[i] = ""
		}
	}
	return base
}

// familyFrontiers are the frontiers of each policy run at several
// settings, among its own settings only: the baseline's knob swept.
func familyFrontiers(family []string, cost, quality []float64) []report.Series {
	var out []report.Series
	for _, name := range slices.Compact(slices.Sorted(slices.Values(family))) {
		if name == "" {
			continue
		}
		var idx []int
		for i := range family {
			if family[i] == name {
				idx = append(idx, i)
			}
		}
		fc, fq := make([]float64, len(idx)), make([]float64, len(idx))
		for k, i := range idx {
			fc[k], fq[k] = cost[i], quality[i]
		}
		s := report.Series{Name: name, Connect: true}
		for _, k := range Frontier(fc, fq) {
			s.X, s.Y = append(s.X, fc[k]), append(s.Y, fq[k])
		}
		if len(s.X) > 1 {
			out = append(out, s)
		}
	}
	return out
}

// frontierNote explains the summary figure's marks.
const frontierNote = "Filled: on the frontier, where no policy is both cheaper and better (by the means); bars: 95% intervals over seeds; a coloured dashed line: one policy's frontier over its settings."

// Verdict is the sentence that names the best of the points at each cost.
func Verdict(pts []Point) string {
	q, c := qualityOf(pts), costOf(pts)
	cost, quality := axes(pts, q, c)
	front, dropped := eligibleFrontier(pts, q, cost, quality)
	return verdict(pts, front, dropped, cost, quality, q, c)
}

// maxExtraFailures is how many more of its requests (a fraction) a policy
// may fail than the most successful one and still be on a frontier judged
// by the p99, which counts only the requests that succeeded.
const maxExtraFailures = 0.01

// eligibleFrontier is Frontier over the points that may be on it, and the
// points left off for failing requests: where quality counts only the
// requests that succeeded (the p99), a policy that drops requests would
// look fast for it. (SLO violations count failures already.)
//
// Bounds (lb.IsBound: the oracle) are never on it: they show how far the
// deployable policies are from the best possible, and cannot be deployed.
func eligibleFrontier(pts []Point, q measure, cost, quality []float64) (front, dropped []int) {
	eligible := slices.Clone(quality)
	for i := range pts {
		if isBound(&pts[i]) {
			eligible[i] = math.NaN()
		}
	}
	if !q.successesOnly {
		return Frontier(cost, eligible), nil
	}
	best := math.Inf(-1)
	for i := range pts {
		if v := float64(pts[i].Summary.Success.Mean); finite(v) && !isBound(&pts[i]) {
			best = max(best, v)
		}
	}
	for i := range pts {
		if v := float64(pts[i].Summary.Success.Mean); finite(v) && v < best-maxExtraFailures && !isBound(&pts[i]) {
			eligible[i] = math.NaN()
			dropped = append(dropped, i)
		}
	}
	return Frontier(cost, eligible), dropped
}

// isBound reports whether a point is a bound, not a policy.
func isBound(p *Point) bool { return lb.IsBound(p.Name) }

// axes are the points' costs and qualities (means).
func axes(pts []Point, q, c measure) (cost, quality []float64) {
	cost = make([]float64, len(pts))
	quality = make([]float64, len(pts))
	for i := range pts {
		cost[i] = float64(c.stat(&pts[i].Summary).Mean)
		quality[i] = float64(q.stat(&pts[i].Summary).Mean)
	}
	return cost, quality
}

// failed is the share of a point's requests that failed, in percent.
func failed(p *Point) string { return sig3(100*(1-float64(p.Summary.Success.Mean))) + "%" }

// verdict is the sentence that names the best policy at each cost, and
// the policies left off the frontier for failing requests.
func verdict(pts []Point, front, dropped []int, cost, quality []float64, q, c measure) string {
	s := best(pts, front, cost, quality, q, c) + bounds(pts, front, quality, q)
	if len(dropped) > 0 {
		names := make([]string, len(dropped))
		for k, i := range dropped {
			names[k] = pts[i].Name + " (" + failed(&pts[i]) + ")"
		}
		s += " Left off for failing more requests: " + strings.Join(names, ", ") + "."
	}
	return s
}

// bounds is the verdict's sentence on the bounds: each one's quality, and
// how far the best deployable policy (the frontier's best quality) is from
// it.
func bounds(pts []Point, front []int, quality []float64, q measure) string {
	var parts []string
	for i := range pts {
		if !isBound(&pts[i]) || !finite(quality[i]) {
			continue
		}
		part := fmt.Sprintf("%s, %s %s", pts[i].Name, q.name, q.format(quality[i]))
		if len(front) > 0 {
			b := front[len(front)-1] // cheapest first: the last is the best
			if gap := quality[b]/quality[i] - 1; finite(gap) && quality[i] > 0 {
				part += fmt.Sprintf(" (%s is %s above it)", pts[b].Name, sig3(100*gap)+"%")
			}
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	return " Bound, not deployable: " + strings.Join(parts, "; ") + "."
}

// best is the verdict's first sentence.
func best(pts []Point, front []int, cost, quality []float64, q, c measure) string {
	switch {
	case len(front) == 0:
		return "No policy has both a " + c.name + " and a " + q.name + "."
	case len(pts) == 1:
		return fmt.Sprintf("One policy ran: %s, at %s, %s %s.", pts[0].Name, c.format(cost[0]), q.name, q.format(quality[0]))
	case len(front) == 1 && sameCost(cost, front[0]):
		i := front[0]
		return fmt.Sprintf("Every policy has the same %s (%s): the best is %s, %s %s.", c.name, c.format(cost[i]), pts[i].Name, q.name, q.format(quality[i]))
	case len(front) == 1:
		i := front[0]
		return fmt.Sprintf("%s is the best at every cost: %s, %s %s.", pts[i].Name, c.format(cost[i]), q.name, q.format(quality[i]))
	}
	parts := make([]string, len(front))
	for k, i := range front {
		parts[k] = fmt.Sprintf("%s from %s (%s %s)", pts[i].Name, c.format(cost[i]), q.format(quality[i]), q.name)
	}
	return "Best at each " + c.name + ": " + strings.Join(parts, ", ") + "."
}

// sameCost reports whether every point with a finite cost costs what point
// i does, to within a thousandth.
func sameCost(cost []float64, i int) bool {
	for _, v := range cost {
		if finite(v) && math.Abs(v-cost[i]) > 1e-3*math.Abs(cost[i]) {
			return false
		}
	}
	return true
}

// spansDecades reports whether positive values span more than 1.5 decades,
// where a log axis shows them better.
func spansDecades(v []float64) bool { return spans(v, math.Pow(10, 1.5)) }

// spans reports whether values, all positive (a log axis cannot show the
// others), span more than a factor f.
func spans(v []float64, f float64) bool {
	lo, hi := math.Inf(1), 0.0
	for _, x := range v {
		if !finite(x) {
			continue
		}
		if x <= 0 {
			return false
		}
		lo, hi = min(lo, x), max(hi, x)
	}
	return hi > 0 && hi/lo > f
}
