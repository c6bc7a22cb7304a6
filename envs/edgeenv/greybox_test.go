package edgeenv

import (
	"bytes"
	"io"
	"math"
	"testing"
	"time"

	"github.com/shoal-project/shoal/edge"
)

// taskLog logs l's windows of cfg under the default mix and returns the
// transitions and the task records.
func taskLog(t *testing.T, cfg edge.Config, l Logging) ([]edge.Transition, []edge.TaskRecord) {
	t.Helper()
	mix, err := edge.ParseMix(edge.DefaultMix)
	if err != nil {
		t.Fatal(err)
	}
	l.Engine, l.Rule = mix, edge.DefaultRule
	var tr, tasks bytes.Buffer
	if err := Log(cfg, l, &tr, io.Discard, &tasks); err != nil {
		t.Fatal(err)
	}
	log, err := edge.ReadLog(&tr)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := edge.ReadTasks(&tasks)
	if err != nil {
		t.Fatal(err)
	}
	return log, recs
}

// TestGreyBoxRecoversTheWorld: fitted to two logged hours of task records,
// the grey box's first member has the world's devices, and its sizes,
// preferences and device speeds, each hour's arrival rates and each
// link's bandwidth close to the world's own (the trace's curve averaged
// over the hour); the bootstrap members differ from it.
func TestGreyBoxRecoversTheWorld(t *testing.T) {
	cfg := edge.Default()
	_, recs := taskLog(t, cfg, Logging{Seed: 3, Days: []float64{0}, From: 8 * time.Hour, Window: 2 * time.Hour})
	g, err := LearnGreyBox(cfg, recs, DefaultGreyBox())
	if err != nil {
		t.Fatal(err)
	}
	shape, err := edge.WikipediaShape()
	if err != nil {
		t.Fatal(err)
	}
	hourMean := func(f func(time.Duration) float64, hour int) float64 {
		s := 0.0
		for m := range 60 {
			s += f(time.Duration(hour)*time.Hour + time.Duration(m)*time.Minute + 30*time.Second)
		}
		return s / 60
	}
	fit := g.Members[0]
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol*math.Abs(want) {
			t.Errorf("%s: fitted %.4g, the world's %.4g (tolerance %.0f%%)", what, got, want, 100*tol)
		}
	}
	for s, gr := range cfg.Groups {
		f := fit.Groups[s]
		if f.Devices != gr.Devices {
			t.Errorf("%s: %d devices fitted, %d in the world", gr.Name, f.Devices, gr.Devices)
		}
		near(gr.Name+" size", f.SizeMB, gr.SizeMB, 0.05)
		near(gr.Name+" device speed", f.DeviceSpeed, gr.DeviceSpeed, 0.01)
		for k := range 3 {
			if math.Abs(f.Prefer[k]-gr.Prefer[k]) > 0.03 {
				t.Errorf("%s: preference %d fitted %.3f, the world's %.3f", gr.Name, k, f.Prefer[k], gr.Prefer[k])
			}
		}
		for _, hour := range []int{8, 9} {
			want := hourMean(func(m time.Duration) float64 { return gr.Rate * shape.At(m+gr.Phase) }, hour)
			near(gr.Name+" rate at "+time.Duration(hour*int(time.Hour)).String(), fit.Hourly.Rate[s][hour], want, 0.1)
			near(gr.Name+" work", fit.Hourly.WorkG[s][hour], gr.WorkG, 0.1)
		}
	}
	for e, l := range cfg.Links {
		want := hourMean(func(m time.Duration) float64 {
			return l.Bandwidth * math.Max(0.3, 1.2-0.4*shape.At(m+cfg.Groups[0].Phase))
		}, 9)
		near("link bandwidth", fit.Hourly.Bandwidth[e][9], want, 0.03)
	}
	if len(g.Members) != 4 || *g.Members[1].Hourly == *fit.Hourly {
		t.Errorf("%d members, the bootstrap's first the same as the fit", len(g.Members))
	}
	if _, err := LearnGreyBox(cfg, nil, DefaultGreyBox()); err == nil {
		t.Error("no records: no error")
	}
}

// TestGreyBoxFidelity: replaying the logged actions of a held-out hour (one
// it was fitted to, logged again with another seed), the grey box's step
// outcomes are close to the log's (KL under 0.1 per measure),
// and closer than those of a grey box told the tasks are twice as large.
func TestGreyBoxFidelity(t *testing.T) {
	cfg := edge.Default()
	_, recs := taskLog(t, cfg, Logging{Seed: 3, Days: []float64{0}, From: 8 * time.Hour, Window: 2 * time.Hour})
	held, _ := taskLog(t, cfg, Logging{Seed: 50, Days: []float64{0}, From: 9 * time.Hour, Window: time.Hour})
	gc := DefaultGreyBox()
	gc.Members = 1
	g, err := LearnGreyBox(cfg, recs, gc)
	if err != nil {
		t.Fatal(err)
	}
	real, err := LoggedOutcomes(held)
	if err != nil {
		t.Fatal(err)
	}
	replay := func(g *GreyBox) Fidelity {
		got, err := g.Replay(held, edge.DefaultRule, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(real) {
			t.Fatalf("%d steps replayed of %d", len(got), len(real))
		}
		return FidelityOf("grey-box", real, got)
	}
	good := replay(g)
	t.Logf("KL %.4f, pairs %.4f", good.KL, good.Pairs)
	for i, k := range good.KL {
		if k > 0.1 {
			t.Errorf("KL of %v: %.3f, want under 0.1", append(StepMeasures, "scene")[i], k)
		}
	}
	for s := range edge.Scenes {
		for h := range 24 {
			g.Members[0].Hourly.WorkG[s][h] *= 2
		}
	}
	if bad := replay(g); !(bad.KL[1] > 2*good.KL[1] && bad.Pairs > good.Pairs) {
		t.Errorf("twice the work: mean time's KL %.3f and pair KL %.3f, against %.3f and %.3f", bad.KL[1], bad.Pairs, good.KL[1], good.Pairs)
	}
}

// TestCloneTasksFollowsTheLog: cloned from an hour of the operator's
// records, the per-task rule picks what the log picked on most of another
// hour's records, and a log without choices is refused.
func TestCloneTasksFollowsTheLog(t *testing.T) {
	cfg := edge.Default()
	_, train := taskLog(t, cfg, Logging{Seed: 3, Days: []float64{0}, From: 8 * time.Hour, Window: time.Hour})
	_, test := taskLog(t, cfg, Logging{Seed: 4, Days: []float64{0}, From: 10 * time.Hour, Window: 30 * time.Minute})
	p, err := CloneTasks(train, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	agree, n := 0, 0
	var cands []edge.Candidate
	for i := range test {
		r := &test[i]
		if len(r.Cands) < 2 {
			continue
		}
		cands = cands[:0]
		for _, c := range r.Cands {
			cands = append(cands, edge.Candidate{Target: c.Target, Estimate: seconds(c.Estimate), Jobs: c.Jobs, Inbound: c.Inbound})
		}
		tv := edge.TaskView{Scene: r.Scene, Work: r.Work, SizeMB: r.SizeMB, Deadline: seconds(r.Deadline), Backlog: seconds(r.Backlog)}
		feats, prior := p.inputs(&tv, cands)
		if k, _ := p.Rule.Choice().Choose(feats, prior, len(cands), true); k == r.Pick() {
			agree++
		}
		n++
	}
	t.Logf("agrees on %d of %d", agree, n)
	if share := float64(agree) / float64(n); share < 0.6 {
		t.Errorf("agrees with the log on %.2f of %d choices, want 0.6 or more", share, n)
	}
	local := []edge.TaskRecord{{Scene: 0, Deadline: 1, Cands: []edge.TaskOption{{Target: 0}}}}
	if _, err := CloneTasks(local, 1, 1); err == nil {
		t.Error("no choices: no error")
	}
}
