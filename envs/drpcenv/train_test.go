package drpcenv

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
)

// TestTrainWritesARunnablePolicy trains for a few short episodes and checks
// the policy: its students and teacher survive a round trip through the
// file, the trained feature range is set, and every phase ran.
func TestTrainWritesARunnablePolicy(t *testing.T) {
	sc, cfg := shortRun(t, 3, 3, 4)
	tr, err := Train(context.Background(), sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, e := range tr.Curve {
		phases = append(phases, e.Phase)
	}
	// The base rule is validated before the first teacher episode.
	if len(tr.Curve) != 12 || phases[0] != phaseForecast || phases[4] != phaseValidation || phases[5] != phaseTeacher ||
		phases[6] != phaseValidation || phases[8] != phaseValidation || phases[9] != phaseImitation || phases[11] != phaseDAgger {
		t.Fatalf("phases %v", phases)
	}
	p := tr.Policy
	if len(p.Deployments) != 40 || p.Provenance.Updates == 0 || p.Low == nil || p.Provenance.ImitationMSE <= 0 {
		t.Fatalf("policy: %d deployments, %d updates, low %v, mse %v", len(p.Deployments), p.Provenance.Updates, p.Low, p.Provenance.ImitationMSE)
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	q, err := drpc.ReadPolicy(&buf)
	if err != nil {
		t.Fatal(err)
	}
	in := make([]float32, drpc.LocalFeatures)
	for k := range in {
		in[k] = 0.1 * float32(k)
	}
	a := p.Student(7).NewPredictor().Predict(make([]float32, drpc.ActionDim), in)
	b := q.Student(7).NewPredictor().Predict(make([]float32, drpc.ActionDim), in)
	if !slices.Equal(a, b) {
		t.Fatalf("student 7 after the round trip: %v, before %v", b, a)
	}
	if p.Forecaster() == nil || q.Forecaster() == nil {
		t.Fatal("the workload predictor did not survive the round trip")
	}
	recent := make([][]float64, p.Forecaster().Window())
	for k := range recent {
		recent[k] = []float64{200 + 10*float64(k)}
	}
	fa, fb := make([]float64, p.Forecaster().Horizon()), make([]float64, q.Forecaster().Horizon())
	p.Forecaster().Predict(fa, recent)
	q.Forecaster().Predict(fb, recent)
	for k := range fa {
		if fa[k] != fb[k] {
			t.Fatalf("forecast after the round trip %v, before %v", fb, fa)
		}
	}
}

// A run interrupted after the forecast episodes, after the teacher's last
// episode and after the first imitation episode, resumed from its
// checkpoint each time, ends with the policy the uninterrupted run writes,
// byte for byte; a checkpoint of other settings is refused.
func TestResumedTrainingEndsWithTheSamePolicy(t *testing.T) {
	sc, cfg := shortRun(t, 5, 2, 2)
	policy := func(tr *Trained) []byte {
		var buf bytes.Buffer
		if err := tr.Policy.Write(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	whole, err := Train(context.Background(), sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Checkpoint, cfg.Resume = filepath.Join(t.TempDir(), "drpc.ckpt"), true
	var resumedAt []int
	cfg.Resumed = func(curve []Episode) { resumedAt = append(resumedAt, len(curve)) }
	var tr *Trained
	for _, stop := range []int{2, 4, 5, 0} { // episodes done when each sitting stops (0: runs to the end)
		ctx, cancel := context.WithCancel(context.Background())
		cfg.Progress = func(e Episode) {
			if e.Index == stop {
				cancel()
			}
		}
		tr, err = Train(ctx, sc, cfg)
		cancel()
		if stop > 0 && !errors.Is(err, context.Canceled) {
			t.Fatalf("sitting stopped after episode %d: %v", stop, err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(resumedAt, []int{2, 4, 5}) {
		t.Fatalf("resumed after episodes %v, want [2 4 5]", resumedAt)
	}
	if len(tr.Curve) != len(whole.Curve) || !bytes.Equal(policy(tr), policy(whole)) {
		t.Fatalf("resumed run: %d episodes and another policy than the uninterrupted run's %d", len(tr.Curve), len(whole.Curve))
	}
	cfg.Reward.UtilWeight++
	if _, err := Train(context.Background(), sc, cfg); err == nil || !strings.Contains(err.Error(), "other settings") {
		t.Fatalf("resuming with another reward weight: %v", err)
	}
}

// TestBudgetRaisesTheMultiplier: under a budget far below what TrainTicket
// allocates, the multiplier rises after every teacher episode by the
// learning rate times the relative overspend, the policy records the
// budget, and two runs in rounds of two episodes end with the same policy,
// byte for byte.
func TestBudgetRaisesTheMultiplier(t *testing.T) {
	sc, cfg := shortRun(t, 4, 1, 0)
	cfg.Episodes, cfg.ValidateEvery, cfg.Budget, cfg.Workers = 4, 2, 5, 2
	var runs [][]byte
	for range 2 {
		tr, err := Train(context.Background(), sc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		lambda := 0.0
		for _, e := range tr.Curve {
			if e.Phase != phaseTeacher {
				continue
			}
			if e.Cost < 2*cfg.Budget {
				t.Fatalf("episode %d allocated %.1f vCPUs; TrainTicket's 40 services need more than %g", e.Index, e.Cost, 2*cfg.Budget)
			}
			want := lambda + cfg.BudgetLR*(e.Cost/cfg.Budget-1)
			if math.Abs(e.Lambda-want) > 1e-9 {
				t.Fatalf("episode %d: multiplier %v, want %v", e.Index, e.Lambda, want)
			}
			lambda = e.Lambda
		}
		b := tr.Policy.Budget
		if b == nil || b.CPU != 5 || b.Lambda != lambda || !(b.GBInCPU > 0.05 && b.GBInCPU < 0.1) {
			t.Fatalf("policy budget %+v, multiplier %v", b, lambda)
		}
		var buf bytes.Buffer
		if err := tr.Policy.Write(&buf); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, buf.Bytes())
	}
	if !bytes.Equal(runs[0], runs[1]) {
		t.Fatal("two runs of the same seed and workers wrote different policies")
	}
}

// shortRun is TrainTicket with a training of two one-minute teacher
// episodes, learning from the 200th transition, each validated on one
// episode.
func shortRun(t *testing.T, seed uint64, imitation, forecast int) (*scenario.Scenario, Config) {
	t.Helper()
	sc, err := scenario.Lookup("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Seed, cfg.Episodes, cfg.EpisodeLength, cfg.ImitationEpisodes, cfg.ForecastEpisodes = seed, 2, time.Minute, imitation, forecast
	cfg.TD3.LearningStarts, cfg.TD3.BatchSize = 200, 32
	cfg.ValidateEvery, cfg.ValidationEpisodes = 1, 1
	return sc, cfg
}

// shortPolicy is a policy trained by shortRun, with its scenario and
// configuration.
func shortPolicy(t *testing.T, seed uint64, imitation, forecast int) (*scenario.Scenario, Config, *drpc.Policy) {
	t.Helper()
	sc, cfg := shortRun(t, seed, imitation, forecast)
	tr, err := Train(context.Background(), sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sc, cfg, tr.Policy
}

// TestMemoryFloorHoldsFullConcurrency: a service's memory may not go below
// what a replica needs at its concurrency limit; one whose memory grows
// with calls it does not bound keeps its configured limit; one whose
// memory does not grow may go down to idle use plus 10%.
func TestMemoryFloorHoldsFullConcurrency(t *testing.T) {
	sc, err := scenario.Lookup("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	deps, err := Deployments(sc, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]float64{
		"ts-user-service": {320 + 0.5*200, 1000}, // base 320 MB, 0.5 MB a call, 200 calls
		"ts-ui-dashboard": {256, 512},            // 0.05 MB a call, no limit on calls
	}
	for _, d := range deps {
		if w, ok := want[d.Name]; ok {
			if d.MemoryMin != w[0] || d.MemoryMax != w[1] {
				t.Errorf("%s: memory rails [%g, %g], want %v", d.Name, d.MemoryMin, d.MemoryMax, w)
			}
			delete(want, d.Name)
		}
	}
	if len(want) > 0 {
		t.Fatalf("not autoscaled: %v", want)
	}
}

// TestFineTuneStartsFromThePolicy fine-tunes a trained policy on another
// request mix: the policy's teacher is validated after the base rule and
// before any episode, no predictor is fitted again (the policy's is kept),
// the guard rails and RT_max are the policy's, and the policy it started
// from is left as it was.
func TestFineTuneStartsFromThePolicy(t *testing.T) {
	_, _, from := shortPolicy(t, 5, 1, 2)
	before := slices.Clone(from.Teacher().Params()[0].Value.Data)
	buyers, err := scenario.Lookup("trainticket-buyers")
	if err != nil {
		t.Fatal(err)
	}
	_, cfg := shortRun(t, 6, 1, 4)
	cfg.Init = from
	ft, err := Train(context.Background(), buyers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, e := range ft.Curve {
		phases = append(phases, e.Phase)
	}
	want := []string{phaseValidation, phaseValidation, phaseTeacher, phaseValidation, phaseTeacher, phaseValidation, phaseImitation}
	if !slices.Equal(phases, want) {
		t.Fatalf("phases %v, want %v", phases, want)
	}
	p := ft.Policy
	if p.Forecaster() == nil || p.Provenance.Scenario != "trainticket-buyers" {
		t.Fatalf("fine-tuned policy: predictor %v, scenario %q", p.Forecaster() != nil, p.Provenance.Scenario)
	}
	for i, d := range p.Deployments {
		if d != from.Deployments[i] {
			t.Fatalf("deployment %d: %+v, the policy it started from has %+v", i, d, from.Deployments[i])
		}
	}
	if !slices.Equal(before, from.Teacher().Params()[0].Value.Data) {
		t.Fatal("fine-tuning changed the policy it started from")
	}

	other := *from
	other.Deployments = slices.Clone(from.Deployments)
	other.Deployments[3].Name = "ts-elsewhere-service"
	cfg.Init = &other
	if _, err := Train(context.Background(), buyers, cfg); err == nil || !strings.Contains(err.Error(), "ts-elsewhere-service") {
		t.Fatalf("a policy for other deployments: %v", err)
	}
}

// TestValidateJudgesEverySeedAlike: a trained policy's students are
// validated on the same episodes whatever the training seed in the
// configuration, deterministically, and Beats prefers a policy within the
// budget, then the cheaper one over it, then the one with fewer SLO
// violations within it; without a budget, the higher reward.
func TestValidateJudgesEverySeedAlike(t *testing.T) {
	sc, cfg, pol := shortPolicy(t, 7, 1, 0)
	cfg.ValidationEpisodes = 2
	a, err := Validate(context.Background(), sc, pol, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Seed = 8
	b, err := Validate(context.Background(), sc, pol, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a != b || !(a.Reward > 0) || !(a.Cost > 0) || a.Phase != phaseStudents {
		t.Fatalf("validation with training seed 7: %+v; with 8: %+v", a, b)
	}
	within, over, cheaper := Episode{Reward: 0.2, Cost: 40, SLOViolations: 0.1}, Episode{Reward: 0.9, Cost: 60}, Episode{Reward: 0.1, Cost: 50}
	safer := Episode{Reward: 0.1, Cost: 44, SLOViolations: 0.05}
	if !Beats(within, over, 45) || Beats(over, within, 45) || !Beats(cheaper, over, 45) || !Beats(over, within, 0) ||
		!Beats(safer, within, 45) || Beats(safer, within, 0) {
		t.Error("Beats: want within the budget first, then the cheaper, then the fewer violations, and without a budget the higher reward")
	}
}

// TestBaselineCountsTheScenariosResources: a static policy never scales,
// so its bill is the scenario file's own: each autoscaled deployment's
// replicas times its CPU limit and memory limit at the prices, doubled
// (within max_replicas) by static:scale=2.
func TestBaselineCountsTheScenariosResources(t *testing.T) {
	sc, err := scenario.Lookup("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{EpisodeLength: time.Minute, ValidationEpisodes: 1}
	deps, err := Deployments(sc, DefaultConfig().Period)
	if err != nil {
		t.Fatal(err)
	}
	want := func(scale float64) float64 {
		var c float64
		for _, d := range deps {
			sv := sc.Services[slices.IndexFunc(sc.Services, func(s cluster.Service) bool { return s.Name == d.Name })]
			r := math.Ceil(float64(max(sv.Replicas, 1)) * scale)
			if sv.MaxReplicas > 0 {
				r = min(r, float64(sv.MaxReplicas))
			}
			c += r * (sv.CPU + sv.MemoryMB/1024*gbInCPU(sc))
		}
		return c
	}
	for _, s := range []struct {
		policy string
		scale  float64
	}{{"static", 1}, {"static:scale=2", 2}} {
		v, err := Baseline(context.Background(), sc, s.policy, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if w := want(s.scale); math.Abs(v.Cost-w) > 1e-9*w {
			t.Errorf("%s: %.6f vCPUs, the scenario's deployments hold %.6f", s.policy, v.Cost, w)
		}
	}
	if _, err := Baseline(context.Background(), sc, "drpc:x.policy", cfg); err == nil {
		t.Error("a learned policy as the baseline: no error")
	}
}

// TestTrainingWorkloadsAvoidTheEvaluation: trace windows come from the
// Alibaba trace's first half, an episode long, and the default draw keeps
// away from the validation segment (1200-1400); mix shifts move one class's
// share to another in four steps at a constant total, never in the
// frontier study's pairs; and every draw replays on the scenario.
func TestTrainingWorkloadsAvoidTheEvaluation(t *testing.T) {
	sc, err := scenario.Lookup("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	draw := Training(sc, 10*time.Minute, 0.4, 0.4)
	rng := rand.New(rand.NewPCG(1, 2))
	counts := map[string]int{}
	for range 3000 {
		tr := draw(rng)
		switch {
		case tr.Sources != nil:
			counts["mix"]++
			checkMixShift(t, sc, tr)
		case tr.Total.Kind == workload.KindTrace:
			counts["trace"]++
			s, end := tr.Total.Start, tr.Total.Start+tr.Total.Window
			if s < 0 || end > 2500*time.Minute || end > 1100*time.Minute && s < 1500*time.Minute || tr.Total.Window != 100*time.Minute {
				t.Fatalf("trace window %v-%v: outside the first half's training part, or not an episode long", s, end)
			}
		default:
			counts["surge"]++
		}
		if counts["surge"]+counts["mix"]+counts["trace"] < 20 {
			cp := *sc
			cp.Sources = slices.Clone(sc.Sources)
			if err := tr.apply(&cp); err != nil {
				t.Fatal(err)
			}
			if err := cp.Validate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for kind, want := range map[string]int{"trace": 1200, "mix": 1200, "surge": 600} {
		if n := counts[kind]; n < want*9/10 || n > want*11/10 {
			t.Errorf("%d %s draws of 3000, want about %d", n, kind, want)
		}
	}
}

// checkMixShift checks one mix shift: four steps, a constant total, one
// class rising by what another loses, not a pair the study evaluates.
func checkMixShift(t *testing.T, sc *scenario.Scenario, tr Traffic) {
	t.Helper()
	var up, down []string
	for k := range 4 {
		total := 0.0
		for _, a := range tr.Sources {
			if len(a.Rates) != 4 || a.Step != 150*time.Second {
				t.Fatalf("mix shift %+v: want four steps of 150 s", a)
			}
			total += a.Rates[k]
		}
		if first := sumFirst(tr); math.Abs(total-first) > 1e-6*first {
			t.Fatalf("step %d: total %v, first step %v", k, total, first)
		}
	}
	for i, a := range tr.Sources {
		switch {
		case a.Rates[3] > a.Rates[0]*1.0001:
			up = append(up, sc.Sources[i].Class)
		case a.Rates[3] < a.Rates[0]*0.9999:
			down = append(down, sc.Sources[i].Class)
		}
	}
	if len(up) != 1 || len(down) != 1 || up[0] == "cancel" && down[0] == "query" || up[0] == "admin" && down[0] == "buy" {
		t.Fatalf("mix shift raises %v and lowers %v: want one pair, not the study's", up, down)
	}
}

func sumFirst(tr Traffic) float64 {
	s := 0.0
	for _, a := range tr.Sources {
		s += a.Rates[0]
	}
	return s
}

// TestAddOnlyTakesNothingFromTheHPA: a policy trained over the HPA with
// AddOnly may not raise the HPA's target above its own nor set a CPU limit
// below the scenario's; AddOnly needs a policy over the HPA.
func TestAddOnlyTakesNothingFromTheHPA(t *testing.T) {
	sc, cfg := shortRun(t, 3, 1, 0)
	cfg.Base, cfg.OverHPA, cfg.AddOnly = nil, &drpc.OverHPA{Target: 75, Range: 1}, true
	tr, err := Train(context.Background(), sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := tr.Policy
	if p.OverHPA == nil || p.OverHPA.Cap != 75 || cfg.OverHPA.Cap != 0 {
		t.Fatalf("over_hpa %+v, the caller's %+v: want the cap at the target, the caller's setting untouched", p.OverHPA, cfg.OverHPA)
	}
	for _, d := range p.Deployments {
		i := slices.IndexFunc(sc.Services, func(s cluster.Service) bool { return s.Name == d.Name })
		if d.CPUMin != sc.Services[i].CPU {
			t.Errorf("%s: CPU floor %g, want the scenario's limit %g", d.Name, d.CPUMin, sc.Services[i].CPU)
		}
	}
	cfg.OverHPA = nil
	if _, err := Train(context.Background(), sc, cfg); err == nil {
		t.Error("AddOnly without a policy over the HPA trained")
	}
}
