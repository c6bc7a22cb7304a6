package experiment

import (
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/envs/multicloudenv"
	"github.com/shoal-project/shoal/experiment/report"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/scenario"
)

// MultiCloudStudy is the multi-cloud routing paper's evaluation (section
// III) on its two benchmarks: the models' accuracy offline and under the
// online test settings (Tables I and II), BO's convergence on the models
// (Fig. 7), the response time of every route (Fig. 8) and the time a
// rebalance takes (Fig. 9).
type MultiCloudStudy struct {
	Dir       string   // output directory; models are cached in Dir/policies
	Scenarios []string // default: bookinfo, online-boutique
	Seeds     int      // seeds of the overall comparison (run i: the scenario's seed + i)
	TrainSeed uint64
	Train     multicloudenv.Config
	// OnlinePeriods is the number of measurement periods collected under
	// the online test settings for Table II.
	OnlinePeriods int
	// Moments is the number of online moments BO's convergence is averaged over.
	Moments int
	// Options are the learned routes' (default multicloud.DefaultOptions).
	Options multicloud.Options
	// EgressShare is the egress study's budget as a share of Even's
	// egress (default 0.5), or BudgetGBPerHour, when set, the budget.
	EgressShare, BudgetGBPerHour float64
	Workers                      int
	// Progress, when set, is told what runs.
	Progress func(msg string)
}

// DefaultMultiCloudStudy is the paper's evaluation with Shoal's defaults.
func DefaultMultiCloudStudy(dir string) MultiCloudStudy {
	return MultiCloudStudy{Dir: dir, Scenarios: []string{"bookinfo", "online-boutique"}, Seeds: 5, TrainSeed: 1,
		Train: multicloudenv.DefaultConfig(), OnlinePeriods: 300, Moments: 10, Options: multicloud.DefaultOptions()}
}

// options are the learned routes' options: Options, or the defaults.
func (s MultiCloudStudy) options() multicloud.Options {
	if s.Options == (multicloud.Options{}) {
		return multicloud.DefaultOptions()
	}
	return s.Options
}

func (s MultiCloudStudy) say(format string, args ...any) {
	if s.Progress != nil {
		s.Progress(fmt.Sprintf(format, args...))
	}
}

// Policy returns the trained models of a scenario, from Dir/policies or
// trained and saved there.
func (s MultiCloudStudy) Policy(ctx context.Context, sc *scenario.Scenario) (*multicloud.Policy, error) {
	path := filepath.Join(s.Dir, "policies", sc.Name+".models")
	if f, err := os.Open(path); err == nil {
		defer f.Close()
		p, err := multicloud.ReadPolicy(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w (delete it to train again)", path, err)
		}
		shift := cmp.Or(p.Shift, multicloud.ShiftOneWay)
		if p.Provenance.Seed != s.TrainSeed || p.Inputs != s.Train.Inputs || p.Provenance.Samples != s.Train.Collection.Periods || shift != cmp.Or(s.Train.Collection.Shift, multicloud.ShiftOneWay) {
			return nil, fmt.Errorf("%s was trained with seed %d, inputs %s, %d periods, %s shifts; this study wants %d, %s, %d, %s (delete it to train again)",
				path, p.Provenance.Seed, p.Inputs, p.Provenance.Samples, shift, s.TrainSeed, s.Train.Inputs, s.Train.Collection.Periods, s.Train.Collection.Shift)
		}
		return p, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	s.say("training the performance models of %s (seed %d)", sc.Name, s.TrainSeed)
	cfg := s.Train
	cfg.Seed, cfg.Collection.Seed = s.TrainSeed, s.TrainSeed
	res, err := multicloudenv.Train(ctx, sc, cfg)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return res.Policy, modelfile.WriteFile(path, res.Policy.Write)
}

func (s MultiCloudStudy) each(ctx context.Context, f func(sc *scenario.Scenario, p *multicloud.Policy) error) error {
	for _, name := range s.Scenarios {
		sc, err := scenario.Lookup(name)
		if err != nil {
			return err
		}
		p, err := s.Policy(ctx, sc)
		if err != nil {
			return err
		}
		if err := f(sc, p); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// ModelRow is one model's accuracy on one service (or "mean", the mean
// over the services) of a benchmark, offline and online.
type ModelRow struct {
	Scenario string              `json:"scenario"`
	Service  string              `json:"service"`
	Model    string              `json:"model"`
	Offline  multicloud.Accuracy `json:"offline"`
	Online   multicloud.Accuracy `json:"online"`
}

// Models writes Tables I and II: each model's R², MSE and MAE on the
// offline test split and on data collected under the online test settings
// (the scenario itself, with random request shifts), per service and their
// mean; models.csv, models.json, models.html.
func (s MultiCloudStudy) Models(ctx context.Context) ([]ModelRow, error) {
	var rows []ModelRow
	err := s.each(ctx, func(sc *scenario.Scenario, p *multicloud.Policy) error {
		s.say("%s: collecting %d periods under the online test settings", sc.Name, s.OnlinePeriods)
		c := s.Train.Collection
		c.Seed, c.Periods, c.Random = s.TrainSeed+1000, s.OnlinePeriods, false
		standard := map[string][]float64{}
		for _, m := range p.Services {
			standard[m.Name] = m.Standard
		}
		data, err := multicloudenv.Collect(ctx, sc, c, standard, nil)
		if err != nil {
			return err
		}
		for _, kind := range []string{"svr", "nn"} {
			models, err := p.Models(kind)
			if err != nil {
				return err
			}
			var mean ModelRow
			for _, m := range p.Services {
				r := ModelRow{Scenario: sc.Name, Service: m.Name, Model: kind, Offline: m.Test[kind]}
				if samples := data.Samples[m.Name]; len(samples) > 1 {
					r.Online = multicloudenv.Evaluate(models[m.Name].Model, samples)
				}
				rows = append(rows, r)
				mean.Offline = addAccuracy(mean.Offline, r.Offline, len(p.Services))
				mean.Online = addAccuracy(mean.Online, r.Online, len(p.Services))
			}
			mean.Scenario, mean.Service, mean.Model = sc.Name, "mean", kind
			rows = append(rows, mean)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, s.writeModels(rows)
}

func addAccuracy(sum, a multicloud.Accuracy, n int) multicloud.Accuracy {
	k := float64(n)
	return multicloud.Accuracy{R2: sum.R2 + a.R2/k, MSE: sum.MSE + a.MSE/k, MAE: sum.MAE + a.MAE/k, N: sum.N + a.N}
}

func (s MultiCloudStudy) writeModels(rows []ModelRow) error {
	head := []string{"scenario", "service", "model", "offline_r2", "offline_mse", "offline_mae", "offline_n", "online_r2", "online_mse", "online_mae", "online_n", "train_seed"}
	var recs [][]string
	t := report.Table{Caption: "Performance models: R², MSE (ms²) and MAE (ms) on the offline test split (Table I) and under the online test settings (Table II)",
		Columns: []string{"benchmark", "service", "model", "offline R²", "MSE", "MAE", "online R²", "MSE", "MAE"}}
	for _, r := range rows {
		recs = append(recs, []string{r.Scenario, r.Service, r.Model, g(r.Offline.R2), g(r.Offline.MSE), g(r.Offline.MAE), strconv.Itoa(r.Offline.N),
			g(r.Online.R2), g(r.Online.MSE), g(r.Online.MAE), strconv.Itoa(r.Online.N), strconv.FormatUint(s.TrainSeed, 10)})
		t.Rows = append(t.Rows, []string{r.Scenario, r.Service, r.Model, f3(r.Offline.R2), f2(r.Offline.MSE), f2(r.Offline.MAE), f3(r.Online.R2), f2(r.Online.MSE), f2(r.Online.MAE)})
	}
	rep := &report.Report{Title: "Multi-cloud routing: performance models", Tables: []report.Table{t}, Meta: s.meta()}
	return s.write("models", head, recs, rows, rep)
}

// ConvergencePoint is the mean minimum BO found after a step, over moments.
type ConvergencePoint struct {
	Scenario string `json:"scenario"`
	Service  string `json:"service"`
	Model    string `json:"model"`
	Step     int    `json:"step"`
	Min      Stat   `json:"min_ms"`
}

// Convergence writes Fig. 7: BO with 20 steps on each model of the first
// routed service of each benchmark, at Moments moments drawn from the
// online test settings; the minimum predicted response time found after
// each step, with its 95% interval over the moments; convergence.csv,
// .json, .html.
func (s MultiCloudStudy) Convergence(ctx context.Context) ([]ConvergencePoint, error) {
	const steps = 20
	var out []ConvergencePoint
	err := s.each(ctx, func(sc *scenario.Scenario, p *multicloud.Policy) error {
		states, topo, err := s.moments(sc)
		if err != nil {
			return err
		}
		svc := topo.Services[0].Name
		for _, kind := range []string{"svr", "nn"} {
			models, err := p.Models(kind)
			if err != nil {
				return err
			}
			traces := make([][]float64, steps)
			for k, row := range states {
				_, tr, err := multicloud.Optimise(models[svc], row[0], steps, multicloud.Limits{}, rand.New(rand.NewPCG(uint64(k)+1, 7)))
				if err != nil {
					return err
				}
				for i, v := range tr {
					traces[i] = append(traces[i], v)
				}
			}
			for i, v := range traces {
				out = append(out, ConvergencePoint{Scenario: sc.Name, Service: svc, Model: kind, Step: i + 1, Min: meanCI(v, func(x *float64) float64 { return *x })})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, s.writeConvergence(out)
}

// moments runs the scenario (its online test settings, Istio's default
// routes) with seed TrainSeed and returns every routed service's state at
// Moments periods spread over the horizon (moment x service).
func (s MultiCloudStudy) moments(sc *scenario.Scenario) ([][]*multicloud.State, *multicloud.Topology, error) {
	cl, err := cluster.New(&sc.Config, cluster.Options{Seed: s.TrainSeed, Traces: sc.Traces(), Horizon: sc.Horizon})
	if err != nil {
		return nil, nil, err
	}
	var snap metrics.Snapshot
	cl.Observe(&snap)
	topo, err := multicloud.ReadTopology(&snap)
	if err != nil {
		return nil, nil, err
	}
	var out [][]*multicloud.State
	every := sc.Horizon / time.Duration(s.Moments+1)
	for k := 1; k <= s.Moments; k++ {
		at := time.Duration(k) * every
		cl.RunUntil(at - sc.ControlPeriod)
		cl.Observe(&snap)
		cl.RunUntil(at)
		cl.Observe(&snap)
		var row []*multicloud.State
		for i := range topo.Services {
			st := new(multicloud.State)
			topo.Observe(st, &snap, &topo.Services[i])
			row = append(row, st)
		}
		out = append(out, row)
	}
	return out, topo, nil
}

// TimeRow is the time one rebalance takes with one model on a benchmark.
type TimeRow struct {
	Scenario string `json:"scenario"`
	Model    string `json:"model"`
	// Compute is the wall time of the BO on the model for every routed
	// service (Options.Steps steps each), s; Span the simulated time the
	// rebalance takes with a control period between layers, s (Fig. 9).
	Compute  Stat    `json:"compute_s"`
	Span     float64 `json:"span_s"`
	Layers   int     `json:"layers"`
	Services int     `json:"services"`
}

// Time writes Fig. 9: the time of one rebalance of all services on each
// model at Moments moments (wall time of the BO, mean and 95% interval),
// and the simulated span with a control period per layer, beside BO on the
// system, whose every step is a control period; time.csv, .json, .html.
func (s MultiCloudStudy) Time(ctx context.Context) ([]TimeRow, error) {
	opt := s.options()
	var rows []TimeRow
	err := s.each(ctx, func(sc *scenario.Scenario, p *multicloud.Policy) error {
		states, topo, err := s.moments(sc)
		if err != nil {
			return err
		}
		layers := len(topo.Layers)
		for _, kind := range []string{"svr", "nn"} {
			models, err := p.Models(kind)
			if err != nil {
				return err
			}
			var walls []float64
			for k, row := range states {
				rng := rand.New(rand.NewPCG(uint64(k)+1, 9))
				start := time.Now()
				for i, st := range row {
					if _, _, err := multicloud.Optimise(models[topo.Services[i].Name], st, opt.Steps, multicloud.Limits{Utilisation: opt.UtilisationCap()}, rng); err != nil {
						return err
					}
				}
				walls = append(walls, time.Since(start).Seconds())
			}
			rows = append(rows, TimeRow{Scenario: sc.Name, Model: kind, Compute: meanCI(walls, func(x *float64) float64 { return *x }),
				Span: (time.Duration(layers-1) * sc.ControlPeriod).Seconds(), Layers: layers, Services: len(topo.Services)})
		}
		rows = append(rows, TimeRow{Scenario: sc.Name, Model: "bo-system", Span: (time.Duration(layers*opt.Steps) * sc.ControlPeriod).Seconds(),
			Layers: layers, Services: len(topo.Services)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	head := []string{"scenario", "model", "compute_s", "compute_ci95", "span_s", "layers", "services", "moments", "train_seed"}
	var recs [][]string
	t := report.Table{Caption: "One rebalance of every routed service: wall time of the BO on the model, and the simulated span (a control period between layers; BO on the system spends one per step)",
		Columns: []string{"benchmark", "route", "compute (ms)", "span (s)", "layers", "services"}}
	for _, r := range rows {
		recs = append(recs, []string{r.Scenario, r.Model, g(float64(r.Compute.Mean)), g(float64(r.Compute.CI95)), g(r.Span), strconv.Itoa(r.Layers), strconv.Itoa(r.Services),
			strconv.Itoa(s.Moments), strconv.FormatUint(s.TrainSeed, 10)})
		t.Rows = append(t.Rows, []string{r.Scenario, r.Model, report.MeanCI(1000*float64(r.Compute.Mean), 1000*float64(r.Compute.CI95)), g(r.Span), strconv.Itoa(r.Layers), strconv.Itoa(r.Services)})
	}
	rep := &report.Report{Title: "Multi-cloud routing: rebalance time (Fig. 9)", Tables: []report.Table{t}, Meta: s.meta()}
	return rows, s.write("time", head, recs, rows, rep)
}

func (s MultiCloudStudy) writeConvergence(pts []ConvergencePoint) error {
	head := []string{"scenario", "service", "model", "step", "min_ms", "min_ci95", "train_seed"}
	var recs [][]string
	rep := &report.Report{Title: "Multi-cloud routing: BO convergence on the models (Fig. 7)", Meta: s.meta()}
	figs := map[string]*report.Figure{}
	var order []string
	for _, p := range pts {
		recs = append(recs, []string{p.Scenario, p.Service, p.Model, strconv.Itoa(p.Step), g(float64(p.Min.Mean)), g(float64(p.Min.CI95)), strconv.FormatUint(s.TrainSeed, 10)})
		f, ok := figs[p.Scenario]
		if !ok {
			f = &report.Figure{Title: p.Scenario + ": " + p.Service, XLabel: "BO step", YLabel: "minimum predicted response time found (ms)",
				Caption: "Mean over moments of the online test settings; bands: 95% intervals."}
			figs[p.Scenario] = f
			order = append(order, p.Scenario)
		}
		i := slices.IndexFunc(f.Series, func(x report.Series) bool { return x.Name == p.Model })
		if i < 0 {
			f.Series = append(f.Series, report.Series{Name: p.Model})
			i = len(f.Series) - 1
		}
		sr := &f.Series[i]
		m, c := float64(p.Min.Mean), float64(p.Min.CI95)
		sr.X, sr.Y, sr.Lo, sr.Hi = append(sr.X, float64(p.Step)), append(sr.Y, m), append(sr.Lo, m-c), append(sr.Hi, m+c)
	}
	for _, name := range order {
		rep.Figures = append(rep.Figures, *figs[name])
	}
	return s.write("convergence", head, recs, pts, rep)
}

// OverallRow is one route's outcome on one benchmark.
type OverallRow struct {
	Scenario string `json:"scenario"`
	Policy   string `json:"policy"`
	Mean     Stat   `json:"mean_s"`
	P99      Stat   `json:"p99_s"`
	EgressGB Stat   `json:"egress_gb"`
	Cost     Stat   `json:"cost"`
	Success  Stat   `json:"success"`
	// Rebalance is the mean wall time of one rebalance (all services' BO
	// on the models; for bo-system its controller's own compute), seconds,
	// and Span the simulated time from its start to the last layer's
	// update (the paper's execution time, Fig. 9).
	Rebalance Stat   `json:"rebalance_s"`
	Span      Stat   `json:"span_s"`
	Rebal     Stat   `json:"rebalances"`
	FirstSeed uint64 `json:"first_seed"` // run i used FirstSeed + i
}

// Overall runs every route on each benchmark for Seeds seeds (Fig. 8) and
// times the rebalances (Fig. 9): overall.csv, .json, .html, and the
// comparisons' own files in Dir/overall-SCENARIO.
func (s MultiCloudStudy) Overall(ctx context.Context) ([]OverallRow, error) {
	var rows []OverallRow
	err := s.each(ctx, func(sc *scenario.Scenario, p *multicloud.Policy) error {
		learned := map[string]Learned{}
		for name, kind := range multicloud.LearnedRoutes {
			l, err := MultiCloudPolicy(p, kind, s.options())
			if err != nil {
				return err
			}
			learned[name] = l
		}
		policies := append(multicloud.Baselines(), "multicloud-nn", "multicloud-svr", "multicloud")
		var mu sync.Mutex
		timing := map[string][][3]float64{} // policy -> per run: compute s, span s, rebalances
		cmp := &Comparison{Scenario: sc, Policies: policies, Seeds: s.Seeds, Learned: learned, Workers: s.Workers,
			OnRun: func(policy string, _ uint64, _ *cluster.Results, ctls []control.Controller) {
				for _, c := range ctls {
					if st, ok := rebalanceStats(c); ok {
						mu.Lock()
						timing[policy] = append(timing[policy], st)
						mu.Unlock()
					}
				}
			}}
		s.say("%s: %d routes x %d seeds", sc.Name, len(policies), s.Seeds)
		res, err := cmp.Run(ctx)
		if err != nil {
			return err
		}
		if err := res.WriteFiles(filepath.Join(s.Dir, "overall-"+sc.Name), s.meta()); err != nil {
			return err
		}
		for i, ps := range res.Policies {
			r := OverallRow{Scenario: sc.Name, Policy: policies[i], Mean: ps.Summary.Mean, P99: ps.Summary.P99, EgressGB: ps.Summary.EgressGB,
				Cost: ps.Summary.Cost, Success: ps.Summary.Success, FirstSeed: sc.Seed}
			if t := timing[policies[i]]; len(t) > 0 {
				r.Rebalance = meanCI(t, func(x *[3]float64) float64 { return x[0] })
				r.Span = meanCI(t, func(x *[3]float64) float64 { return x[1] })
				r.Rebal = meanCI(t, func(x *[3]float64) float64 { return x[2] })
			}
			rows = append(rows, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, s.writeOverall(rows)
}

// rebalanceStats returns a routing controller's mean compute time per
// rebalance (s), the simulated span of a rebalance (s) and the number of
// rebalances.
func rebalanceStats(c control.Controller) ([3]float64, bool) {
	var st multicloud.Stats
	switch c := c.(type) {
	case *multicloud.Controller:
		st = c.Stats()
	case *multicloud.SystemBO:
		st = c.Stats()
	default:
		return [3]float64{}, false
	}
	if st.Rebalances == 0 {
		return [3]float64{}, false
	}
	return [3]float64{st.Compute.Seconds() / float64(st.Rebalances), st.MeanSpan().Seconds(), float64(st.Rebalances)}, true
}

func (s MultiCloudStudy) writeOverall(rows []OverallRow) error {
	head := []string{"scenario", "policy", "mean_s", "mean_ci95", "p99_s", "p99_ci95", "egress_gb", "cost", "success", "rebalance_compute_s", "rebalance_span_s", "rebalances", "seeds", "first_seed"}
	var recs [][]string
	rep := &report.Report{Title: "Multi-cloud routing: response time of every route (Fig. 8) and rebalance time (Fig. 9)", Meta: s.meta()}
	for i := 0; i < len(rows); {
		sc := rows[i].Scenario
		t := report.Table{Caption: sc + ": end-to-end response time, egress and rebalances (mean ± 95% interval over seeds)",
			Columns: []string{"route", "mean (ms)", "p99 (ms)", "egress (GB)", "cost ($)", "success %", "compute per rebalance (ms)", "rebalance span (s)", "rebalances"}}
		fig := report.Figure{Title: sc, Kind: report.KindBar, XLabel: "route", YLabel: "mean response time (ms)"}
		var bars report.Series
		bars.Name = "mean"
		for ; i < len(rows) && rows[i].Scenario == sc; i++ {
			r := rows[i]
			recs = append(recs, []string{sc, r.Policy, g(float64(r.Mean.Mean)), g(float64(r.Mean.CI95)), g(float64(r.P99.Mean)), g(float64(r.P99.CI95)),
				g(float64(r.EgressGB.Mean)), g(float64(r.Cost.Mean)), g(float64(r.Success.Mean)), g(float64(r.Rebalance.Mean)), g(float64(r.Span.Mean)), g(float64(r.Rebal.Mean)),
				strconv.Itoa(s.Seeds), strconv.FormatUint(r.FirstSeed, 10)})
			t.Rows = append(t.Rows, []string{r.Policy, report.MeanCI(1000*float64(r.Mean.Mean), 1000*float64(r.Mean.CI95)),
				report.MeanCI(1000*float64(r.P99.Mean), 1000*float64(r.P99.CI95)), report.MeanCI(float64(r.EgressGB.Mean), float64(r.EgressGB.CI95)),
				report.MeanCI(float64(r.Cost.Mean), float64(r.Cost.CI95)), report.MeanCI(100*float64(r.Success.Mean), 100*float64(r.Success.CI95)),
				orDash(1000*float64(r.Rebalance.Mean), r.Rebal.Mean > 0), orDash(float64(r.Span.Mean), r.Rebal.Mean > 0), orDash(float64(r.Rebal.Mean), r.Rebal.Mean > 0)})
			fig.Categories = append(fig.Categories, r.Policy)
			x := float64(len(fig.Categories) - 1)
			m, c := 1000*float64(r.Mean.Mean), 1000*float64(r.Mean.CI95)
			bars.X, bars.Y, bars.Lo, bars.Hi = append(bars.X, x), append(bars.Y, m), append(bars.Lo, m-c), append(bars.Hi, m+c)
		}
		fig.Series = []report.Series{bars}
		rep.Tables = append(rep.Tables, t)
		rep.Figures = append(rep.Figures, fig)
	}
	for _, g := range Gains(rows) {
		rep.Notes = append(rep.Notes, g.String())
	}
	return s.write("overall", head, recs, rows, rep)
}

// Gain compares a learned route with the best of Local, Even and Istio
// locality on one benchmark.
type Gain struct {
	Scenario, Policy, Best string
	Mean, BestMean         float64 // s
	P99, BestP99           float64 // s: the learned route's, and the lowest of the three
}

func (g Gain) String() string {
	return fmt.Sprintf("%s: %s mean %.1f ms, %+.1f%% against the best of local, even and locality (%s, %.1f ms); p99 %.0f ms against their best %.0f ms",
		g.Scenario, g.Policy, 1000*g.Mean, 100*(g.Mean/g.BestMean-1), g.Best, 1000*g.BestMean, 1000*g.P99, 1000*g.BestP99)
}

// Gains compares each learned route with the best of local, even and
// locality, per benchmark.
func Gains(rows []OverallRow) []Gain {
	var out []Gain
	for _, r := range rows {
		if _, ok := multicloud.LearnedRoutes[r.Policy]; !ok {
			continue
		}
		g := Gain{Scenario: r.Scenario, Policy: r.Policy, Mean: float64(r.Mean.Mean), P99: float64(r.P99.Mean), BestMean: math.Inf(1), BestP99: math.Inf(1)}
		for _, b := range rows {
			if b.Scenario != r.Scenario || (b.Policy != "local" && b.Policy != "even" && b.Policy != "locality") {
				continue
			}
			if m := float64(b.Mean.Mean); m < g.BestMean {
				g.BestMean, g.Best = m, b.Policy
			}
			g.BestP99 = math.Min(g.BestP99, float64(b.P99.Mean))
		}
		out = append(out, g)
	}
	return out
}

func (s MultiCloudStudy) meta() []report.KV {
	return []report.KV{{Key: "study", Value: "multicloud"}, {Key: "training seed", Value: fmt.Sprint(s.TrainSeed)},
		{Key: "seeds", Value: fmt.Sprint(s.Seeds)}, {Key: "model inputs", Value: s.Train.Inputs}, {Key: "shifts", Value: s.Train.Collection.Shift},
		{Key: "offline data", Value: fmt.Sprintf("%d periods", s.Train.Collection.Periods)}}
}

// write writes Dir/name.csv, .json and .html.
func (s MultiCloudStudy) write(name string, head []string, recs [][]string, v any, rep *report.Report) error {
	return writeStudy(s.Dir, name, head, recs, v, rep)
}

// writeStudy writes dir/name.csv (head, then recs), name.json (v) and
// name.html (rep).
func writeStudy(dir, name string, head []string, recs [][]string, v any, rep *report.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	err := writeFile(filepath.Join(dir, name+".csv"), func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write(head); err != nil {
			return err
		}
		if err := cw.WriteAll(recs); err != nil {
			return err
		}
		return cw.Error()
	})
	if err != nil {
		return err
	}
	err = writeFile(filepath.Join(dir, name+".json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
	if err != nil {
		return err
	}
	return report.WriteFile(filepath.Join(dir, name+".html"), rep)
}

func g(x float64) string  { return strconv.FormatFloat(x, 'g', 6, 64) }
func f2(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
func f3(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

func orDash(x float64, ok bool) string {
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}
