package edge

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Heuristic is a per-task offloading rule an edge platform runs today, used
// instead of the agents' weights (the engine's shares still apply).
type Heuristic string

// The heuristics.
const (
	// Greedy sends each task where its estimated completion is earliest:
	// locally after the device's backlog, or after the upload on an edge
	// node or in the cloud with processor sharing among the jobs there.
	Greedy Heuristic = "greedy"
	// Threshold runs a task locally while its device's backlog stays
	// under half the task's deadline, and otherwise on the edge node with
	// the lowest link latency.
	Threshold Heuristic = "threshold"
	// WeightedGreedy is Greedy biased by the scene's weights: a target's
	// estimated completion is divided by its weight over the largest
	// (at least a tenth), so equal weights are Greedy exactly and an agent
	// adjusts the per-task rule instead of replacing it.
	WeightedGreedy Heuristic = "weighted-greedy"
	// Softmin draws each task's target with a probability that falls
	// exponentially with its estimated completion over the best one's:
	// exp(-(estimate/best - 1)/temperature) (SetTemperature, default 0.2).
	// Where every device reads the same stale view, greedy sends them all
	// to the same target (herding); softmin spreads them.
	Softmin Heuristic = "softmin"
	// Tracked is Greedy whose stale view also counts the tasks the
	// platform itself sent to each queue since the view's refresh: what a
	// central dispatcher knows (join-the-shortest-queue with local
	// updates). With a fresh view it is Greedy.
	Tracked Heuristic = "greedy-tracked"
)

// Rules name what the agents' weights do: "weights", the paper's (each
// task drawn in proportion to them), or "weighted-greedy" (they bias the
// greedy rule). A policy learns under one rule and runs under it.
var Rules = []string{"weights", string(WeightedGreedy)}

// DefaultRule is the rule Shoal's logs, policies and evaluation use unless
// told otherwise: an operator's platform runs the greedy heuristic, and a
// learned policy that only biases it cannot send tasks where they never
// finish.
const DefaultRule = WeightedGreedy

// ParseRule reads a rule's name ("weights" is the empty heuristic).
func ParseRule(name string) (Heuristic, error) {
	switch name {
	case "weights", "":
		return "", nil
	case string(WeightedGreedy):
		return WeightedGreedy, nil
	}
	return "", fmt.Errorf("edge: unknown rule %q (want %v)", name, Rules)
}

// RuleName names rule h as ParseRule reads it.
func RuleName(h Heuristic) string {
	if h == "" {
		return "weights"
	}
	return string(h)
}

// SetHeuristic makes every scene's tasks follow h ("" for the agents'
// weights again).
func (w *World) SetHeuristic(h Heuristic) error {
	switch h {
	case "", Greedy, Threshold, WeightedGreedy, Softmin, Tracked:
		w.heuristic = h
		return nil
	}
	return fmt.Errorf("edge: unknown heuristic %q (want greedy, greedy-tracked, threshold, weighted-greedy or softmin)", h)
}

// SetTemperature sets Softmin's temperature (> 0).
func (w *World) SetTemperature(x float64) error {
	if !(x > 0) || math.IsInf(x, 0) {
		return fmt.Errorf("edge: softmin temperature must be positive and finite, got %g", x)
	}
	w.temp = x
	return nil
}

// decide applies the heuristic to a task of preference pref.
func (w *World) decide(t *task, pref int) int {
	if pref == 0 {
		return targetLocal
	}
	gr := &w.cfg.Groups[t.group]
	if w.heuristic == Threshold {
		backlog := max(w.devBusy[t.group][t.device]-w.k.Now(), 0)
		if pref == 2 && backlog < gr.Deadline/2 {
			return targetLocal
		}
		return w.nearestEdge()
	}
	lo, hi := allowed(pref)
	if w.heuristic == Softmin {
		return w.softmin(t, lo, hi)
	}
	ws := &w.weights[t.group]
	top := 0.0
	if w.heuristic == WeightedGreedy {
		top = slices.Max(ws[:])
	}
	best, bestAt := lo, math.Inf(1)
	for target := lo; target < hi; target++ {
		at := float64(w.estimate(t, target))
		if top > 0 {
			at /= max(ws[target]/top, 0.1)
		}
		if at < bestAt {
			best, bestAt = target, at
		}
	}
	if w.heuristic == Tracked && best != targetLocal && w.cfg.Staleness > 0 {
		w.sent[viewIndex(best, t.group)]++
	}
	return best
}

// nearestEdge is the target of the edge node with the lowest link latency.
func (w *World) nearestEdge() int {
	best := 0
	for e := 1; e < Edges; e++ {
		if w.cfg.Links[e].Latency < w.cfg.Links[best].Latency {
			best = e
		}
	}
	return 1 + best
}

// estimate is when a task would finish at target, from now.
func (w *World) estimate(t *task, target int) time.Duration {
	now := w.k.Now()
	if target == targetLocal {
		gr := &w.cfg.Groups[t.group]
		return max(w.devBusy[t.group][t.device]-now, 0) + time.Duration(t.work/gr.DeviceSpeed*1e9)
	}
	saved := t.target
	t.target = target
	up, down := w.upload(t), w.downlink(t)
	t.target = saved
	q := &w.cloud
	if target != targetCloud {
		q = &w.edge[target-1][t.group]
	}
	jobs := float64(w.jobs(target, t.group) + 1)
	rate := q.Speed() * min(1, q.Servers()/jobs)
	if rate <= 0 {
		return time.Duration(1 << 62)
	}
	return up + time.Duration(t.work/rate*1e9) + down
}

// jobs is the number of jobs the heuristic sees at a remote target for
// scene g: the queue's now, or as of the last refresh of a stale view.
func (w *World) jobs(target, g int) int {
	if w.cfg.Staleness <= 0 {
		q := &w.cloud
		if target != targetCloud {
			q = &w.edge[target-1][g]
		}
		return q.Len()
	}
	w.refreshView()
	i := viewIndex(target, g)
	if w.heuristic == Tracked {
		return w.view[i] + w.sent[i]
	}
	return w.view[i]
}

// inbound is the number of tasks uploading to a remote target's queue for
// scene g, as the platform sees them: now, or as of the last refresh of a
// stale view.
func (w *World) inbound(target, g int) int {
	i := viewIndex(target, g)
	if w.cfg.Staleness <= 0 {
		return w.uploading[i]
	}
	w.refreshView()
	return w.viewUp[i]
}

// refreshView takes a new view of the queues when the last is Staleness
// old.
func (w *World) refreshView() {
	if now := w.k.Now(); !w.viewOK || now-w.viewAt >= w.cfg.Staleness {
		for e := range Edges {
			for s := range Scenes {
				w.view[e*Scenes+s] = w.edge[e][s].Len()
			}
		}
		w.view[Edges*Scenes] = w.cloud.Len()
		w.viewUp = w.uploading
		clear(w.sent[:])
		w.viewAt, w.viewOK = now, true
	}
}

// viewIndex is where a remote target's queue for scene g is in the view.
func viewIndex(target, g int) int {
	if target == targetCloud {
		return Edges * Scenes
	}
	return (target-1)*Scenes + g
}

// softmin draws a target in [lo, hi) for task t (Softmin).
func (w *World) softmin(t *task, lo, hi int) int {
	var at [Targets]float64
	best := math.Inf(1)
	for target := lo; target < hi; target++ {
		at[target] = float64(w.estimate(t, target))
		best = min(best, at[target])
	}
	temp := w.temp
	if temp <= 0 {
		temp = 0.2
	}
	total := 0.0
	for target := lo; target < hi; target++ {
		at[target] = math.Exp(-(at[target]/best - 1) / temp)
		total += at[target]
	}
	u := w.pick.Float64() * total
	for target := lo; target < hi; target++ {
		if u -= at[target]; u < 0 {
			return target
		}
	}
	return hi - 1
}
