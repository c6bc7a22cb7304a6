package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	if err := edgeenv.Log(edge.Default(), s.Logging, tr, dev, nil); err != nil {
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
	kl := map[string][][]float64{}   // method -> measure -> per seed
	rich := map[string][][]float64{} // the same for the richer features, the pairs' KL last
	for seed := 1; seed <= s.Seeds; seed++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rows, err := edgeenv.Agents(recs, s.Agents, s.Steps, uint64(seed))
		if err != nil {
			return nil, err
		}
		richRows, err := edgeenv.RichAgents(recs, s.Agents, s.Steps, uint64(seed))
		if err != nil {
			return nil, err
		}
		for _, r := range richRows {
			bySeed(rich, r.Method, append(slices.Clone(r.KL), r.Pairs))
		}
		for _, r := range rows {
			bySeed(kl, r.Method, r.KL)
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
	if err := writeStudy(s.Dir, "distributions", head, recsCSV, out, rep); err != nil {
		return nil, err
	}
	return out, s.writeRich(rich, len(recs))
}

// bySeed appends one seed's figures of method to m (method -> figure ->
// per seed).
func bySeed(m map[string][][]float64, method string, figures []float64) {
	if m[method] == nil {
		m[method] = make([][]float64, len(figures))
	}
	for i, v := range figures {
		m[method][i] = append(m[method][i], v)
	}
}

// RichRow is one method's KL per richer feature and for their pairs.
type RichRow struct {
	Method string `json:"method"`
	KL     []Stat `json:"kl"` // by edgeenv.RichMeasures, then the agent
	Pairs  Stat   `json:"pairs"`
}

// writeRich writes the richer features' table: distributions-rich.csv,
// .json, .html.
func (s EdgeStudy) writeRich(rich map[string][][]float64, devices int) error {
	cols := append(slices.Clone(edgeenv.RichMeasures), "agent", "pairs")
	head := []string{"method"}
	for _, c := range cols {
		head = append(head, "kl_"+c, "kl_"+c+"_ci95")
	}
	head = append(head, "seeds", "agents", "real_devices")
	t := report.Table{Caption: fmt.Sprintf("KL between virtual and real agents on richer features: per feature, then the mean over every pair's joint histogram; %d virtual agents per method from %d real devices, mean ± 95%% interval over %d training seeds",
		s.Agents, devices, s.Seeds), Columns: append([]string{"method"}, cols...)}
	var recs [][]string
	var out []RichRow
	for _, m := range []string{"gmm", "gan-smmsg"} {
		line, cells := []string{m}, []string{m}
		r := RichRow{Method: m}
		for i, v := range rich[m] {
			st := meanCI(v, func(x *float64) float64 { return *x })
			if i == len(rich[m])-1 {
				r.Pairs = st
			} else {
				r.KL = append(r.KL, st)
			}
			line = append(line, g(float64(st.Mean)), g(float64(st.CI95)))
			cells = append(cells, report.MeanCI(float64(st.Mean), float64(st.CI95)))
		}
		recs = append(recs, append(line, strconv.Itoa(s.Seeds), strconv.Itoa(s.Agents), strconv.Itoa(devices)))
		t.Rows = append(t.Rows, cells)
		out = append(out, r)
	}
	rep := &report.Report{Title: "Edge scheduling: virtual agents on richer features", Tables: []report.Table{t},
		Meta: []report.KV{{Key: "study", Value: "edge distributions"}, {Key: "logging seed", Value: fmt.Sprint(s.Logging.Seed)}}}
	return writeStudy(s.Dir, "distributions-rich", head, recs, out, rep)
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
	log, err := s.logDay(filepath.Join(logs, "day.jsonl"), s.Logging.Seed, s.OffloadDay, s.DayWindow, LogSource{})
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
	// Logs are the histories learned from, one pipeline each: the day
	// logged under the source's engines, a virtual environment, MA-PPO
	// and BC learned from that log alone.
	Logs  []LogSource
	Later []float64 // days after it that the policies are evaluated on (Table 2: 0, 1, 7, 30)
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

// LogSource is a history and how it is learned from: the engines that
// ran while it was logged (nil: the paper's random engine), the rule
// their weights acted through (and every policy learned from it runs
// under), the virtual environment's models, and MA-PPO's Eq. 8 weight and
// uncertainty penalty.
type LogSource struct {
	Name            string
	Engine          []edge.Stretch
	Rule            edge.Heuristic
	Models          int
	Anchor, Penalty float64
}

// DefaultGeneralisation learns from day 0 twice: the paper's pipeline
// (the random engine's log of the paper's world, one model, Eq. 8 at full
// weight) and an operator's (edge.DefaultMix under edge.DefaultRule, an
// ensemble of four models, Eq. 8 at 0.3 and the models' disagreement
// charged at 0.1, chosen on validation windows); it evaluates 0, 1, 7 and
// 30 days later in four one-hour windows (midnight, 6:00, noon, 18:00).
func DefaultGeneralisation() Generalisation {
	mix, err := edge.ParseMix(edge.DefaultMix)
	if err != nil {
		panic(err) // a constant
	}
	return Generalisation{LogWindow: 24 * time.Hour,
		Logs: []LogSource{{Name: "random", Models: 1, Anchor: 1},
			{Name: "mix", Engine: mix, Rule: edge.DefaultRule, Models: edgeenv.OperatorModels, Anchor: edgeenv.OperatorMAPPO().Anchor, Penalty: edgeenv.OperatorMAPPO().Penalty}},
		Later: []float64{0, 1, 7, 30}, Hours: []float64{0, 6, 12, 18}, Window: time.Hour,
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

// Policies are the generalisation study's policies, in its tables'
// order: the random engine, today's heuristics, each history's engines
// themselves (beside the random one), then per history behaviour cloning
// and MA-PPO learned from it, and PPO in the real world under its rule.
func (gen Generalisation) Policies() []string {
	out := []string{"random", "greedy", "threshold"}
	for _, l := range gen.Logs {
		if l.Engine != nil {
			out = append(out, "engines-"+l.Name)
		}
	}
	for _, l := range gen.Logs {
		out = append(out, "bc-"+l.Name, "mappo-"+l.Name, "ppo-real-"+l.Name)
	}
	return out
}

// GeneralisationStudy is Table 2 and beyond: per seed and history, the
// real world is logged for day TrainDay under the history's engines
// (Dir/logs/train-NAME-SEED.jsonl), a virtual environment is learned from
// the log alone, MA-PPO is trained in it and behaviour cloning on the
// log; with PPO trained in the real world on the same day (the upper
// bound), the heuristics, the random engine and the histories' engines,
// every policy runs in the real world 0, 1, 7 and 30 days later.
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
	stages := 4*len(gen.Logs) + 1
	for i := range s.Seeds {
		seed := s.Logging.Seed + uint64(i)
		k := 0
		stage := func(what string) {
			progress((float64(i)+float64(k)/float64(stages))/float64(s.Seeds), fmt.Sprintf("seed %d: %s", seed, what))
			k++
		}
		contenders := map[string]edgeenv.Contender{"random": {Name: "random"},
			"greedy": {Name: "greedy", Heuristic: edge.Greedy}, "threshold": {Name: "threshold", Heuristic: edge.Threshold}}
		for _, l := range gen.Logs {
			if l.Engine != nil {
				contenders["engines-"+l.Name] = edgeenv.Contender{Name: "engines-" + l.Name, Engine: l.Engine, Heuristic: l.Rule}
			}
			stage("logging under " + l.Name)
			log, err := s.logDay(filepath.Join(logs, fmt.Sprintf("train-%s-%d.jsonl", l.Name, seed)), seed, gen.TrainDay, gen.LogWindow, l)
			if err != nil {
				return nil, err
			}
			stage("learning the virtual environment of " + l.Name)
			vc := s.Venv
			vc.Seed, vc.Models = seed, l.Models
			v, err := edgeenv.Learn(log, vc)
			if err != nil {
				return nil, err
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			stage("MA-PPO in the virtual environment and BC on the log of " + l.Name)
			mc := gen.MAPPO
			mc.Seed, mc.Anchor, mc.Penalty = seed, l.Anchor, l.Penalty
			mappo, err := edgeenv.TrainMAPPO(v, mc)
			if err != nil {
				return nil, err
			}
			bc, err := edgeenv.TrainBC(v.Steps, seed)
			if err != nil {
				return nil, err
			}
			contenders["mappo-"+l.Name] = edgeenv.Contender{Name: "mappo-" + l.Name, Policy: mappo, Heuristic: l.Rule}
			contenders["bc-"+l.Name] = edgeenv.Contender{Name: "bc-" + l.Name, Policy: bc, Heuristic: l.Rule}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			stage("PPO in the real world under " + edge.RuleName(l.Rule))
			real, err := edgeenv.TrainRealPPO(cfg, l.Rule, gen.TrainDay, gen.RealSteps, gen.MAPPO.Horizon, seed)
			if err != nil {
				return nil, err
			}
			contenders["ppo-real-"+l.Name] = edgeenv.Contender{Name: "ppo-real-" + l.Name, Policy: real, Heuristic: l.Rule}
		}
		stage("evaluating")
		for _, later := range gen.Later {
			for _, name := range gen.Policies() {
				e, err := edgeenv.EvaluateWindows(contenders[name], cfg, gen.TrainDay+later, gen.Hours, gen.Window, 1000*seed)
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
	misses := report.Table{Caption: "Deadline misses (share of tasks)", Columns: []string{"policy"}}
	for _, later := range gen.Later {
		table2.Columns = append(table2.Columns, fmt.Sprintf("%g days later", later))
		times.Columns = append(times.Columns, fmt.Sprintf("%g days later", later))
		misses.Columns = append(misses.Columns, fmt.Sprintf("%g days later", later))
	}
	for _, name := range gen.Policies() {
		imp, tm, ms := []string{name}, []string{name}, []string{name}
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
			ms = append(ms, report.MeanCI(float64(row.Missed.Mean), float64(row.Missed.CI95)))
		}
		table2.Rows, times.Rows, misses.Rows = append(table2.Rows, imp), append(times.Rows, tm), append(misses.Rows, ms)
	}
	var sources []string
	for _, l := range gen.Logs {
		engine := "random"
		if l.Engine != nil {
			var parts []string
			for _, st := range l.Engine {
				parts = append(parts, fmt.Sprintf("%s:%g", st.Name, st.Weight))
			}
			engine = strings.Join(parts, ",")
		}
		sources = append(sources, fmt.Sprintf("%s: %s under %s, %d models, Eq. 8 at %g, penalty %g", l.Name, engine, edge.RuleName(l.Rule), l.Models, l.Anchor, l.Penalty))
	}
	rep := &report.Report{Title: "Edge scheduling: generalisation (Table 2)", Tables: []report.Table{table2, times, misses},
		Meta: []report.KV{{Key: "study", Value: "edge generalisation"}, {Key: "seeds", Value: fmt.Sprintf("%d from %d", s.Seeds, s.Logging.Seed)},
			{Key: "train day", Value: g(gen.TrainDay)}, {Key: "logs", Value: strings.Join(sources, "; ")}, {Key: "MA-PPO steps per agent", Value: strconv.Itoa(gen.MAPPO.Steps)},
			{Key: "real PPO steps per agent", Value: strconv.Itoa(gen.RealSteps)}, {Key: "evaluation", Value: fmt.Sprintf("%v long from hours %v", gen.Window, gen.Hours)}}}
	return out, writeStudy(s.Dir, "generalisation", head, recs, out, rep)
}

// logDay logs window of a day of the real world from midnight under the
// source's engines and rule to path and reads it back, as the learners
// see it.
func (s EdgeStudy) logDay(path string, seed uint64, day float64, window time.Duration, src LogSource) ([]edge.Transition, error) {
	l := edgeenv.Logging{Seed: seed, Days: []float64{day}, Window: window, Engine: src.Engine, Rule: src.Rule}
	log, _, err := logTo(edge.Default(), l, path, "")
	return log, err
}

// logWorld logs world cfg as logDay does, and the records of one task in
// edgeenv.TaskEvery to tasksPath (unless "").
func (s EdgeStudy) logWorld(cfg edge.Config, path, tasksPath string, seed uint64, day float64, window time.Duration, src LogSource) ([]edge.Transition, []edge.TaskRecord, error) {
	l := edgeenv.Logging{Seed: seed, Days: []float64{day}, Window: window, Engine: src.Engine, Rule: src.Rule}
	return logTo(cfg, l, path, tasksPath)
}

// logTo logs l in world cfg to path (and the task records to tasksPath,
// unless "") and reads them back, as the learners see them.
func logTo(cfg edge.Config, l edgeenv.Logging, path, tasksPath string) ([]edge.Transition, []edge.TaskRecord, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	var tasks io.Writer
	var tf *os.File
	if tasksPath != "" {
		if tf, err = os.Create(tasksPath); err != nil {
			f.Close()
			return nil, nil, err
		}
		tasks = tf
	}
	err = edgeenv.Log(cfg, l, f, io.Discard, tasks)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if tf != nil {
		if cerr := tf.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return nil, nil, err
	}
	log, err := readFile(path, edge.ReadLog)
	if err != nil || tasksPath == "" {
		return log, nil, err
	}
	recs, err := readFile(tasksPath, edge.ReadTasks)
	return log, recs, err
}

// readFile reads the file at path with read.
func readFile[T any](path string, read func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	return read(f)
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
