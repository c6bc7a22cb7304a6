package edge

import "time"

// Candidate is a target a task may run at, as the platform's view gives
// it: its estimated completion (the heuristics' estimate), the jobs seen
// there and the tasks seen uploading to it (0 for local execution), which
// the estimate leaves out.
type Candidate struct {
	Target   int
	Estimate time.Duration
	Jobs     int
	Inbound  int
}

// TaskView is what a per-task policy knows of a task.
type TaskView struct {
	ID       uint64
	Scene    int
	Work     float64 // Gcycles
	SizeMB   float64
	Deadline time.Duration
	Backlog  time.Duration // its device's local backlog
	Arrived  time.Duration // world time
}

// A TaskPolicy chooses each task's target among its candidates (a learned
// per-task rule, beyond the heuristics), and hears how each task it chose
// for ended. Tasks that must run locally are not asked.
type TaskPolicy interface {
	Choose(t *TaskView, cands []Candidate) int
	Finished(id uint64, took time.Duration, missed bool)
}

// SetTaskPolicy makes p choose every task's target (nil: the heuristic or
// the weights again).
func (w *World) SetTaskPolicy(p TaskPolicy) { w.taskPolicy = p }

// ask lets the task policy choose among the targets in [lo, hi).
func (w *World) ask(t *task, lo, hi int) int {
	gr := &w.cfg.Groups[t.group]
	w.cands = w.cands[:0]
	for target := lo; target < hi; target++ {
		jobs, in := 0, 0
		if target != targetLocal {
			jobs, in = w.jobs(target, t.group), w.inbound(target, t.group)
		}
		w.cands = append(w.cands, Candidate{Target: target, Estimate: w.estimate(t, target), Jobs: jobs, Inbound: in})
	}
	w.tv = TaskView{ID: t.ps.Seq, Scene: t.group, Work: t.work, SizeMB: t.sizeMB, Deadline: gr.Deadline,
		Backlog: max(w.devBusy[t.group][t.device]-w.k.Now(), 0), Arrived: t.arrived}
	k := w.taskPolicy.Choose(&w.tv, w.cands)
	t.asked = true
	return w.cands[min(max(k, 0), len(w.cands)-1)].Target
}
