package edge

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func world(t *testing.T, seed uint64, start time.Duration) *World {
	t.Helper()
	shape, err := WikipediaShape()
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(Default(), shape, seed, start)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func uniform(agent int) []float64 { return EvenWeights{}.Act(agent, nil, nil) }

// TestLocalWeightsOffloadOnlyEdgeOnlyTasks: with all weight on local
// execution, only the tasks that must run on an edge node are offloaded,
// in the share the group's preferences give them.
func TestLocalWeightsOffloadOnlyEdgeOnlyTasks(t *testing.T) {
	w := world(t, 1, 0)
	var acts [Agents][]float64
	for a := range Agents {
		acts[a] = uniform(a)
		if a != Engine {
			clear(acts[a])
			acts[a][0] = 1
		}
	}
	var total GroupStats
	for range 60 {
		st, err := w.Step(acts)
		if err != nil {
			t.Fatal(err)
		}
		g := st.Groups[1] // iot: 50% must run on an edge node
		total.Tasks += g.Tasks
		for i := range g.Where {
			total.Where[i] += g.Where[i]
		}
	}
	n := float64(total.Tasks)
	if sd := math.Sqrt(0.25 / n); math.Abs(total.Offloaded()-0.5) > 4*sd || total.Where[2] != 0 {
		t.Errorf("offloaded %.3f of %g tasks (%v), want 0.5 and none in the cloud", total.Offloaded(), n, total.Where)
	}
}

// TestDeterministicAndDrifting: a seed gives the same steps; the month's
// drift makes the vehicles' rate grow by its Growth (60%) from day 0 to
// day 30 at the same hour of the day, scaled by the trace's shape.
func TestDeterministicAndDrifting(t *testing.T) {
	a, b := world(t, 7, 0), world(t, 7, 0)
	var acts [Agents][]float64
	for i := range Agents {
		acts[i] = uniform(i)
	}
	for range 5 {
		sa, _ := a.Step(acts)
		sb, _ := b.Step(acts)
		if sa != sb {
			t.Fatalf("same seed, different steps: %+v and %+v", sa, sb)
		}
	}
	early, late := world(t, 1, 0), world(t, 1, 30*24*time.Hour)
	ratio := late.rate(2) / early.rate(2)
	shape := early.shape.At(30*24*time.Hour+16*time.Hour) / early.shape.At(16*time.Hour)
	if want := shape * (1 + 0.6*30/31); math.Abs(ratio-want) > 1e-9 {
		t.Errorf("vehicles' rate grew %.4fx, want %.4fx", ratio, want)
	}
}

// TestLogRoundTrip: the random logging policy's transitions read back
// with their sizes, and the devices' records have Table 1's measures.
func TestLogRoundTrip(t *testing.T) {
	w := world(t, 3, 0)
	var buf bytes.Buffer
	if err := Log(&buf, w, 6, RandomPolicy{Rand: rand.New(rand.NewPCG(1, 2))}); err != nil {
		t.Fatal(err)
	}
	tr, err := ReadLog(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) != 6*Agents || tr[Agents].Day <= tr[0].Day {
		t.Fatalf("%d transitions, days %v and %v", len(tr), tr[0].Day, tr[Agents].Day)
	}
	for _, x := range tr {
		if x.Agent == 1 && x.Outcome.Tasks == 0 {
			t.Errorf("a 10 s step of the IoT scene finished no task: %+v", x.Outcome)
		}
	}
	recs := w.DeviceRecords()
	if len(recs) == 0 || recs[0].MeanTime <= 0 || recs[0].Convergence < 0 {
		t.Errorf("device records %v", recs[:min(3, len(recs))])
	}
	if _, err := ReadLog(strings.NewReader(`{"agent": 9, "s": [], "a": [], "s2": []}`)); err == nil {
		t.Error("a bad transition: no error")
	}
	var acts [Agents][]float64
	for i := range Agents {
		acts[i] = uniform(i)
	}
	acts[2][3] = -1
	if _, err := w.Step(acts); err == nil || !strings.Contains(err.Error(), "agent 2: action[3]") {
		t.Errorf("negative weight: %v", err)
	}
}

// run drives a world for steps under the random policy (or a heuristic)
// and sums each scene's outcomes.
func run(t *testing.T, h Heuristic, steps int) [Scenes]GroupStats {
	t.Helper()
	w := world(t, 1, 12*time.Hour)
	if err := w.SetHeuristic(h); err != nil {
		t.Fatal(err)
	}
	return runPolicy(t, w, RandomPolicy{Rand: rand.New(rand.NewPCG(1, 1))}, steps)
}

// TestOnTimeOffloaded: the successful offloading ratio leaves out the
// offloaded tasks past their deadline, so it is the offloading ratio less
// their share, and under random weights, whose offloads often come too
// late, below it.
func TestOnTimeOffloaded(t *testing.T) {
	for g, x := range run(t, "", 60) {
		late := float64(x.LateOffloaded) / float64(x.Tasks)
		if d := x.Offloaded() - late - x.OnTimeOffloaded(); d > 1e-12 || d < -1e-12 || late <= 0 || x.LateOffloaded > x.Missed {
			t.Errorf("scene %d: offloaded %.3f, on time %.3f, late offloads %d of %d missed", g, x.Offloaded(), x.OnTimeOffloaded(), x.LateOffloaded, x.Missed)
		}
	}
}

// TestGreedyBeatsRandom: sending each task where it would finish first
// finishes every scene's tasks sooner on average than random weights.
func TestGreedyBeatsRandom(t *testing.T) {
	random, greedy := run(t, "", 120), run(t, Greedy, 120)
	for g := range Scenes {
		if greedy[g].MeanTime() >= random[g].MeanTime() {
			t.Errorf("scene %d: greedy %.3f s, random %.3f s", g, greedy[g].MeanTime(), random[g].MeanTime())
		}
	}
	if err := world(t, 1, 0).SetHeuristic("fastest"); err == nil {
		t.Error("unknown heuristic: no error")
	}
}

// TestStuckTasksCountMissed: tasks sent where they never run (scene 0's
// weights all on an edge node where the engine gives it no CPU) count as
// missed once their deadline passes, and their time keeps counting, so
// that a policy cannot hide tasks in a queue.
func TestStuckTasksCountMissed(t *testing.T) {
	w := world(t, 3, 12*time.Hour)
	var acts [Agents][]float64
	for a := range Agents {
		acts[a] = make([]float64, ActDim)
	}
	acts[0][1] = 1 // scene 0: all on edge node 0
	copy(acts[1], []float64{1, 1, 1, 1, 1, 1, 1})
	copy(acts[2], []float64{1, 1, 1, 1, 1, 1, 1})
	copy(acts[Engine], []float64{0, 1, 1}) // no share for scene 0
	var sum GroupStats
	steps := 30
	for range steps {
		st, err := w.Step(acts)
		if err != nil {
			t.Fatal(err)
		}
		sum.Add(st.Groups[0])
	}
	// 90% of scene 0's tasks may run away from the device; all of those are stuck.
	if r := sum.MissRatio(); r < 0.8 {
		t.Errorf("scene 0 missed %.3f of %d tasks, want >= 0.8 (stuck tasks counted)", r, sum.Tasks)
	}
	// The time of a stuck task keeps counting: the mean is well past the deadline.
	if m, dl := sum.MeanTime(), w.cfg.Groups[0].Deadline.Seconds(); m < 5*dl {
		t.Errorf("scene 0's mean time %.2f s, want >= %.1f s (stuck tasks' time counted)", m, 5*dl)
	}
	for _, tk := range w.live {
		if w.Now()-tk.arrived > w.cfg.Groups[tk.group].Deadline && !tk.late {
			t.Fatalf("a task of scene %d, %v old, past its deadline and not counted", tk.group, w.Now()-tk.arrived)
		}
	}
}

// TestSoftminLimitIsGreedy: at a vanishing temperature softmin sends every
// task where greedy does, on the same tasks (its draws have their own
// stream); hot, it spreads them away from greedy's choice and is slower.
func TestSoftminLimitIsGreedy(t *testing.T) {
	soft := func(temp float64) [Scenes]GroupStats {
		w := world(t, 1, 12*time.Hour)
		if err := w.SetHeuristic(Softmin); err != nil {
			t.Fatal(err)
		}
		if err := w.SetTemperature(temp); err != nil {
			t.Fatal(err)
		}
		return runPolicy(t, w, RandomPolicy{Rand: rand.New(rand.NewPCG(1, 1))}, 60)
	}
	greedy, cold, hot := run(t, Greedy, 60), soft(1e-9), soft(5)
	for g := range Scenes {
		if cold[g] != greedy[g] {
			t.Errorf("scene %d: softmin near 0 %+v, greedy %+v", g, cold[g], greedy[g])
		}
		if hot[g].MeanTime() <= greedy[g].MeanTime() {
			t.Errorf("scene %d: softmin at 5 %.3f s, greedy %.3f s: want slower", g, hot[g].MeanTime(), greedy[g].MeanTime())
		}
	}
	if err := world(t, 1, 0).SetTemperature(0); err == nil {
		t.Error("temperature 0: no error")
	}
}

// TestStaleViewHoldsUntilRefreshed: with a stale view the heuristic reads
// the queues as they were at the last refresh until Staleness has passed,
// then as they are.
func TestStaleViewHoldsUntilRefreshed(t *testing.T) {
	shape, err := WikipediaShape()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Default()
	cfg.Staleness = time.Second
	w, err := New(cfg, shape, 1, 12*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetHeuristic(Greedy); err != nil {
		t.Fatal(err)
	}
	w.jobs(targetCloud, 0) // the view at 0
	stale := false
	for ms := 50; ms < 1000; ms += 50 {
		w.k.RunUntil(time.Duration(ms) * time.Millisecond)
		seen, viewAt := w.jobs(targetCloud, 0), w.viewAt
		if viewAt != 0 {
			t.Fatalf("the view was refreshed at %v, before a second had passed", viewAt)
		}
		stale = stale || seen != w.cloud.Len()
	}
	if !stale {
		t.Error("the cloud's queue never moved away from the view in a second")
	}
	w.k.RunUntil(2100 * time.Millisecond)
	if w.viewAt < time.Second {
		t.Errorf("the view still dates from %v after 2.1 s", w.viewAt)
	}
	w.k.RunUntil(w.viewAt + time.Second)
	if seen := w.jobs(targetCloud, 0); seen != w.cloud.Len() || w.viewAt != w.k.Now() {
		t.Errorf("a second after the last refresh the view reads %d jobs (at %v), the cloud has %d", seen, w.viewAt, w.cloud.Len())
	}
	cfg.Staleness = -time.Second
	if _, err := New(cfg, shape, 1, 0); err == nil || !strings.Contains(err.Error(), "staleness") {
		t.Errorf("negative staleness: %v", err)
	}
}

// TestTrackedGreedy: on a fresh view greedy-tracked is greedy; on a view 2 s
// stale, counting what the platform itself sent since the refresh herds
// less than greedy does.
func TestTrackedGreedy(t *testing.T) {
	stale := func(h Heuristic, staleness time.Duration) [Scenes]GroupStats {
		shape, err := WikipediaShape()
		if err != nil {
			t.Fatal(err)
		}
		cfg := Default()
		cfg.Staleness = staleness
		w, err := New(cfg, shape, 1, 12*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.SetHeuristic(h); err != nil {
			t.Fatal(err)
		}
		return runPolicy(t, w, RandomPolicy{Rand: rand.New(rand.NewPCG(1, 1))}, 60)
	}
	if a, b := stale(Greedy, 0), stale(Tracked, 0); a != b {
		t.Errorf("on a fresh view: greedy %+v, greedy-tracked %+v", a, b)
	}
	greedy, tracked := stale(Greedy, 2*time.Second), stale(Tracked, 2*time.Second)
	var g, tr GroupStats
	for s := range Scenes {
		g.Add(greedy[s])
		tr.Add(tracked[s])
	}
	if tr.MeanTime() >= g.MeanTime() {
		t.Errorf("2 s stale: greedy-tracked %.3f s, greedy %.3f s: want faster", tr.MeanTime(), g.MeanTime())
	}
}

// greedyTask is a TaskPolicy that picks the candidate of the earliest
// estimate, as greedy does, and counts the tasks it hears of.
type greedyTask struct{ asked, finished int }

func (g *greedyTask) Choose(_ *TaskView, cands []Candidate) int {
	g.asked++
	best := 0
	for k, c := range cands {
		if c.Estimate < cands[best].Estimate {
			best = k
		}
	}
	return best
}

func (g *greedyTask) Finished(uint64, time.Duration, bool) { g.finished++ }

// TestTaskPolicyHook: a task policy that picks the earliest estimate
// routes every task as greedy does (the same outcomes on the same tasks),
// is asked only for tasks that may leave their device, and hears of every
// one that finished.
func TestTaskPolicyHook(t *testing.T) {
	w := world(t, 1, 12*time.Hour)
	p := &greedyTask{}
	w.SetTaskPolicy(p)
	got := runPolicy(t, w, RandomPolicy{Rand: rand.New(rand.NewPCG(1, 1))}, 60)
	if want := run(t, Greedy, 60); got != want {
		t.Errorf("through the hook %+v, greedy %+v", got, want)
	}
	var tasks int64
	for _, g := range got {
		tasks += g.Tasks
	}
	if p.asked == 0 || int64(p.asked) >= tasks || p.finished > p.asked || p.finished < p.asked*9/10 {
		t.Errorf("asked %d times, heard of %d finished, of %d tasks", p.asked, p.finished, tasks)
	}
}

// TestTaskLog: logging every third task changes nothing the world does;
// the records round-trip through JSON lines, tasks are seen uploading to
// remote targets only, greedy's choice is the
// candidate of the earliest estimate, and a local task's time is its
// backlog plus its work at the device's speed.
func TestTaskLog(t *testing.T) {
	plain := run(t, Greedy, 60)
	w := world(t, 1, 12*time.Hour)
	if err := w.SetHeuristic(Greedy); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := NewTaskWriter(&buf)
	w.LogTasks(3, tw.Write)
	if got := runPolicy(t, w, RandomPolicy{Rand: rand.New(rand.NewPCG(1, 1))}, 60); got != plain {
		t.Errorf("logging tasks changed the world: %+v, without %+v", got, plain)
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadTasks(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var tasks int64
	for _, g := range plain {
		tasks += g.Tasks
	}
	if n := int64(len(recs)); n < tasks/4 || n > tasks/2 {
		t.Fatalf("%d records of %d tasks, want about a third", n, tasks)
	}
	cfg := Default()
	inbound := 0
	for i, r := range recs {
		for _, c := range r.Cands {
			if c.Inbound < 0 || (c.Target == 0 && c.Inbound != 0) {
				t.Fatalf("record %d: %d tasks seen uploading to target %d", i, c.Inbound, c.Target)
			}
			inbound += c.Inbound
		}
		best := 0
		for k, c := range r.Cands {
			if c.Estimate < r.Cands[best].Estimate {
				best = k
			}
		}
		if r.Pick() != best {
			t.Fatalf("record %d: picked %d, earliest estimate %d: %+v", i, r.Pick(), best, r)
		}
		if r.Target == 0 {
			want := r.Backlog + r.Work/cfg.Groups[r.Scene].DeviceSpeed
			if math.Abs(r.Took-want) > 1e-6 || r.Upload != 0 {
				t.Fatalf("record %d: local task took %g s, upload %g: want %g and 0", i, r.Took, r.Upload, want)
			}
		} else if !(r.Upload > 0 && r.Upload < r.Took) {
			t.Fatalf("record %d: offloaded, upload %g s of %g", i, r.Upload, r.Took)
		}
	}
	if inbound == 0 {
		t.Error("no task was ever seen uploading")
	}
	if _, err := ReadTasks(strings.NewReader(`{"scene":0,"deadline_s":1,"target":3,"cands":[{"target":0}]}`)); err == nil {
		t.Error("a target outside its candidates was read")
	}
}
