package experiment

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-project/shoal/experiment/report"
	"github.com/shoal-project/shoal/store"
)

// RunSet is a named set of stored runs: a sweep's, or one run.
type RunSet struct {
	Name string
	Runs []*store.Run
}

// RunPoint is what stored runs are lined up by across sets.
type RunPoint struct {
	Kind, Scenario, Policy string
	Load                   float64
}

// PointOf is a run's point.
func PointOf(r *store.Run) RunPoint { return RunPoint{r.Kind, r.Scenario, r.Policy, r.Load} }

// LineUp indexes each set's runs by point (the newest of a point stands,
// as List returns the newest first) and returns every point of any set,
// sorted by scenario, load, policy and kind. Sets of one run each that ran
// the same policy (the same kind of run) are lined up as one point, the
// first run's, even where their scenario or load differ: that is how one
// policy's runs before and after a change are compared. Runs of different
// policies never share a point.
func LineUp(sets []RunSet) ([]map[RunPoint]*store.Run, []RunPoint) {
	byPoint := make([]map[RunPoint]*store.Run, len(sets))
	if samePolicy(sets) {
		p := PointOf(sets[0].Runs[0])
		for i := range sets {
			byPoint[i] = map[RunPoint]*store.Run{p: sets[i].Runs[0]}
		}
		return byPoint, []RunPoint{p}
	}
	var order []RunPoint
	seen := map[RunPoint]bool{}
	for i, s := range sets {
		byPoint[i] = map[RunPoint]*store.Run{}
		for _, r := range s.Runs {
			p := PointOf(r)
			if _, ok := byPoint[i][p]; !ok {
				byPoint[i][p] = r
			}
			if !seen[p] {
				seen[p] = true
				order = append(order, p)
			}
		}
	}
	slices.SortFunc(order, func(a, b RunPoint) int {
		return cmp.Or(strings.Compare(a.Scenario, b.Scenario), cmp.Compare(a.Load, b.Load),
			strings.Compare(a.Policy, b.Policy), strings.Compare(a.Kind, b.Kind))
	})
	return byPoint, order
}

// samePolicy reports whether every set is one run, and all ran one policy.
func samePolicy(sets []RunSet) bool {
	for _, s := range sets {
		if len(s.Runs) != 1 || s.Runs[0].Policy != sets[0].Runs[0].Policy || s.Runs[0].Kind != sets[0].Runs[0].Kind {
			return false
		}
	}
	return true
}

// SummaryOf reads a stored run's statistics back into a Summary, by their
// JSON names (StoreRuns wrote them so); those it lacks are NaN.
func SummaryOf(stats map[string]store.Stat) Summary {
	var s Summary
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		st := store.StatOf(stats, name)
		v.Field(i).Set(reflect.ValueOf(Stat{Mean: Num(st.Mean), CI95: Num(st.CI95)}))
	}
	return s
}

// RunsReport is the report of stored runs: per scenario and load, the
// chart of quality against cost of every policy in every set (the frontier
// across a sweep, or two sweeps side by side) and a table of the named
// statistics. Runs that are no simulation (trainings, studies) appear in
// the tables only.
func RunsReport(sets []RunSet, stats []string, meta []report.KV) *report.Report {
	names := make([]string, len(sets))
	for i, s := range sets {
		names[i] = s.Name
	}
	rep := &report.Report{Title: "Shoal: runs " + strings.Join(names, ", "),
		Meta: append([]report.KV{{Key: "sets", Value: strings.Join(names, ", ")},
			{Key: "±", Value: "the 95% confidence interval over each run's seeds"}}, meta...)}
	byPoint, order := LineUp(sets)
	for start := 0; start < len(order); {
		end := start + 1
		for end < len(order) && order[end].Scenario == order[start].Scenario && order[end].Load == order[start].Load {
			end++
		}
		group := order[start:end]
		title := group[0].Scenario
		if group[0].Load != 0 {
			title += " at load " + strconv.FormatFloat(group[0].Load, 'g', 4, 64)
		}
		var pts []Point
		t := report.Table{Caption: title, Columns: []string{"policy"}}
		for _, st := range stats {
			for _, n := range names {
				t.Columns = append(t.Columns, st+" "+n)
			}
		}
		for _, p := range group {
			row := []string{p.Policy}
			if p.Kind != store.KindSim {
				row[0] += " (" + p.Kind + ")"
			}
			for _, st := range stats {
				for i := range sets {
					r, ok := byPoint[i][p]
					if !ok {
						row = append(row, "-")
						continue
					}
					s := store.StatOf(r.Summary, st)
					row = append(row, cell(Stat{Mean: Num(s.Mean), CI95: Num(s.CI95)}))
				}
			}
			t.Rows = append(t.Rows, row)
			for i := range sets {
				if r, ok := byPoint[i][p]; ok && p.Kind == store.KindSim {
					name := p.Policy
					if len(sets) > 1 {
						name += " · " + names[i]
					}
					pts = append(pts, Point{name, SummaryOf(r.Summary)})
				}
			}
		}
		if len(pts) > 0 {
			rep.Summary = append(rep.Summary, QualityCost(title, pts))
		}
		rep.Tables = append(rep.Tables, t)
		start = end
	}
	if len(order) == 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("The sets %s hold no runs.", strings.Join(names, ", ")))
	}
	return rep
}
