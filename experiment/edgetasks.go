package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/edge"
	"github.com/shoal-project/shoal/envs/edgeenv"
	"github.com/shoal-project/shoal/experiment/report"
)

// PerTaskStudy is a per-task rule learned from logs alone (issue 51),
// measured per scenario (how stale the platform's view of the queues
// is): per training seed, day TrainDay of the real world is logged under
// the operator's engines, with one task in edgeenv.TaskEvery recorded;
// from the task records alone a grey-box environment is learned, a
// per-task rule is cloned from the logged choices (BC), and one is trained
// by PPO in the grey box. Beside them: the same rule trained by PPO in the
// real world on the same day (the ceiling), greedy, greedy-tracked, and
// the paper's pipeline: MA-PPO's weights (biasing weighted-greedy) trained
// in a black-box environment learned from the same day's transitions.
// Every policy runs in the real world Later days after, in windows from
// Hours, world seeds 1000·seed + k (seeds no setting was chosen on). Both
// environments' fidelity is measured on a held-out log (the next day,
// another seed).
type PerTaskStudy struct {
	TrainDay float64
	// LogWindow is how much of the day is logged, from midnight (and of
	// the next day, held out).
	LogWindow time.Duration
	Staleness []time.Duration // the scenarios
	Later     []float64
	Hours     []float64
	Window    time.Duration
	// Training is the PPO of both per-task rules (its days are TrainDay,
	// its seed the study's).
	Training    edgeenv.PerTaskTraining
	GreyBox     edgeenv.GreyBoxConfig
	CloneEpochs int
	// Models is the black-box environment's ensemble and MAPPO the
	// paper's pipeline trained in it (the operator's settings).
	Models int
	MAPPO  edgeenv.MAPPOConfig
}

// DefaultPerTaskStudy studies a fresh view and a 1-second stale one, 0, 7
// and 30 days after the logged day 0, in the generalisation study's
// windows.
func DefaultPerTaskStudy() PerTaskStudy {
	return PerTaskStudy{LogWindow: 24 * time.Hour, Staleness: []time.Duration{0, time.Second}, Later: []float64{0, 7, 30}, Hours: []float64{0, 6, 12, 18},
		Window: time.Hour, Training: edgeenv.DefaultPerTaskTraining(), GreyBox: edgeenv.DefaultGreyBox(), CloneEpochs: 5,
		Models: edgeenv.OperatorModels, MAPPO: edgeenv.OperatorMAPPO()}
}

// PerTaskPolicies are the study's policies, in its tables' order.
var PerTaskPolicies = []string{"greedy", "greedy-tracked", "mappo-blackbox", "bc-task", "task-greybox", "task-real"}

// PerTaskRow is one policy on one day of one scenario, over the seeds.
type PerTaskRow struct {
	Staleness       string  `json:"staleness"`
	Policy          string  `json:"policy"`
	Later           float64 `json:"days_later"`
	MeanTime        Stat    `json:"mean_time_s"`
	Missed          Stat    `json:"missed"`
	OnTimeOffloaded Stat    `json:"on_time_offloaded"`
}

// FidelityRow is one environment's fidelity to the held-out logs of one
// scenario, over the seeds: the KL per edgeenv.StepMeasures, then the
// scene's, and the pair KL.
type FidelityRow struct {
	Staleness string `json:"staleness"`
	Env       string `json:"env"`
	KL        []Stat `json:"kl"`
	Pairs     Stat   `json:"pairs"`
}

// PerTaskResult is the study's output.
type PerTaskResult struct {
	Rows     []PerTaskRow  `json:"rows"`
	Fidelity []FidelityRow `json:"fidelity"`
	// Pipeline is the wall time from the task records to the trained rule
	// (the grey box, BC and PPO in it), per scenario, over the seeds.
	Pipeline map[string]Stat `json:"pipeline_s"`
	Seeds    int             `json:"seeds"`
	Seed     uint64          `json:"first_seed"`
}

// PerTaskStudy runs the study for s.Seeds seeds from s.Logging.Seed
// (logs in Dir/logs) and writes Dir/pertask.csv, .json, .html.
func (s EdgeStudy) PerTaskStudy(ctx context.Context, p PerTaskStudy, progress func(frac float64, stage string)) (PerTaskResult, error) {
	if progress == nil {
		progress = func(float64, string) {}
	}
	logs := filepath.Join(s.Dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return PerTaskResult{}, err
	}
	type key struct {
		staleness time.Duration
		policy    string
		later     float64
	}
	runs := map[key][]edgeenv.Evaluation{}
	fid := map[string][]edgeenv.Fidelity{}
	pipeline := map[time.Duration][]float64{}
	total := float64(s.Seeds * len(p.Staleness))
	done := 0.0
	for _, st := range p.Staleness {
		for i := range s.Seeds {
			seed := s.Logging.Seed + uint64(i)
			stage := func(frac float64, what string) {
				progress((done+frac)/total, fmt.Sprintf("staleness %v, seed %d: %s", st, seed, what))
			}
			res, err := s.perTaskSeed(ctx, p, st, seed, logs, stage)
			if err != nil {
				return PerTaskResult{}, err
			}
			for k, e := range res.evals {
				runs[key{st, k.policy, k.later}] = append(runs[key{st, k.policy, k.later}], e)
			}
			for _, f := range res.fidelity {
				fid[st.String()+"/"+f.Env] = append(fid[st.String()+"/"+f.Env], f)
			}
			pipeline[st] = append(pipeline[st], res.pipeline)
			done++
		}
	}
	progress(1, "writing")
	out := PerTaskResult{Pipeline: map[string]Stat{}, Seeds: s.Seeds, Seed: s.Logging.Seed}
	for _, st := range p.Staleness {
		for _, name := range PerTaskPolicies {
			for _, later := range p.Later {
				es := runs[key{st, name, later}]
				out.Rows = append(out.Rows, PerTaskRow{Staleness: st.String(), Policy: name, Later: later,
					MeanTime:        meanCI(es, func(e *edgeenv.Evaluation) float64 { return e.All.MeanTime() }),
					Missed:          meanCI(es, func(e *edgeenv.Evaluation) float64 { return e.All.MissRatio() }),
					OnTimeOffloaded: meanCI(es, func(e *edgeenv.Evaluation) float64 { return e.All.OnTimeOffloaded() })})
			}
		}
		for _, env := range []string{"grey-box", "black-box"} {
			fs := fid[st.String()+"/"+env]
			row := FidelityRow{Staleness: st.String(), Env: env, Pairs: meanCI(fs, func(f *edgeenv.Fidelity) float64 { return f.Pairs })}
			for j := range len(edgeenv.StepMeasures) + 1 {
				row.KL = append(row.KL, meanCI(fs, func(f *edgeenv.Fidelity) float64 { return f.KL[j] }))
			}
			out.Fidelity = append(out.Fidelity, row)
		}
		out.Pipeline[st.String()] = meanCI(pipeline[st], func(x *float64) float64 { return *x })
	}
	return out, s.writePerTask(p, out)
}

// policyDay names one policy's evaluation on one day.
type policyDay struct {
	policy string
	later  float64
}

// perTaskOutcome is one seed's evaluations, fidelity and pipeline time.
type perTaskOutcome struct {
	evals    map[policyDay]edgeenv.Evaluation
	fidelity []edgeenv.Fidelity
	pipeline float64
}

// perTaskSeed runs the study for one scenario and seed.
func (s EdgeStudy) perTaskSeed(ctx context.Context, p PerTaskStudy, staleness time.Duration, seed uint64, logs string, stage func(float64, string)) (perTaskOutcome, error) {
	var out perTaskOutcome
	cfg := edge.Default()
	cfg.Staleness = staleness
	mix, err := edge.ParseMix(edge.DefaultMix)
	if err != nil {
		return out, err
	}
	src := LogSource{Name: "mix", Engine: mix, Rule: edge.DefaultRule}
	name := fmt.Sprintf("pertask-%v-%d", staleness, seed)
	stage(0, "logging day "+g(p.TrainDay))
	log, recs, err := s.logWorld(cfg, filepath.Join(logs, name+".jsonl"), filepath.Join(logs, name+"-tasks.jsonl"), seed, p.TrainDay, p.LogWindow, src)
	if err != nil {
		return out, err
	}
	stage(0.1, "the grey box, BC and PPO in the grey box")
	began := time.Now()
	gc := p.GreyBox
	gc.Seed = seed
	grey, err := edgeenv.LearnGreyBox(cfg, recs, gc)
	if err != nil {
		return out, err
	}
	bc, err := edgeenv.CloneTasks(recs, p.CloneEpochs, seed)
	if err != nil {
		return out, err
	}
	tr := p.Training
	tr.FirstDay, tr.LastDay, tr.Seed = p.TrainDay, p.TrainDay, seed
	learned, err := edgeenv.TrainPerTaskGreyBox(grey, tr, nil)
	if err != nil {
		return out, err
	}
	out.pipeline = time.Since(began).Seconds()
	if err := ctx.Err(); err != nil {
		return out, err
	}
	stage(0.4, "PPO in the real world")
	real, err := edgeenv.TrainPerTask(cfg, tr)
	if err != nil {
		return out, err
	}
	if err := ctx.Err(); err != nil {
		return out, err
	}
	stage(0.6, "the paper's pipeline: a black-box environment and MA-PPO in it")
	vc := s.Venv
	vc.Seed, vc.Models = seed, p.Models
	black, err := edgeenv.Learn(log, vc)
	if err != nil {
		return out, err
	}
	mc := p.MAPPO
	mc.Seed = seed
	mappo, err := edgeenv.TrainMAPPO(black, mc)
	if err != nil {
		return out, err
	}
	stage(0.7, "the environments' fidelity on a held-out day")
	if out.fidelity, err = s.fidelity(cfg, p, grey, black, seed, logs, name, src); err != nil {
		return out, err
	}
	stage(0.75, "evaluating")
	contenders := map[string]edgeenv.Contender{"greedy": {Name: "greedy", Heuristic: edge.Greedy},
		"greedy-tracked": {Name: "greedy-tracked", Heuristic: edge.Tracked},
		"mappo-blackbox": {Name: "mappo-blackbox", Policy: mappo, Heuristic: src.Rule},
		"bc-task":        {Name: "bc-task", Task: bc}, "task-greybox": {Name: "task-greybox", Task: learned}, "task-real": {Name: "task-real", Task: real}}
	out.evals = map[policyDay]edgeenv.Evaluation{}
	for _, later := range p.Later {
		for _, name := range PerTaskPolicies {
			e, err := edgeenv.EvaluateWindows(contenders[name], cfg, p.TrainDay+later, p.Hours, p.Window, 1000*seed)
			if err != nil {
				return out, err
			}
			out.evals[policyDay{name, later}] = e
		}
	}
	return out, nil
}

// fidelity measures both environments on a held-out log: the day after
// the training day, logged under the same engines with another seed.
func (s EdgeStudy) fidelity(cfg edge.Config, p PerTaskStudy, grey *edgeenv.GreyBox, black *edgeenv.Virtual, seed uint64, logs, name string, src LogSource) ([]edgeenv.Fidelity, error) {
	held, _, err := s.logWorld(cfg, filepath.Join(logs, name+"-heldout.jsonl"), "", seed+100, p.TrainDay+1, p.LogWindow, src)
	if err != nil {
		return nil, err
	}
	real, err := edgeenv.LoggedOutcomes(held)
	if err != nil {
		return nil, err
	}
	gr, err := grey.Replay(held, src.Rule, seed)
	if err != nil {
		return nil, err
	}
	bb, err := black.Replay(held, seed)
	if err != nil {
		return nil, err
	}
	return []edgeenv.Fidelity{edgeenv.FidelityOf("grey-box", real, gr), edgeenv.FidelityOf("black-box", real, bb)}, nil
}

// writePerTask writes pertask.csv, .json and .html.
func (s EdgeStudy) writePerTask(p PerTaskStudy, r PerTaskResult) error {
	head := []string{"staleness", "policy", "days_later", "mean_time_s", "mean_time_s_ci95", "missed", "missed_ci95",
		"on_time_offloaded", "on_time_offloaded_ci95", "seeds", "first_seed", "train_day"}
	var recs [][]string
	rep := &report.Report{Title: "Edge scheduling: a per-task rule learned from logs (issue 51)",
		Meta: []report.KV{{Key: "seeds", Value: fmt.Sprintf("%d from %d", r.Seeds, r.Seed)}, {Key: "train day", Value: g(p.TrainDay)},
			{Key: "evaluation", Value: fmt.Sprintf("%v long from hours %v, world seeds 1000·seed + k", p.Window, p.Hours)},
			{Key: "training", Value: fmt.Sprintf("%d episodes of %v, batch %d", p.Training.Episodes, p.Training.Window, p.Training.Batch)},
			{Key: "grey box", Value: fmt.Sprintf("%d members, one task in %d recorded", p.GreyBox.Members, p.GreyBox.Every)}}}
	for _, st := range p.Staleness {
		t := report.Table{Caption: fmt.Sprintf("View %v stale: mean task time (s) | deadline misses, mean ± 95%% interval over %d seeds", st, r.Seeds),
			Columns: []string{"policy"}}
		for _, later := range p.Later {
			t.Columns = append(t.Columns, fmt.Sprintf("%g days later", later))
		}
		for _, name := range PerTaskPolicies {
			row := []string{name}
			for _, x := range r.Rows {
				if x.Staleness != st.String() || x.Policy != name {
					continue
				}
				row = append(row, report.MeanCI(float64(x.MeanTime.Mean), float64(x.MeanTime.CI95))+" | "+report.MeanCI(float64(x.Missed.Mean), float64(x.Missed.CI95)))
				line := []string{x.Staleness, x.Policy, g(x.Later)}
				for _, v := range []Stat{x.MeanTime, x.Missed, x.OnTimeOffloaded} {
					line = append(line, g(float64(v.Mean)), g(float64(v.CI95)))
				}
				recs = append(recs, append(line, strconv.Itoa(r.Seeds), strconv.FormatUint(r.Seed, 10), g(p.TrainDay)))
			}
			t.Rows = append(t.Rows, row)
		}
		rep.Tables = append(rep.Tables, t)
	}
	ft := report.Table{Caption: "Fidelity to a held-out day's log: KL per step measure and the pair KL, mean over the seeds",
		Columns: append(append([]string{"view", "environment"}, edgeenv.StepMeasures...), "scene", "pairs")}
	for _, f := range r.Fidelity {
		row := []string{f.Staleness, f.Env}
		for _, k := range f.KL {
			row = append(row, fmt.Sprintf("%.4f", float64(k.Mean)))
		}
		ft.Rows = append(ft.Rows, append(row, fmt.Sprintf("%.4f", float64(f.Pairs.Mean))))
	}
	rep.Tables = append(rep.Tables, ft)
	var times []string
	for _, st := range p.Staleness {
		x := r.Pipeline[st.String()]
		times = append(times, fmt.Sprintf("%v stale: %.0f ± %.0f s", st, float64(x.Mean), float64(x.CI95)))
	}
	rep.Meta = append(rep.Meta, report.KV{Key: "pipeline from task records to the rule", Value: strings.Join(times, "; ")})
	return writeStudy(s.Dir, "pertask", head, recs, r, rep)
}
