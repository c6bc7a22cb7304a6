package experiment

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/shoal-project/shoal/edge"
	"github.com/shoal-project/shoal/envs/edgeenv"
	"github.com/shoal-project/shoal/experiment/report"
	"github.com/shoal-project/shoal/learn/venv"
)

// EdgeStudy is the edge scheduling paper's evaluation (section 4.2). The
// virtual agents' distributions (Table 1) and the offloading ratio of the
// virtual environments (Fig. 4) are built so far.
type EdgeStudy struct {
	Dir     string
	Logging edgeenv.Logging
	Agents  int // virtual agents generated per method (the paper: 100,000)
	Steps   int // generator updates of the GANs
	Seeds   int // training seeds, for the 95% intervals
	// Fig. 4: the logged day, its length, the slices, the virtual
	// environments' training.
	OffloadDay float64
	DayWindow  time.Duration
	Slices     int
	Venv       venv.Config
}

// DefaultEdgeStudy logs a week and generates 100,000 agents, 3 seeds; Fig.
// 4 splits day 2 into 12 slices.
func DefaultEdgeStudy(dir string) EdgeStudy {
	return EdgeStudy{Dir: dir, Logging: edgeenv.DefaultLogging(), Agents: 100000, Steps: 3000, Seeds: 3,
		OffloadDay: 2, DayWindow: 24 * time.Hour, Slices: 12, Venv: venv.DefaultConfig()}
}

// DistributionRow is one method's KL per measure over the seeds.
type DistributionRow struct {
	Method string `json:"method"`
	KL     []Stat `json:"kl"` // by edgeenv.Measures
}

// Distributions logs the real world under the random engine policy into
// Dir/logs (transitions.jsonl, devices.jsonl), fits every method to the
// devices alone, and writes Table 1: the KL between virtual and real
// agents per measure, mean and 95% interval over the training seeds;
// distributions.csv, .json, .html.
func (s EdgeStudy) Distributions(ctx context.Context) ([]DistributionRow, error) {
	logs := filepath.Join(s.Dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, err
	}
	tr, err := os.Create(filepath.Join(logs, "transitions.jsonl"))
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	devPath := filepath.Join(logs, "devices.jsonl")
	dev, err := os.Create(devPath)
	if err != nil {
		return nil, err
	}
	if err := edgeenv.Log(edge.Default(), s.Logging, tr, dev); err != nil {
		dev.Close()
		return nil, err
	}
	if err := dev.Close(); err != nil {
		return nil, err
	}
	f, err := os.Open(devPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := edgeenv.ReadDevices(f)
	if err != nil {
		return nil, err
	}
	kl := map[string][][]float64{} // method -> measure -> per seed
	for seed := 1; seed <= s.Seeds; seed++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rows, err := edgeenv.Agents(recs, s.Agents, s.Steps, uint64(seed))
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if kl[r.Method] == nil {
				kl[r.Method] = make([][]float64, len(r.KL))
			}
			for i, v := range r.KL {
				kl[r.Method][i] = append(kl[r.Method][i], v)
			}
		}
	}
	var out []DistributionRow
	head := []string{"method"}
	for _, m := range edgeenv.Measures {
		head = append(head, "kl_"+m, "kl_"+m+"_ci95")
	}
	head = append(head, "seeds", "agents", "real_devices")
	t := report.Table{Caption: fmt.Sprintf("KL between virtual and real agents (Table 1): %d virtual agents per method from %d real devices, mean ± 95%% interval over %d training seeds",
		s.Agents, len(recs), s.Seeds), Columns: append([]string{"method"}, edgeenv.Measures...)}
	var recsCSV [][]string
	for _, m := range edgeenv.Methods {
		r := DistributionRow{Method: m}
		line, cells := []string{m}, []string{m}
		for _, v := range kl[m] {
			st := meanCI(v, func(x *float64) float64 { return *x })
			r.KL = append(r.KL, st)
			line = append(line, g(float64(st.Mean)), g(float64(st.CI95)))
			cells = append(cells, report.MeanCI(float64(st.Mean), float64(st.CI95)))
		}
		recsCSV = append(recsCSV, append(line, strconv.Itoa(s.Seeds), strconv.Itoa(s.Agents), strconv.Itoa(len(recs))))
		t.Rows = append(t.Rows, cells)
		out = append(out, r)
	}
	rep := &report.Report{Title: "Edge scheduling: virtual agents (Table 1)", Tables: []report.Table{t},
		Meta: []report.KV{{Key: "study", Value: "edge distributions"}, {Key: "logging seed", Value: fmt.Sprint(s.Logging.Seed)},
			{Key: "logged days", Value: fmt.Sprint(s.Logging.Days)}, {Key: "window", Value: s.Logging.Window.String()}}}
	return out, writeStudy(s.Dir, "distributions", head, recsCSV, out, rep)
}

// OffloadRatio logs day OffloadDay of the real world under the random
// engine (Dir/logs/day.jsonl), learns a virtual environment from each of
// Slices parts of it alone, and writes each scene's offloading ratio under
// the random policy, real against virtual, per slice (the paper's Fig. 4);
// offload-ratio.csv, .json, .html.
func (s EdgeStudy) OffloadRatio(ctx context.Context) ([]edgeenv.SliceRatio, error) {
	logs := filepath.Join(s.Dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(logs, "day.jsonl")
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	day := edgeenv.Logging{Seed: s.Logging.Seed, Days: []float64{s.OffloadDay}, Window: s.DayWindow}
	if err := edgeenv.Log(edge.Default(), day, f, io.Discard); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	if f, err = os.Open(path); err != nil {
		return nil, err
	}
	defer f.Close()
	log, err := edge.ReadLog(f)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows, err := edgeenv.OffloadRatios(log, s.Slices, s.Venv, s.Logging.Seed)
	if err != nil {
		return nil, err
	}
	head := []string{"slice", "scene", "real", "virtual", "logging_seed", "day"}
	var recs [][]string
	figs := make([]report.Figure, edge.Scenes)
	names := edge.Default().Groups
	for g := range figs {
		figs[g] = report.Figure{Title: names[g].Name, XLabel: "slice of the day", YLabel: "offloading ratio",
			Series: []report.Series{{Name: "real"}, {Name: "virtual"}}}
	}
	for _, r := range rows {
		recs = append(recs, []string{strconv.Itoa(r.Slice), names[r.Scene].Name, g(r.Real), g(r.Virtual), fmt.Sprint(s.Logging.Seed), g(s.OffloadDay)})
		f := &figs[r.Scene]
		for i, v := range []float64{r.Real, r.Virtual} {
			f.Series[i].X, f.Series[i].Y = append(f.Series[i].X, float64(r.Slice)), append(f.Series[i].Y, v)
		}
	}
	rep := &report.Report{Title: "Edge scheduling: offloading ratio, real and virtual (Fig. 4)", Figures: figs,
		Meta: []report.KV{{Key: "study", Value: "edge offload-ratio"}, {Key: "logging seed", Value: fmt.Sprint(s.Logging.Seed)},
			{Key: "day", Value: g(s.OffloadDay)}, {Key: "slices", Value: strconv.Itoa(s.Slices)}}}
	return rows, writeStudy(s.Dir, "offload-ratio", head, recs, rows, rep)
}
