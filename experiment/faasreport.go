package experiment

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/shoal-project/shoal/experiment/report"
)

// writeFaaSReport writes Dir/Name.html: per workflow a table and Fig. 8's
// bars (the cheapest price meeting the QoS per level and method, with 95%
// intervals; a missing bar found none).
func (s FaaSConfStudy) writeFaaSReport(cells []FaaSConfCell) error {
	r := &report.Report{Title: "FaaSConf " + s.Name, Meta: []report.KV{{Key: "study", Value: "faasconf " + s.Name},
		{Key: "sessions", Value: fmt.Sprintf("%d per workflow, level and method (seeds 1-%d), %d rounds each", s.Seeds, s.Seeds, s.Iterations)},
		{Key: "training seed", Value: fmt.Sprint(s.TrainSeed)}}}
	cols := slices.Clone(s.Methods)
	if s.Oracle {
		cols = append(cols, "oracle")
	}
	for _, g := range s.gaps(cells) {
		r.Notes = append(r.Notes, fmt.Sprintf("%s: faasconf %+.1f%% against the best of the paper's baselines (%d levels), verified %+.1f%% against the oracle (%d levels)",
			g.Scenario, 100*g.VsBaseline, g.BaselineLevels, 100*g.VsOracle, g.OracleLevels))
	}
	for i := 0; i < len(cells); {
		sc := cells[i].Scenario
		t := report.Table{Caption: sc + ": the cheapest price meeting the QoS, $/h (sessions that found one)", Columns: append([]string{"level"}, cols...)}
		fig := report.Figure{Title: sc, Kind: report.KindBar, XLabel: "workload level", YLabel: "price ($/h)"}
		series := make([]report.Series, len(cols))
		for k, m := range cols {
			series[k].Name = m
		}
		for ; i < len(cells) && cells[i].Scenario == sc; i += len(cols) {
			row := cells[i : i+len(cols)]
			line := []string{fmt.Sprint(row[0].Level)}
			fig.Categories = append(fig.Categories, fmt.Sprint(row[0].Level))
			x := float64(len(fig.Categories) - 1)
			for k, c := range row {
				y, lo, hi := math.NaN(), math.NaN(), math.NaN()
				if c.Found > 0 {
					y = float64(c.Best.Mean)
					lo, hi = y-float64(c.Best.CI95), y+float64(c.Best.CI95)
					line = append(line, fmt.Sprintf("%s (%d/%d)", report.MeanCI(y, float64(c.Best.CI95)), c.Found, c.Sessions))
				} else {
					line = append(line, fmt.Sprintf("none (0/%d)", c.Sessions))
				}
				series[k].X, series[k].Y = append(series[k].X, x), append(series[k].Y, y)
				series[k].Lo, series[k].Hi = append(series[k].Lo, lo), append(series[k].Hi, hi)
			}
			t.Rows = append(t.Rows, line)
		}
		fig.Series = series
		r.Tables = append(r.Tables, t)
		r.Figures = append(r.Figures, fig)
	}
	return report.WriteFile(filepath.Join(s.Dir, s.Name+".html"), r)
}

// writeAdaptReport writes Dir/adaptability.html: the summary table and,
// for seed 1, Fig. 9's CDF of the windows' latency (over the QoS target),
// the price over time and the workload.
func (s FaaSConfStudy) writeAdaptReport(rows []FaaSAdaptRow, runs map[string][][]FaaSWindow, qos float64) error {
	r := &report.Report{Title: "FaaSConf adaptability", Subtitle: s.Scenarios[0] + " under the 85-minute dynamic workload",
		Meta: []report.KV{{Key: "study", Value: "faasconf adaptability"}, {Key: "seeds", Value: fmt.Sprint(s.Seeds)}, {Key: "training seed", Value: fmt.Sprint(s.TrainSeed)}}}
	t := report.Table{Caption: "Over the windows (mean ± 95% CI over the seeds)", Columns: []string{"method", "QoS violations (%)", "mean latency (s)", "price ($/h)"}}
	for _, x := range rows {
		t.Rows = append(t.Rows, []string{x.Method, report.MeanCI(100*float64(x.Violations.Mean), 100*float64(x.Violations.CI95)),
			report.MeanCI(float64(x.Latency.Mean), float64(x.Latency.CI95)), report.MeanCI(float64(x.Price.Mean), float64(x.Price.CI95))})
	}
	r.Tables = append(r.Tables, t)
	cdf := report.Figure{Title: "Latency over the QoS target, every window (seed 1)", Kind: report.KindStep, XLabel: "window mean latency / QoS target", YLabel: "share of windows",
		Caption: "Windows right of 1 missed the latency target."}
	price := report.Figure{Title: "Price over time (seed 1)", XLabel: "window (30 s)", YLabel: "price ($/h)"}
	level := report.Series{Name: "workload level"}
	for _, x := range rows {
		ws := runs[x.Method][0]
		lat := make([]float64, len(ws))
		p := report.Series{Name: x.Method}
		for k, w := range ws {
			lat[k] = w.Latency / qos
			p.X, p.Y = append(p.X, float64(k)), append(p.Y, w.Price)
			if x.Method == "oracle" {
				level.X, level.Y = append(level.X, float64(k)), append(level.Y, w.Level)
			}
		}
		cdf.Series = append(cdf.Series, report.ECDF(x.Method, lat, 500))
		price.Series = append(price.Series, p)
	}
	safe := report.Figure{Title: "FaaSConf's safe price range over time (seed 1)", XLabel: "window (30 s)", YLabel: "price ($/h)",
		Caption: "The range FaaSConf's last proposal was checked against when each window's configuration was chosen (its level's, or the nearest one's); it moves down after calm and back after violations."}
	lo, hi, ran := report.Series{Name: "lower bound"}, report.Series{Name: "upper bound"}, report.Series{Name: "price run"}
	for k, w := range runs["faasconf"][0] {
		if w.SafeHigh > 0 {
			lo.X, lo.Y, hi.X, hi.Y = append(lo.X, float64(k)), append(lo.Y, w.SafeLow), append(hi.X, float64(k)), append(hi.Y, w.SafeHigh)
		}
		ran.X, ran.Y = append(ran.X, float64(k)), append(ran.Y, w.Price)
	}
	safe.Series = []report.Series{lo, hi, ran}
	r.Figures = append(r.Figures, cdf, price, safe, report.Figure{Title: "The dynamic workload", XLabel: "window (30 s)", YLabel: "level (x the scenario's rate)", Series: []report.Series{level}})
	return report.WriteFile(filepath.Join(s.Dir, "adaptability.html"), r)
}
