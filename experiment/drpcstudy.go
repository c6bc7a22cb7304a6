package experiment

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/envs/drpcenv"
	"github.com/shoal-project/shoal/experiment/report"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
)

// DRPCStudy reproduces one of the DRPC paper's comparisons: it trains a
// DRPC policy and the FIRM-like and CoScal-like baselines (or reuses them
// from PolicyDir), then runs HPA, KPA, FIRM, CoScal, the teacher alone and
// DRPC on the study's workload, the same arrivals for every policy.
type DRPCStudy struct {
	Name string
	// Scenario is the application (TrainTicket) and its workload.
	Scenario string
	// Arrivals, if set, replaces every source's arrivals, keeping the mix.
	Arrivals *workload.ProcessSpec
	// Horizon of the evaluation (0: the scenario's).
	Horizon time.Duration
	// Weights, if set, trains one policy per equation-2 weight and compares
	// them (the sensitivity study); otherwise one policy with the default.
	Weights []float64
	// Retrain are ways to hand over to the teacher when the notifier
	// fires, each run as a policy of its own beside DRPC without
	// retraining (the mix-change study).
	Retrain []RetrainVariant
	// FineTuneOn, if set, is a scenario the policy is also fine-tuned on
	// in the simulator (train drpc --init) for FineTuneEpisodes teacher
	// episodes, run as drpc+finetune: the mix-change study's new mix.
	FineTuneOn       string
	FineTuneEpisodes int
	// CPUBudget, if > 0, is the budget DRPC is trained under (vCPUs,
	// drpcenv.Config.Budget): the study runs that policy.
	CPUBudget float64
	// Forecast trains DRPC with the GRU workload predictor (train drpc
	// --forecast).
	Forecast bool
	// Training names the training workloads: "surges" (drpcenv.Surges,
	// the default) or "alibaba-first-half" (ten-minute segments of the
	// first half of the paper's trace, whose second half the paper study
	// evaluates on).
	Training string
	// Start and Window, if set, replace every source's trace offset and
	// length (the trace half a study evaluates on).
	Start, Window time.Duration

	Dir, PolicyDir string
	Seeds          int
	TrainSeed      uint64
	Budget         time.Duration // wall time of each policy's teacher training
	Now            func() time.Time
	Log            io.Writer
}

// DRPCStudies are the studies of `shoal experiment drpc`, by name.
func DRPCStudies() map[string]DRPCStudy {
	tt, _ := scenario.Lookup("trainticket")
	surge := drpcenv.Surge(tt, 4)
	return map[string]DRPCStudy{
		"surge": {Name: "surge", Scenario: "trainticket", Arrivals: &surge, Horizon: 10 * time.Minute},
		"paper": {Name: "paper", Scenario: "trainticket-alibaba", Training: "alibaba-first-half",
			Start: 2500 * time.Minute, Window: 2500 * time.Minute, Horizon: 250 * time.Minute},
		"mixchange": {Name: "mixchange", Scenario: "trainticket-mixchange", Retrain: []RetrainVariant{
			{"drpc+retrain", 24, 0},         // two minutes with the training noise (0.3)
			{"drpc+retrain-long", 120, 0.1}, // ten minutes with a third of it
		}, FineTuneOn: "trainticket-buyers", FineTuneEpisodes: 40},
		"sensitivity": {Name: "sensitivity", Scenario: "trainticket", Arrivals: &surge, Horizon: 10 * time.Minute, Weights: []float64{1, 4, 8}},
	}
}

// RetrainVariant is one way to retrain when the notifier fires: the
// teacher takes over for Periods control periods, exploring with Noise
// (0: the noise it was trained with), then the students imitate it.
type RetrainVariant struct {
	Name    string
	Periods int
	Noise   float64
}

// DRPCStudyNames lists the studies, sorted.
func DRPCStudyNames() []string {
	var names []string
	for n := range DRPCStudies() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Run trains (or loads) the policies, compares, and writes the tables,
// results and report into Dir.
func (s DRPCStudy) Run(ctx context.Context, w io.Writer) error {
	sc, err := scenario.Lookup(s.Scenario)
	if err != nil {
		return fmt.Errorf("drpc %s: %w", s.Name, err)
	}
	train, err := scenario.Lookup("trainticket") // the training application, at its own rates
	if err != nil {
		return err
	}
	if s.Arrivals != nil {
		if err := sc.SetArrivals(*s.Arrivals); err != nil {
			return fmt.Errorf("drpc %s: arrivals: %w", s.Name, err)
		}
	}
	if s.Start > 0 || s.Window > 0 {
		for i := range sc.Sources {
			sc.Sources[i].Arrivals.Start, sc.Sources[i].Arrivals.Window = s.Start, s.Window
		}
	}
	if s.Horizon > 0 {
		sc.SetHorizon(s.Horizon)
	}
	weights := s.Weights
	if len(weights) == 0 {
		weights = []float64{drpc.DefaultReward(train.SLO).UtilWeight}
	}
	learned := map[string]Learned{"hpa": TimedAutoscalers(sc, "hpa"), "kpa": TimedAutoscalers(sc, "kpa")}
	params := map[string]int{}
	policies := []string{"hpa", "kpa"}
	base, baseParams, err := s.baselines(ctx, train, sc)
	if err != nil {
		return err
	}
	for _, name := range []string{"firm", "coscal"} {
		learned[name], params[name] = base[name], baseParams[name]
		policies = append(policies, name)
	}
	for _, wt := range weights {
		p, err := s.policy(ctx, train, wt)
		if err != nil {
			return err
		}
		name := "drpc"
		if len(s.Weights) > 0 {
			name = fmt.Sprintf("drpc/w=%g", wt)
		} else {
			learned["teacher"] = DRPCTeacher(p, sc)
			params["teacher"] = teacherParams(p)
			policies = append(policies, "teacher")
		}
		learned[name] = drpcLearned(p, sc, drpc.Options{Seed: s.TrainSeed})
		params[name] = p.Parameters()
		policies = append(policies, name)
		for _, v := range s.Retrain {
			learned[v.Name] = drpcLearned(p, sc, drpc.Options{Retrain: v.Periods, RetrainNoise: v.Noise, Seed: s.TrainSeed})
			params[v.Name] = p.Parameters()
			policies = append(policies, v.Name)
		}
		if s.FineTuneOn != "" {
			q, err := s.fineTuned(ctx, p, wt)
			if err != nil {
				return err
			}
			learned["drpc+finetune"], params["drpc+finetune"] = drpcLearned(q, sc, drpc.Options{Seed: s.TrainSeed}), q.Parameters()
			policies = append(policies, "drpc+finetune")
		}
	}
	cmp := Comparison{Scenario: sc, Policies: policies, Learned: learned, Seeds: s.Seeds}
	s.logf("%s: evaluating %v on %s, %d seeds", s.Name, policies, sc.Name, max(s.Seeds, sc.Seeds))
	res, figs, err := DRPCComparison(ctx, cmp, params)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "drpc %s: %s\n", s.Name, res.Header())
	if err := WriteDRPCTables(w, figs); err != nil {
		return err
	}
	meta := []report.KV{{Key: "study", Value: "drpc " + s.Name}, {Key: "training seed", Value: fmt.Sprint(s.TrainSeed)}}
	if err := res.WriteFiles(s.Dir, meta); err != nil {
		return err
	}
	return writeFile(filepath.Join(s.Dir, "drpc.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(figs)
	})
}

func teacherParams(p *drpc.Policy) int {
	n := 0
	for _, w := range p.Teacher().Params() {
		n += len(w.Value.Data)
	}
	return n
}

// policy loads the study's policy for weight wt from PolicyDir, or trains
// and saves it.
func (s DRPCStudy) policy(ctx context.Context, sc *scenario.Scenario, wt float64) (*drpc.Policy, error) {
	return s.training(wt).policy(ctx, sc, s.PolicyDir)
}

// training is the study's training run for weight wt.
func (s DRPCStudy) training(wt float64) drpcTraining {
	return drpcTraining{Training: s.Training, Weight: wt, Budget: s.CPUBudget, Seed: s.TrainSeed, Forecast: s.Forecast, Wall: s.Budget, Now: s.Now, Log: s.logf}
}

// fineTuned loads, or makes and saves, policy p (trained with weight wt)
// fine-tuned on FineTuneOn.
func (s DRPCStudy) fineTuned(ctx context.Context, p *drpc.Policy, wt float64) (*drpc.Policy, error) {
	on, err := scenario.Lookup(s.FineTuneOn)
	if err != nil {
		return nil, fmt.Errorf("drpc %s: fine-tuning: %w", s.Name, err)
	}
	tr := s.training(wt)
	tr.Init, tr.InitName, tr.Episodes = p, tr.name()+"-"+s.FineTuneOn, s.FineTuneEpisodes
	return tr.policy(ctx, on, s.PolicyDir)
}

// drpcTraining is one DRPC training run of a study.
type drpcTraining struct {
	// Training names the training workloads: "surges" (drpcenv.Surges,
	// the default) or "alibaba-first-half".
	Training string
	// Weight is equation 2's (0: drpc.DefaultReward's); Budget, if > 0,
	// the vCPUs a training episode may allocate (drpcenv.Config.Budget).
	Weight, Budget float64
	Seed           uint64
	// Forecast fits the GRU workload predictor first (train drpc
	// --forecast): the policy reads its forecast.
	Forecast bool
	// Init, if set, is the policy to fine-tune (train drpc --init), named
	// InitName, for Episodes teacher episodes (0: the default count).
	Init     *drpc.Policy
	InitName string
	Episodes int
	// Wall, with Now, caps the teacher's wall time (0: its episode count
	// alone bounds it, so the policy does not depend on the machine).
	Wall time.Duration
	Now  func() time.Time
	Log  func(format string, a ...any)
}

func (tr drpcTraining) name() string {
	if tr.Init != nil {
		return fmt.Sprintf("%s-finetuned-seed%d", tr.InitName, tr.Seed)
	}
	training := cmp.Or(tr.Training, "surges")
	n := fmt.Sprintf("drpc-%s-w%g-seed%d", training, tr.Weight, tr.Seed)
	if tr.Budget > 0 {
		n += fmt.Sprintf("-cpu%g", tr.Budget)
	}
	if tr.Forecast {
		n += "-forecast"
	}
	return n
}

// policy loads the run's policy from dir, or trains it there (resuming an
// interrupted run from its checkpoint) and saves it.
func (tr drpcTraining) policy(ctx context.Context, sc *scenario.Scenario, dir string) (*drpc.Policy, error) {
	if tr.Weight == 0 {
		tr.Weight = drpc.DefaultReward(sc.SLO).UtilWeight
	}
	file := filepath.Join(dir, tr.name()+".policy")
	var p *drpc.Policy
	ckpt := file + ".ckpt" // an interrupted study resumes the training where it stopped
	err := reuseOrTrain(file, tr.Log, func(r io.Reader) (err error) { p, err = drpc.ReadPolicy(r); return err },
		func() (func(io.Writer) error, error) {
			cfg := drpcenv.DefaultConfig()
			cfg.Seed, cfg.Budget = tr.Seed, tr.Budget
			if tr.Forecast {
				cfg.ForecastEpisodes = 4
			}
			if tr.Init != nil {
				cfg.Init = tr.Init
				cfg.Episodes = cmp.Or(tr.Episodes, cfg.Episodes)
			}
			cfg.Reward = drpc.DefaultReward(sc.SLO)
			cfg.Reward.UtilWeight = tr.Weight
			switch cmp.Or(tr.Training, "surges") {
			case "surges":
			case "alibaba-first-half":
				cfg.Arrivals = drpcenv.Totals(drpcenv.AlibabaFirstHalf(cfg.EpisodeLength))
			default:
				return nil, fmt.Errorf("drpc: unknown training workloads %q", tr.Training)
			}
			if tr.Wall > 0 && tr.Now != nil {
				cfg.Deadline, cfg.Now = tr.Now().Add(tr.Wall), tr.Now
			}
			cfg.Progress = func(e drpcenv.Episode) {
				tr.Log("train %s: episode %d %s reward %.3f SLO violations %.1f%% %.1f vCPUs", tr.name(), e.Index, e.Phase, e.Reward, 100*e.SLOViolations, e.Cost)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			cfg.Checkpoint, cfg.Resume = ckpt, true
			cfg.Resumed = func(done []drpcenv.Episode) { tr.Log("train %s: resuming after episode %d", tr.name(), len(done)) }
			t, err := drpcenv.Train(ctx, sc, cfg)
			if err != nil {
				return nil, err
			}
			p = t.Policy
			p.Provenance.WallSeconds = t.Elapsed.Seconds()
			return p.Write, nil
		})
	if err != nil {
		return nil, err
	}
	if err := os.Remove(ckpt); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return p, nil
}

func (s DRPCStudy) logf(format string, a ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, format+"\n", a...)
	}
}
