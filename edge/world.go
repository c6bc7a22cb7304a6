package edge

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/sim"
	"github.com/shoal-project/shoal/sim/ps"
)

// Agents are the scenes' agents (0..Scenes-1) and the platform's engine
// (Engine), whose action is the scenes' CPU shares of the edge nodes.
const (
	Engine = Scenes
	Agents = Scenes + 1
	// ObsDim is an agent's observation length and ActDim the padded
	// action length (section 4.1: 52, and 7 or 3 padded to 10).
	ObsDim = 52
	ActDim = 10
)

// Where a task runs.
const (
	targetLocal = 0
	targetCloud = Targets - 1
)

// task is one task in flight.
type task struct {
	w             *World
	group, device int
	target        int
	arrived       time.Duration
	work          float64 // Gcycles
	sizeMB        float64
	ev            sim.Event     // its transfer or local completion
	ps            ps.Job[*task] // its place at an edge node or the cloud
	live          int           // its index in World.live
	// late is set once the task is counted missed while still running,
	// and counted is how much of its time its scene's steps have counted.
	late    bool
	counted time.Duration
	asked   bool        // its target came from the task policy
	rec     *TaskRecord // its record, when it is one LogTasks keeps
}

// Handle implements sim.Handler: a transfer ended or a local run finished.
func (t *task) Handle(now time.Duration, arg int) { t.w.transferred(t, arg) }

// World is the simulated edge-cloud system. It is not safe for concurrent
// use.
type World struct {
	cfg   Config
	k     sim.Kernel
	start time.Duration // where the world's time 0 is in the month
	shape *Shape

	arrive  [Scenes]sim.Event
	rngs    [Scenes]*rand.Rand
	weights [Scenes][Targets]float64
	shares  [Scenes]float64
	edge    [Edges][Scenes]ps.Scheduled[*task] // each scene's container on each edge node
	cloud   ps.Scheduled[*task]
	devBusy [Scenes][]time.Duration // each device's local CPU is free from then on

	step    StepStats // the current step's outcomes
	last    StepStats // the last step's
	devices [Scenes][]DeviceStats
	lastAct [Agents][ActDim]float64
	done    []*task
	free    []*task // finished tasks, reused by arrivals
	live    []*task // tasks arrived and not finished
	tasks   uint64  // tasks arrived so far

	heuristic Heuristic // when set, tasks follow it instead of the weights
	// view is the queue lengths the heuristic reads (Config.Staleness):
	// each edge node's scenes' jobs and the cloud's (last), as of viewAt.
	view [Edges*Scenes + 1]int
	sent [Edges*Scenes + 1]int // Tracked: the tasks sent since the refresh
	// uploading is the tasks uploading to each queue, viewUp as of viewAt.
	uploading, viewUp [Edges*Scenes + 1]int
	viewAt            time.Duration
	viewOK            bool
	// temp is Softmin's temperature, a share of the best estimate, and pick
	// its draws' stream (not the scenes', so that the tasks are the same
	// whatever the rule).
	temp float64
	pick *rand.Rand
	// taskPolicy, when set, chooses every task's target (SetTaskPolicy).
	taskPolicy TaskPolicy
	cands      []Candidate
	tv         TaskView
	// logTask hears every logEvery-th task's record (LogTasks).
	logEvery int
	logTask  func(*TaskRecord)
}

// New builds a world whose time 0 is start within the month, seeded.
func New(cfg Config, shape *Shape, seed uint64, start time.Duration) (*World, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &World{cfg: cfg, start: start, shape: shape}
	streams := sim.NewStreams(seed)
	w.pick = streams.Stream("edge/softmin")
	for g := range Scenes {
		w.rngs[g] = streams.Stream(fmt.Sprintf("edge/%s", cfg.Groups[g].Name))
		w.devBusy[g] = make([]time.Duration, cfg.Groups[g].Devices)
		w.devices[g] = make([]DeviceStats, cfg.Groups[g].Devices)
		w.shares[g] = 1.0 / Scenes
		for t := range w.weights[g] {
			w.weights[g][t] = 1
		}
		w.arrive[g] = sim.Event{Handler: arrival{w, g}}
		w.scheduleArrival(g)
	}
	w.cloud = ps.Scheduled[*task]{Queue: ps.New[*task](cfg.Cloud.Cores, cfg.Cloud.Speed, 0), Event: sim.Event{Handler: server{w, -1, -1}}}
	for e := range Edges {
		for g := range Scenes {
			w.edge[e][g] = ps.Scheduled[*task]{
				Queue: ps.New[*task](w.shares[g]*cfg.EdgeNodes[e].Cores, cfg.EdgeNodes[e].Speed, 0),
				Event: sim.Event{Handler: server{w, e, g}},
			}
		}
	}
	return w, nil
}

// Now is the world's time.
func (w *World) Now() time.Duration { return w.k.Now() }

// MonthTime is where the world is in the month.
func (w *World) MonthTime() time.Duration { return w.start + w.k.Now() }

// rate is group g's arrival rate now: its base rate times the trace's
// shape at its users' time of day, times its growth over the month.
func (w *World) rate(g int) float64 {
	if h := w.cfg.Hourly; h != nil {
		return h.Rate[g][w.hourOfDay()]
	}
	gr := &w.cfg.Groups[g]
	m := w.MonthTime()
	frac := float64(m%w.cfg.Month) / float64(w.cfg.Month)
	return gr.Rate * w.shape.At(m+gr.Phase) * (1 + gr.Growth*frac)
}

func (w *World) scheduleArrival(g int) {
	r := w.rate(g)
	if r <= 0 {
		return
	}
	w.k.After(&w.arrive[g], time.Duration(w.rngs[g].ExpFloat64()/r*1e9)+1)
}

type arrival struct {
	w *World
	g int
}

// Handle implements sim.Handler: a task of group g arrives.
func (a arrival) Handle(now time.Duration, _ int) {
	w, g := a.w, a.g
	gr := &w.cfg.Groups[g]
	rng := w.rngs[g]
	frac := float64(w.MonthTime()%w.cfg.Month) / float64(w.cfg.Month)
	t := w.newTask()
	t.group, t.device, t.arrived = g, rng.IntN(gr.Devices), now
	t.late, t.counted, t.live = false, 0, len(w.live)
	w.tasks++
	t.ps.Seq = w.tasks // ties between equal finish tags go to the earlier task
	w.live = append(w.live, t)
	work := gr.WorkG * (1 + gr.WorkGrowth*frac)
	if h := w.cfg.Hourly; h != nil {
		work = h.WorkG[g][w.hourOfDay()]
	}
	t.work, t.sizeMB = rng.ExpFloat64()*work, rng.ExpFloat64()*gr.SizeMB
	pref := drawPrefer(gr.Prefer, rng)
	t.asked = false
	if w.logEvery > 0 {
		lo, hi := allowed(pref)
		w.recordArrival(t, lo, hi)
	}
	switch {
	case w.taskPolicy != nil && pref == 0:
		t.target = targetLocal
	case w.taskPolicy != nil:
		lo, hi := allowed(pref)
		t.target = w.ask(t, lo, hi)
	case w.heuristic != "":
		t.target = w.decide(t, pref)
	default:
		t.target = w.choose(g, pref, rng)
	}
	w.dispatch(t)
	w.scheduleArrival(g)
}

// newTask takes a finished task to reuse, or makes one.
func (w *World) newTask() *task {
	if n := len(w.free); n > 0 {
		t := w.free[n-1]
		w.free = w.free[:n-1]
		return t
	}
	t := &task{w: w}
	t.ev.Handler = t
	t.ps.Owner = t
	return t
}

// drawPrefer draws a task's preference: 0 local only, 1 an edge node
// only, 2 anywhere.
func drawPrefer(p [3]float64, rng *rand.Rand) int {
	u := rng.Float64()
	for i, x := range p[:2] {
		if u -= x; u < 0 {
			return i
		}
	}
	return 2
}

// allowed is the targets [lo, hi) a task of preference pref may run at.
func allowed(pref int) (lo, hi int) {
	switch pref {
	case 0:
		return targetLocal, targetLocal + 1
	case 1:
		return 1, 1 + Edges
	}
	return 0, Targets
}

// choose draws the target of a task of group g with preference pref from
// the group's offloading weights.
func (w *World) choose(g, pref int, rng *rand.Rand) int {
	if pref == 0 {
		return targetLocal
	}
	lo, hi := allowed(pref)
	ws := w.weights[g][lo:hi]
	total := 0.0
	for _, x := range ws {
		total += x
	}
	if total <= 0 {
		return lo + rng.IntN(hi-lo)
	}
	u := rng.Float64() * total
	for i, x := range ws {
		if u -= x; u < 0 {
			return lo + i
		}
	}
	return hi - 1
}

// Transfer stages of a task (the arg of its event).
const (
	stageLocalDone = iota
	stageUploaded
)

// dispatch starts a task where it runs.
func (w *World) dispatch(t *task) {
	gr := &w.cfg.Groups[t.group]
	if t.target == targetLocal {
		now := w.k.Now()
		start := max(now, w.devBusy[t.group][t.device])
		finish := start + time.Duration(t.work/gr.DeviceSpeed*1e9)
		w.devBusy[t.group][t.device] = finish
		t.ev.Arg = stageLocalDone
		w.k.Schedule(&t.ev, finish)
		return
	}
	t.ev.Arg = stageUploaded
	w.uploading[viewIndex(t.target, t.group)]++
	w.k.After(&t.ev, w.upload(t))
}

// upload is the time to send a task's input to where it runs.
func (w *World) upload(t *task) time.Duration {
	bits := t.sizeMB * 8
	if t.target == targetCloud {
		l, b := w.cfg.Links[0], w.cfg.Backhaul
		bw := math.Min(w.bandwidth(0), b.Bandwidth)
		return l.Latency + b.Latency + time.Duration(bits/bw*1e9)
	}
	e := t.target - 1
	return w.cfg.Links[e].Latency + time.Duration(bits/w.bandwidth(e)*1e9)
}

// downlink is the time to return a (small) result.
func (w *World) downlink(t *task) time.Duration {
	if t.target == targetCloud {
		return w.cfg.Links[0].Latency + w.cfg.Backhaul.Latency
	}
	return w.cfg.Links[t.target-1].Latency
}

// bandwidth is edge link e's bandwidth now: it drops by up to 40% when
// the broadband scene is at its busiest (shared radio).
func (w *World) bandwidth(e int) float64 {
	if h := w.cfg.Hourly; h != nil {
		return h.Bandwidth[e][w.hourOfDay()]
	}
	s := w.shape.At(w.MonthTime() + w.cfg.Groups[0].Phase)
	return w.cfg.Links[e].Bandwidth * math.Max(0.3, 1.2-0.4*s)
}

func (w *World) transferred(t *task, stage int) {
	switch stage {
	case stageLocalDone:
		w.finish(t, w.k.Now())
	case stageUploaded:
		w.uploading[viewIndex(t.target, t.group)]--
		if t.rec != nil {
			t.rec.Upload = (w.k.Now() - t.arrived).Seconds()
		}
		if t.target == targetCloud {
			w.cloud.Admit(&w.k, &t.ps, t.work)
		} else {
			w.edge[t.target-1][t.group].Admit(&w.k, &t.ps, t.work)
		}
	}
}

type server struct {
	w           *World
	edge, group int // -1, -1: the cloud
}

// Handle implements sim.Handler: jobs finished at a server.
func (s server) Handle(now time.Duration, _ int) {
	w := s.w
	q := &w.cloud
	if s.edge >= 0 {
		q = &w.edge[s.edge][s.group]
	}
	w.done = w.done[:0]
	for t, ok := q.PopDone(now); ok; t, ok = q.PopDone(now) {
		w.done = append(w.done, t)
	}
	q.Reschedule(&w.k)
	for _, t := range w.done {
		w.finish(t, now+w.downlink(t))
	}
}

// finish records a task done at time at. A task already counted missed
// (sweepLate) adds only the time not yet counted.
func (w *World) finish(t *task, at time.Duration) {
	d := at - t.arrived
	if t.late {
		w.step.Groups[t.group].TimeSum += (d - t.counted).Seconds()
	} else {
		w.count(t, d)
	}
	w.devices[t.group][t.device].record(d, t.target != targetLocal, d > w.cfg.Groups[t.group].Deadline, t.sizeMB, w.k.Now())
	if t.rec != nil {
		w.recordEnd(t, d)
	}
	if t.asked && w.taskPolicy != nil {
		w.taskPolicy.Finished(t.ps.Seq, d, d > w.cfg.Groups[t.group].Deadline)
	}
	last := w.live[len(w.live)-1]
	last.live, w.live[t.live] = t.live, last
	w.live = w.live[:len(w.live)-1]
	w.free = append(w.free, t)
}

// count adds a task of time d to its scene's step.
func (w *World) count(t *task, d time.Duration) {
	st := &w.step.Groups[t.group]
	late := d > w.cfg.Groups[t.group].Deadline
	st.Tasks++
	st.TimeSum += d.Seconds()
	kind := 0
	switch {
	case t.target == targetCloud:
		kind = 2
	case t.target > targetLocal:
		kind = 1
	}
	st.Where[kind]++
	if late {
		st.Missed++
		if kind != 0 {
			st.LateOffloaded++
		}
	}
	t.counted = d
}

// sweepLate counts, at a step's end, the tasks still running past their
// deadline: missed in the step their deadline passed, with their time so
// far, and their time since in each later step, so that a policy cannot
// hide tasks by leaving them queued where they never finish.
func (w *World) sweepLate() {
	now := w.k.Now()
	for _, t := range w.live {
		age := now - t.arrived
		switch {
		case t.late:
			w.step.Groups[t.group].TimeSum += (age - t.counted).Seconds()
			t.counted = age
		case age > w.cfg.Groups[t.group].Deadline:
			t.late = true
			w.count(t, age)
		}
	}
}

// hourOfDay is the hour of the day the world is in.
func (w *World) hourOfDay() int {
	return int(w.MonthTime()%(24*time.Hour)) / int(time.Hour)
}
