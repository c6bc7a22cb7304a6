package experiment

import (
	"context"
	"encoding/json"
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
	"github.com/shoal-project/shoal/store"
)

// EdgeStudy is the edge scheduling paper's evaluation (section 4.2): the
// virtual agents' distributions (Table 1), the offloading ratio of the
// virtual environments (Fig. 4) and the policies' generalisation (Table
// 2).
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
	return EdgeStudy{Dir: dir, Logging: edgeenv.DefaultLogging(), Agents: 100000, Steps: 6000, Seeds: 3,
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
	log, err := s.logDay(filepath.Join(logs, "day.jsonl"), s.Logging.Seed, s.OffloadDay, s.DayWindow)
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

// Generalisation settings: the policies' training, and where they are
// evaluated.
type Generalisation struct {
	TrainDay  float64       // the logged day the environment and policies learn from
	LogWindow time.Duration // how much of it is logged, from midnight (default a day)
	Later     []float64     // days after it that the policies are evaluated on (Table 2: 0, 1, 7, 30)
	// Hours are the times of day the evaluation windows start, each
	// Window long.
	Hours  []float64
	Window time.Duration
	// MAPPO is MA-PPO's training in the virtual environment (its seed is
	// the study's); RealSteps are environment steps per agent of PPO in
	// the real world, in episodes of MAPPO.Horizon steps.
	MAPPO     edgeenv.MAPPOConfig
	RealSteps int
}

// DefaultGeneralisation learns from day 0 and evaluates 0, 1, 7 and 30
// days later in four one-hour windows (midnight, 6:00, noon, 18:00).
func DefaultGeneralisation() Generalisation {
	return Generalisation{LogWindow: 24 * time.Hour, Later: []float64{0, 1, 7, 30}, Hours: []float64{0, 6, 12, 18}, Window: time.Hour,
		MAPPO: edgeenv.DefaultMAPPO(), RealSteps: 200000}
}

// GeneralisationRow is one policy on one day, over the seeds.
type GeneralisationRow struct {
	Policy string  `json:"policy"`
	Later  float64 `json:"days_later"`
	// OnTimeOffloaded is the successful offloading ratio, Improvement its
	// relative gain over the random engine's in the same windows (Table
	// 2), MeanTime the mean task completion time (s), Missed the deadline
	// miss ratio, Offloaded the offloading ratio counting late results.
	OnTimeOffloaded Stat `json:"on_time_offloaded"`
	Improvement     Stat `json:"improvement"`
	MeanTime        Stat `json:"mean_time_s"`
	Missed          Stat `json:"missed"`
	Offloaded       Stat `json:"offloaded"`
}

// EdgePolicies are the policies of the generalisation study, in its
// tables' order: the logging policy, today's heuristics, behaviour
// cloning, MA-PPO in the virtual environment, PPO in the real world.
var EdgePolicies = []string{"random", "greedy", "threshold", "bc", "mappo", "ppo-real"}

// GeneralisationStudy is Table 2 and beyond: per seed, the real world
// under the random engine is logged for day TrainDay (Dir/logs/train-SEED.jsonl),
// a virtual environment is learned from the log alone, MA-PPO is trained
// in it and behaviour cloning on the log; with PPO trained in the real
// world on the same day (the upper bound), the heuristics and the random
// engine, every policy runs in the real world 0, 1, 7 and 30 days later.
// progress, when set, hears each seed's stages. generalisation.csv,
// .json, .html.
func (s EdgeStudy) GeneralisationStudy(ctx context.Context, gen Generalisation, progress func(frac float64, stage string)) ([]GeneralisationRow, error) {
	if progress == nil {
		progress = func(float64, string) {}
	}
	logs := filepath.Join(s.Dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, err
	}
	cfg := edge.Default()
	type key struct {
		policy string
		later  float64
	}
	runs := map[key][]edgeenv.Evaluation{}
	for i := range s.Seeds {
		seed := s.Logging.Seed + uint64(i)
		stage := func(k int, what string) {
			progress((float64(i)+float64(k)/5)/float64(s.Seeds), fmt.Sprintf("seed %d: %s", seed, what))
		}
		stage(0, "logging")
		log, err := s.logDay(filepath.Join(logs, fmt.Sprintf("train-%d.jsonl", seed)), seed, gen.TrainDay, gen.LogWindow)
		if err != nil {
			return nil, err
		}
		stage(1, "learning the virtual environment")
		vc := s.Venv
		vc.Seed = seed
		v, err := edgeenv.Learn(log, vc)
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		stage(2, "MA-PPO in the virtual environment, BC on the log")
		policies := map[string]edge.Policy{}
		mc := gen.MAPPO
		mc.Seed = seed
		if policies["mappo"], err = edgeenv.TrainMAPPO(v, mc); err != nil {
			return nil, err
		}
		if policies["bc"], err = edgeenv.TrainBC(v.Steps, seed); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		stage(3, "PPO in the real world")
		if policies["ppo-real"], err = edgeenv.TrainRealPPO(cfg, gen.TrainDay, gen.RealSteps, gen.MAPPO.Horizon, seed); err != nil {
			return nil, err
		}
		stage(4, "evaluating")
		for _, later := range gen.Later {
			for _, name := range EdgePolicies {
				e, err := s.evaluate(cfg, name, policies[name], gen, gen.TrainDay+later, seed)
				if err != nil {
					return nil, err
				}
				runs[key{name, later}] = append(runs[key{name, later}], e)
			}
		}
	}
	progress(1, "writing")
	var out []GeneralisationRow
	head := []string{"policy", "days_later", "on_time_offloaded", "on_time_offloaded_ci95", "improvement", "improvement_ci95",
		"mean_time_s", "mean_time_s_ci95", "missed", "missed_ci95", "offloaded", "offloaded_ci95", "seeds", "train_day"}
	var recs [][]string
	table2 := report.Table{Caption: fmt.Sprintf("Successful offloading ratio improved over the random engine (Table 2), mean ± 95%% interval over %d seeds", s.Seeds),
		Columns: []string{"policy"}}
	times := report.Table{Caption: "Mean task completion time (s)", Columns: []string{"policy"}}
	for _, later := range gen.Later {
		table2.Columns = append(table2.Columns, fmt.Sprintf("%g days later", later))
		times.Columns = append(times.Columns, fmt.Sprintf("%g days later", later))
	}
	for _, name := range EdgePolicies {
		imp, tm := []string{name}, []string{name}
		for _, later := range gen.Later {
			es := runs[key{name, later}]
			gain := make([]float64, len(es))
			for i, e := range es {
				r := runs[key{"random", later}][i].All.OnTimeOffloaded()
				gain[i] = (e.All.OnTimeOffloaded() - r) / r
			}
			row := GeneralisationRow{Policy: name, Later: later,
				OnTimeOffloaded: meanCI(es, func(e *edgeenv.Evaluation) float64 { return e.All.OnTimeOffloaded() }),
				Improvement:     meanCI(gain, func(x *float64) float64 { return *x }),
				MeanTime:        meanCI(es, func(e *edgeenv.Evaluation) float64 { return e.All.MeanTime() }),
				Missed:          meanCI(es, func(e *edgeenv.Evaluation) float64 { return e.All.MissRatio() }),
				Offloaded:       meanCI(es, func(e *edgeenv.Evaluation) float64 { return e.All.Offloaded() }),
			}
			out = append(out, row)
			line := []string{name, g(later)}
			for _, st := range []Stat{row.OnTimeOffloaded, row.Improvement, row.MeanTime, row.Missed, row.Offloaded} {
				line = append(line, g(float64(st.Mean)), g(float64(st.CI95)))
			}
			recs = append(recs, append(line, strconv.Itoa(s.Seeds), g(gen.TrainDay)))
			imp = append(imp, report.MeanCI(100*float64(row.Improvement.Mean), 100*float64(row.Improvement.CI95))+"%")
			tm = append(tm, report.MeanCI(float64(row.MeanTime.Mean), float64(row.MeanTime.CI95)))
		}
		table2.Rows, times.Rows = append(table2.Rows, imp), append(times.Rows, tm)
	}
	rep := &report.Report{Title: "Edge scheduling: generalisation (Table 2)", Tables: []report.Table{table2, times},
		Meta: []report.KV{{Key: "study", Value: "edge generalisation"}, {Key: "seeds", Value: fmt.Sprintf("%d from %d", s.Seeds, s.Logging.Seed)},
			{Key: "train day", Value: g(gen.TrainDay)}, {Key: "MA-PPO steps per agent", Value: strconv.Itoa(gen.MAPPO.Steps)},
			{Key: "real PPO steps per agent", Value: strconv.Itoa(gen.RealSteps)}, {Key: "evaluation", Value: fmt.Sprintf("%v long from hours %v", gen.Window, gen.Hours)}}}
	return out, writeStudy(s.Dir, "generalisation", head, recs, out, rep)
}

// logDay logs window of a day of the real world from midnight under the
// random engine to path and reads it back, as the learners see it.
func (s EdgeStudy) logDay(path string, seed uint64, day float64, window time.Duration) ([]edge.Transition, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	l := edgeenv.Logging{Seed: seed, Days: []float64{day}, Window: window}
	if err := edgeenv.Log(edge.Default(), l, f, io.Discard); err != nil {
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
	return edge.ReadLog(f)
}

// evaluate runs a policy (a heuristic or the random engine by name when
// p is nil) in the real world's windows of the given day, seeded apart
// from the logs.
func (s EdgeStudy) evaluate(cfg edge.Config, name string, p edge.Policy, gen Generalisation, day float64, seed uint64) (edgeenv.Evaluation, error) {
	c := edgeenv.Contender{Name: name, Policy: p}
	if name == "greedy" || name == "threshold" {
		c.Heuristic = edge.Heuristic(name)
	}
	return edgeenv.EvaluateWindows(c, cfg, day, gen.Hours, gen.Window, 1000*seed)
}

// Hash identifies the world the study logs and evaluates in (the run
// store's scenario hash): the edge world's configuration and the logging.
func (s EdgeStudy) Hash() (string, error) {
	b, err := json.Marshal(struct {
		World   edge.Config
		Logging edgeenv.Logging
	}{edge.Default(), s.Logging})
	if err != nil {
		return "", fmt.Errorf("edge study: %w", err)
	}
	return store.Hash(b), nil
}
