package experiment

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/experiment/report"
	"github.com/shoal-project/shoal/scenario"
)

// FrontierRow is one route at one setting in the mean-and-tail against
// egress plane.
type FrontierRow struct {
	Scenario string `json:"scenario"`
	Policy   string `json:"policy"`
	// Family is the route its setting belongs to (spread for spread:0.3).
	Family        string `json:"family"`
	Mean          Stat   `json:"mean_s"`
	P99           Stat   `json:"p99_s"`
	Success       Stat   `json:"success"`
	EgressPerHour Stat   `json:"egress_gb_per_hour"`
	FirstSeed     uint64 `json:"first_seed"`
}

// The frontier study's knobs: the share away of the fixed spreads (spread,
// EgressShares, and Istio's distribute), and the egress price, s per GB,
// of the SLATE-like and the learned routes. The prices span Even's egress
// down to nearly Local's on the validation runs (a Bookinfo call between
// clouds carries about 6 KB: 1000 s/GB prices it at 6 ms).
var (
	DistributeShares = []float64{0.1, 0.2, 0.3, 0.4, 0.5}
	FrontierPrices   = []float64{0, 1000, 3000, 10000, 30000, 100000}
)

// Frontier sweeps every route's knob on the benchmarks' test settings:
// local, even, locality, spread:X (EgressShares), distribute:X
// (DistributeShares), the SLATE-like at each of FrontierPrices, and the
// learned routes (chosen models) at each price; each setting's mean, p99,
// success and egress per hour, and each route's frontier of mean and of
// p99 against egress. frontier.csv, .json, .html, and the comparisons'
// own files in Dir/frontier-SCENARIO/baselines and .../multicloud.
func (s MultiCloudStudy) Frontier(ctx context.Context) ([]FrontierRow, error) {
	var rows []FrontierRow
	err := s.each(ctx, func(sc *scenario.Scenario, p *multicloud.Policy) error {
		hours := (sc.Horizon - sc.Warmup).Hours()
		baselines := []string{"local", "even", "locality"}
		for _, x := range EgressShares {
			baselines = append(baselines, "spread:"+ftoa(x))
		}
		for _, x := range DistributeShares {
			baselines = append(baselines, "distribute:"+ftoa(x))
		}
		for _, price := range FrontierPrices {
			baselines = append(baselines, "slate:egress="+ftoa(price))
		}
		learned := map[string]Learned{}
		var names []string
		for _, price := range FrontierPrices {
			opt := s.options()
			opt.EgressPrice = price
			l, err := MultiCloudPolicy(p, multicloud.KindChosen, opt)
			if err != nil {
				return err
			}
			name := "multicloud:egress=" + ftoa(price)
			learned[name], names = l, append(names, name)
		}
		s.say("%s: %d baseline settings and %d learned x %d seeds", sc.Name, len(baselines), len(names), s.Seeds)
		for _, c := range []struct {
			dir string
			cmp *Comparison
		}{
			{"baselines", &Comparison{Scenario: sc, Policies: baselines, Seeds: s.Seeds, Workers: s.Workers}},
			{"multicloud", &Comparison{Scenario: sc, Policies: names, Seeds: s.Seeds, Learned: learned, Workers: s.Workers}},
		} {
			res, err := c.cmp.Run(ctx)
			if err != nil {
				return err
			}
			if err := res.WriteFiles(filepath.Join(s.Dir, "frontier-"+sc.Name, c.dir), s.meta()); err != nil {
				return err
			}
			for i := range res.Policies {
				ps := &res.Policies[i]
				e := ps.Summary.EgressGB
				rows = append(rows, FrontierRow{Scenario: sc.Name, Policy: ps.Policy, Family: family(ps.Policy), Mean: ps.Summary.Mean, P99: ps.Summary.P99,
					Success: ps.Summary.Success, EgressPerHour: Stat{Mean: e.Mean / Num(hours), CI95: e.CI95 / Num(hours)}, FirstSeed: sc.Seed})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, s.writeFrontier(rows)
}

// family is the route a policy setting belongs to: its name before the
// first ':'.
func family(policy string) string {
	name, _, _ := strings.Cut(policy, ":")
	return name
}

func ftoa(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// Beaten reports, for route family f on benchmark sc, how many points of
// its frontier (of the mean against egress) the learned family's frontier
// beats: a learned setting with no more egress and a lower mean.
func Beaten(rows []FrontierRow, sc, learned, f string) (beaten, points int) {
	lc, lq := frontierOf(rows, sc, learned)
	bc, bq := frontierOf(rows, sc, f)
	for k := range bc {
		points++
		for j := range lc {
			if lc[j] <= bc[k] && lq[j] < bq[k] {
				beaten++
				break
			}
		}
	}
	return beaten, points
}

// frontierOf is family f's frontier of the mean against egress per hour
// on benchmark sc.
func frontierOf(rows []FrontierRow, sc, f string) (cost, quality []float64) {
	var c, q []float64
	for _, r := range rows {
		if r.Scenario == sc && r.Family == f {
			c, q = append(c, float64(r.EgressPerHour.Mean)), append(q, float64(r.Mean.Mean))
		}
	}
	for _, i := range Frontier(c, q) {
		cost, quality = append(cost, c[i]), append(quality, q[i])
	}
	return cost, quality
}

// frontierFigure draws one benchmark's settings, each route's frontier and
// the overall one, of the measure (mean or p99, ms) against egress.
func frontierFigure(title, ylabel string, rows []FrontierRow, stat func(*FrontierRow) Stat) report.Figure {
	fig := report.Figure{Title: title, Kind: report.KindScatter, XLabel: "egress (GB per hour)", YLabel: ylabel}
	cost, quality, fam := make([]float64, len(rows)), make([]float64, len(rows)), make([]string, len(rows))
	for i := range rows {
		cost[i], quality[i], fam[i] = float64(rows[i].EgressPerHour.Mean), 1000*float64(stat(&rows[i]).Mean), rows[i].Family
	}
	front := Frontier(cost, quality)
	// Each point is named by its route, not its setting (the table gives
	// those), so that a route keeps one colour in every figure.
	for i := range rows {
		fig.Series = append(fig.Series, report.Series{Name: fam[i], X: []float64{cost[i]}, Y: []float64{quality[i]}, Hollow: !slices.Contains(front, i)})
	}
	line := report.Series{Name: "frontier", Connect: true}
	for _, i := range front {
		line.X, line.Y = append(line.X, cost[i]), append(line.Y, quality[i])
	}
	if len(front) > 1 {
		fig.Series = append(fig.Series, line)
	}
	fig.Series = append(fig.Series, familyFrontiers(fam, cost, quality)...)
	fig.Caption = "Filled: on the frontier of all routes; a coloured line: one route's frontier over its settings (share away, or egress price)."
	return fig
}

func (s MultiCloudStudy) writeFrontier(rows []FrontierRow) error {
	head := []string{"scenario", "policy", "family", "mean_s", "mean_ci95", "p99_s", "p99_ci95", "success", "egress_gb_per_hour", "egress_ci95", "seeds", "first_seed"}
	var recs [][]string
	rep := &report.Report{Title: "Multi-cloud routing: every route's knob against egress", Meta: s.meta()}
	for i := 0; i < len(rows); {
		sc := rows[i].Scenario
		start := i
		t := report.Table{Caption: sc + " (mean ± 95% interval over seeds)", Columns: []string{"route", "mean (ms)", "p99 (ms)", "success %", "egress (GB/h)"}}
		for ; i < len(rows) && rows[i].Scenario == sc; i++ {
			r := rows[i]
			recs = append(recs, []string{sc, r.Policy, r.Family, g(float64(r.Mean.Mean)), g(float64(r.Mean.CI95)), g(float64(r.P99.Mean)), g(float64(r.P99.CI95)),
				g(float64(r.Success.Mean)), g(float64(r.EgressPerHour.Mean)), g(float64(r.EgressPerHour.CI95)), strconv.Itoa(s.Seeds), strconv.FormatUint(r.FirstSeed, 10)})
			t.Rows = append(t.Rows, []string{r.Policy, report.MeanCI(1000*float64(r.Mean.Mean), 1000*float64(r.Mean.CI95)),
				report.MeanCI(1000*float64(r.P99.Mean), 1000*float64(r.P99.CI95)), report.MeanCI(100*float64(r.Success.Mean), 100*float64(r.Success.CI95)),
				report.MeanCI(float64(r.EgressPerHour.Mean), float64(r.EgressPerHour.CI95))})
		}
		own := rows[start:i]
		rep.Tables = append(rep.Tables, t)
		rep.Figures = append(rep.Figures,
			frontierFigure(sc+": mean", "mean response time (ms)", own, func(r *FrontierRow) Stat { return r.Mean }),
			frontierFigure(sc+": p99", "p99 response time (ms)", own, func(r *FrontierRow) Stat { return r.P99 }))
		for _, f := range []string{"local", "even", "locality", "spread", "distribute", "slate"} {
			if b, n := Beaten(own, sc, "multicloud", f); n > 0 {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s: the learned routes' frontier beats %d of %s's %d frontier points (no more egress, lower mean)", sc, b, f, n))
			}
		}
	}
	return s.write("frontier", head, recs, rows, rep)
}
