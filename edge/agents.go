package edge

import (
	"fmt"
	"math"
	"time"
)

// Step puts the agents' actions in force, runs one step and returns its
// outcomes. A scene's action is its offloading weights (the first Targets
// values: local, each edge node, the cloud; non-negative, all zero means
// uniform); the engine's is the scenes' CPU shares of every edge node
// (the first Scenes values, non-negative, normalised; all zero means
// equal). The rest of each ActDim vector is padding.
func (w *World) Step(actions [Agents][]float64) (StepStats, error) {
	for a, act := range actions {
		if len(act) < ActDim {
			return StepStats{}, fmt.Errorf("edge: agent %d: action of %d values, want %d", a, len(act), ActDim)
		}
		for i, x := range act[:ActDim] {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return StepStats{}, fmt.Errorf("edge: agent %d: action[%d] is %g, want a finite value >= 0", a, i, x)
			}
		}
		copy(w.lastAct[a][:], act[:ActDim])
	}
	for g := range Scenes {
		copy(w.weights[g][:], actions[g][:Targets])
	}
	w.setShares(actions[Engine][:Scenes])
	w.step = StepStats{}
	w.k.RunUntil(w.k.Now() + w.cfg.Step)
	w.sweepLate()
	w.last = w.step
	return w.step, nil
}

// setShares sets the scenes' CPU shares of every edge node.
func (w *World) setShares(s []float64) {
	total := s[0] + s[1] + s[2]
	for g := range Scenes {
		w.shares[g] = 1.0 / Scenes
		if total > 0 {
			w.shares[g] = s[g] / total
		}
		for e := range Edges {
			w.edge[e][g].Resize(&w.k, w.shares[g]*w.cfg.EdgeNodes[e].Cores, w.cfg.EdgeNodes[e].Speed)
		}
	}
}

// Observe writes agent's observation (ObsDim values) to dst. A scene sees
// the time (hour of day and day of week as sines and cosines, the share of
// the month gone), its own tasks (rate, mean size, work and deadline, the
// preference mix), its last step (mean time, offloading and miss ratios,
// where its tasks ran), the edge nodes (its own jobs there and their
// utilisation), the cloud, the links, the shares, every scene's rate, its
// own last action, and its devices' local backlog. The engine sees the
// time, every scene's rate and last step, the nodes, the cloud, the links
// and the shares.
func (w *World) Observe(agent int, dst []float64) []float64 {
	dst = append(dst[:0], w.timeFeatures()...)
	if agent == Engine {
		for g := range Scenes {
			st := w.last.Groups[g]
			dst = append(dst, w.rate(g)/100, st.MeanTime(), st.Offloaded(), st.MissRatio())
		}
		dst = w.nodes(dst, -1)
	} else {
		g := agent
		gr := &w.cfg.Groups[g]
		st := w.last.Groups[g]
		n := math.Max(float64(st.Tasks), 1)
		dst = append(dst, w.rate(g)/100, gr.SizeMB, gr.WorkG, gr.Deadline.Seconds(), gr.Prefer[0], gr.Prefer[1], gr.Prefer[2],
			st.MeanTime(), st.Offloaded(), st.MissRatio(), float64(st.Where[0])/n, float64(st.Where[1])/n, float64(st.Where[2])/n)
		dst = w.nodes(dst, g)
		for o := range Scenes {
			dst = append(dst, w.rate(o)/100)
		}
		dst = append(dst, w.lastAct[g][:Targets]...)
		dst = append(dst, w.backlog(g))
	}
	for len(dst) < ObsDim {
		dst = append(dst, 0)
	}
	return dst[:ObsDim]
}

func (w *World) timeFeatures() []float64 {
	m := w.MonthTime()
	day := 2 * math.Pi * float64(m%(24*time.Hour)) / float64(24*time.Hour)
	week := 2 * math.Pi * float64(m%(7*24*time.Hour)) / float64(7*24*time.Hour)
	return []float64{math.Sin(day), math.Cos(day), math.Sin(week), math.Cos(week), float64(m%w.cfg.Month) / float64(w.cfg.Month)}
}

// nodes appends each edge node's jobs (of scene g, or all for g < 0) and
// utilisation, the cloud's, the links' bandwidths (per 100 Mbit/s), the
// backhaul latency (s) and the shares.
func (w *World) nodes(dst []float64, g int) []float64 {
	for e := range Edges {
		jobs, busy := 0, 0.0
		for s := range Scenes {
			q := &w.edge[e][s]
			if g < 0 || s == g {
				jobs += q.Len()
			}
			busy += min(q.Servers(), float64(q.Len()))
		}
		dst = append(dst, float64(jobs), busy/w.cfg.EdgeNodes[e].Cores)
	}
	dst = append(dst, float64(w.cloud.Len()), min(w.cloud.Servers(), float64(w.cloud.Len()))/w.cfg.Cloud.Cores)
	for e := range Edges {
		dst = append(dst, w.bandwidth(e)/100)
	}
	dst = append(dst, w.cfg.Backhaul.Latency.Seconds())
	return append(dst, w.shares[:]...)
}

// backlog is the mean time until a device of scene g is free, seconds.
func (w *World) backlog(g int) float64 {
	now, sum := w.k.Now(), 0.0
	for _, b := range w.devBusy[g] {
		sum += max(b-now, 0).Seconds()
	}
	return sum / float64(len(w.devBusy[g]))
}
