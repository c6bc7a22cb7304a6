package edgeenv

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/edge"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/learn/venv"
)

// TestLogThenLearnAgents: the random engine's history of two short
// windows reads back, and a method learns agents from the devices alone:
// the mixture's virtual agents are close to the real ones on every
// measure, and every method's row is there.
func TestLogThenLearnAgents(t *testing.T) {
	var tr, dev bytes.Buffer
	l := Logging{Seed: 1, Days: []float64{0, 3}, From: 12 * time.Hour, Window: 10 * time.Minute}
	if err := Log(edge.Default(), l, &tr, &dev, nil); err != nil {
		t.Fatal(err)
	}
	trans, err := edge.ReadLog(&tr)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * 60 * edge.Agents; len(trans) != want {
		t.Errorf("%d transitions, want %d (2 windows x 60 steps x %d agents)", len(trans), want, edge.Agents)
	}
	recs, err := ReadDevices(&dev)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 200 {
		t.Fatalf("%d device records", len(recs))
	}
	rows, err := Agents(recs, 20000, 300, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(Methods) || rows[1].Method != "gmm" {
		t.Fatalf("rows %+v", rows)
	}
	for i, k := range rows[1].KL {
		if k > 0.1 {
			t.Errorf("gmm: %s KL %g", Measures[i], k)
		}
	}
	if _, err := ReadDevices(strings.NewReader(`{"scene": 5}`)); err == nil {
		t.Error("scene 5: no error")
	}
}

// TestVirtualOffloadRatio: a virtual environment learned from one slice
// of the random engine's log reproduces each scene's offloading ratio
// under the random policy to within 0.05 (the paper's Fig. 4).
func TestVirtualOffloadRatio(t *testing.T) {
	log := logged(t, Logging{Seed: 1, Days: []float64{1}, Window: 20 * time.Minute})
	cfg := venv.DefaultConfig()
	cfg.MLEEpochs, cfg.Adversarial = 20, 50
	rows, err := OffloadRatios(log, 1, cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if math.Abs(r.Real-r.Virtual) > 0.05 {
			t.Errorf("scene %d: real %.3f, virtual %.3f", r.Scene, r.Real, r.Virtual)
		}
	}
	if _, err := Learn(log[1:5], cfg); err == nil {
		t.Error("a log that does not start with agent 0: no error")
	}
}

// TestMAPPOInTheVirtualEnvironment: agents trained only in a virtual
// environment learned from 20 minutes of the random engine act in the
// real world; the IoT scene, whose tasks are small, finishes them sooner
// than under the random policy that wrote the logs.
func TestMAPPOInTheVirtualEnvironment(t *testing.T) {
	log := logged(t, Logging{Seed: 1, Days: []float64{0}, From: 12 * time.Hour, Window: 20 * time.Minute})
	cfg := venv.DefaultConfig()
	cfg.MLEEpochs, cfg.Adversarial = 20, 0
	v, err := Learn(log, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := TrainMAPPO(v, MAPPOConfig{Steps: 20000, Horizon: 60, Anchor: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	at := 3*24*time.Hour + 12*time.Hour
	random, err := Evaluate(Contender{Name: "random"}, edge.Default(), at, 10*time.Minute, 5)
	if err != nil {
		t.Fatal(err)
	}
	learned, err := Evaluate(Contender{Name: "mappo", Policy: m}, edge.Default(), at, 10*time.Minute, 5)
	if err != nil {
		t.Fatal(err)
	}
	if l, r := learned.Scenes[1].MeanTime(), random.Scenes[1].MeanTime(); l >= r {
		t.Errorf("IoT mean time: MA-PPO %.3f s, random %.3f s", l, r)
	}
}

// TestBCLearnsTheLogsMeanAction: cloning the random engine, whose weights
// are uniform in [0, 1) whatever it observes, gives actions near their
// mean, 0.5.
func TestBCLearnsTheLogsMeanAction(t *testing.T) {
	log := logged(t, Logging{Seed: 1, Days: []float64{0}, From: 12 * time.Hour, Window: 20 * time.Minute})
	steps, err := StepsOf(log)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := TrainBC(steps, 1)
	if err != nil {
		t.Fatal(err)
	}
	a := bc.Act(1, log[1].State, nil)
	for i, x := range a[:edge.Targets] {
		if math.Abs(x-0.5) > 0.15 {
			t.Errorf("IoT weight %d is %.3f, want about 0.5", i, x)
		}
	}
}

// logged is the random engine's transitions of l's windows.
func logged(t *testing.T, l Logging) []edge.Transition {
	t.Helper()
	var tr bytes.Buffer
	if err := Log(edge.Default(), l, &tr, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	log, err := edge.ReadLog(&tr)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// TestVirtualFileRoundTrip: an environment read back rolls out exactly as
// the one written, and keeps the logged steps.
func TestVirtualFileRoundTrip(t *testing.T) {
	log := logged(t, Logging{Seed: 2, Days: []float64{0}, Window: 5 * time.Minute})
	cfg := venv.DefaultConfig()
	cfg.MLEEpochs, cfg.Adversarial = 2, 0
	v, err := Learn(log, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := v.Write(&buf, EnvProvenance{Logs: "test", Config: cfg}); err != nil {
		t.Fatal(err)
	}
	got, prov, err := ReadVirtual(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if prov.Logs != "test" || prov.Config != cfg || len(got.States) != len(v.States) || !slices.Equal(got.Actions[3][1], v.Actions[3][1]) {
		t.Fatalf("read back %d steps, provenance %+v", len(got.States), prov)
	}
	policy := edge.EvenWeights{}
	a := v.Rollout(policy, 10, rand.New(rand.NewPCG(1, 1)))
	b := got.Rollout(policy, 10, rand.New(rand.NewPCG(1, 1)))
	if !slices.Equal(a, b) {
		t.Errorf("rollouts differ:\n%v\n%v", a, b)
	}
	if _, _, err := ReadVirtual(strings.NewReader(`{"format":"shoal-edge-env","agents":2}` + "\n")); err == nil {
		t.Error("2 agents: no error")
	}
}

// TestRealPPOIsDeterministic: the agents learning together in shared real
// worlds (one goroutine each) give the same policy from the same seed.
func TestRealPPOIsDeterministic(t *testing.T) {
	var acts [2][]float64
	obs := logged(t, Logging{Seed: 3, Days: []float64{0}, Window: time.Minute})[2].State
	for i := range acts {
		p, err := TrainRealPPO(edge.Default(), "", 0, 1024, 30, 4)
		if err != nil {
			t.Fatal(err)
		}
		if p.Method != "ppo-real" || p.Provenance.Steps != 1024 {
			t.Errorf("header %+v", p)
		}
		acts[i] = p.Act(2, obs, nil)
	}
	if !slices.Equal(acts[0], acts[1]) {
		t.Errorf("two runs act %v and %v", acts[0], acts[1])
	}
}

// TestPerTaskAdvantages: rewards become advantages per scene (mean 0,
// deviation 1 within each), so that one scene's longer deadlines do not
// drown another's; a per-task rule is refused bad training settings.
func TestPerTaskAdvantages(t *testing.T) {
	done := []rl.ChoiceSample{{Adv: -1}, {Adv: -3}, {Adv: -10}, {Adv: -30}, {Adv: -20}}
	normalise(done, []int{0, 0, 1, 1, 1})
	want := []float64{1, -1, 1.2247, -1.2247, 0}
	for i, s := range done {
		if math.Abs(s.Adv-want[i]) > 1e-3 {
			t.Errorf("advantages %+v, want %v", done, want)
			break
		}
	}
	// A choice whose task is still running past its deadline is judged
	// missed, with its time so far; one within its deadline waits.
	p, err := NewPerTask("test", rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	p.Learning = true
	cands := []edge.Candidate{{Target: 1, Estimate: 100 * time.Millisecond}, {Target: 2, Estimate: 200 * time.Millisecond}}
	p.Choose(&edge.TaskView{ID: 1, Deadline: time.Second}, cands)
	p.Choose(&edge.TaskView{ID: 2, Deadline: time.Second, Arrived: 1500 * time.Millisecond}, cands)
	p.closeLate(2 * time.Second)
	if len(p.done) != 1 || p.done[0].Adv != -3 || len(p.open) != 1 {
		t.Errorf("after the deadline: %d judged (%+v), %d open; want the late one at -3, the other open", len(p.done), p.done, len(p.open))
	}
	if _, err := TrainPerTask(edge.Default(), PerTaskTraining{Episodes: 0, Window: time.Hour, Batch: 1}); err == nil {
		t.Error("no episodes: no error")
	}
}

// TestPerTaskTrainingIsDeterministic: the same seed trains the same rule:
// two trainings on a stale view (where late choices are judged in bulk)
// run the same in an evaluation window, to the last bit.
func TestPerTaskTrainingIsDeterministic(t *testing.T) {
	cfg := edge.Default()
	cfg.Staleness = time.Second
	tr := PerTaskTraining{Episodes: 2, Window: 10 * time.Minute, FirstDay: 1, LastDay: 2, Seed: 3, Batch: 1024}
	run := func() float64 {
		p, err := TrainPerTask(cfg, tr)
		if err != nil {
			t.Fatal(err)
		}
		e, err := Evaluate(Contender{Name: "rule", Task: p}, cfg, 12*time.Hour, 5*time.Minute, 9)
		if err != nil {
			t.Fatal(err)
		}
		return e.All.MeanTime()
	}
	if a, b := run(), run(); a != b {
		t.Errorf("two trainings of seed 3: mean times %.17g and %.17g", a, b)
	}
}

// earliest is a task policy that picks the earliest estimate: greedy.
type earliest struct{}

func (earliest) Choose(_ *edge.TaskView, cands []edge.Candidate) int {
	best := 0
	for k, c := range cands {
		if c.Estimate < cands[best].Estimate {
			best = k
		}
	}
	return best
}

func (earliest) Finished(uint64, time.Duration, bool) {}

// TestTaskContenderRunsAsTheHeuristics: a per-task rule is evaluated as
// the heuristics are (equal shares): one that picks the earliest estimate
// scores what greedy scores.
func TestTaskContenderRunsAsTheHeuristics(t *testing.T) {
	cfg := edge.Default()
	a, err := Evaluate(Contender{Name: "greedy", Heuristic: edge.Greedy}, cfg, 12*time.Hour, 10*time.Minute, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Evaluate(Contender{Name: "earliest", Task: earliest{}}, cfg, 12*time.Hour, 10*time.Minute, 7)
	if err != nil {
		t.Fatal(err)
	}
	if a.All != b.All {
		t.Errorf("greedy %+v, the earliest-estimate task rule %+v", a.All, b.All)
	}
}
