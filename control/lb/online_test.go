package lb

import (
	"bytes"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
)

// fakePlane plays traffic into an agent's feedback: a request every 5 ms
// to the backend that SED picks with the weights, answered by backend j
// after 10(j+1)² ms.
type fakePlane struct {
	inFlight []int
	ends     []struct {
		at, sent time.Duration
		j        int
	}
}

func (p *fakePlane) period(f Feedback, from, to time.Duration, w []float64) {
	if p.inFlight == nil {
		p.inFlight = make([]int, len(w))
	}
	for t := from; t < to; t += 5 * time.Millisecond {
		p.finish(f, t)
		best := 0
		for j := range w {
			if float64(p.inFlight[j]+1)/w[j] < float64(p.inFlight[best]+1)/w[best] {
				best = j
			}
		}
		p.inFlight[best]++
		f.Sent(t, best)
		d := time.Duration(10*(best+1)*(best+1)) * time.Millisecond
		p.ends = append(p.ends, struct {
			at, sent time.Duration
			j        int
		}{t + d, t, best})
	}
	p.finish(f, to)
}

func (p *fakePlane) finish(f Feedback, now time.Duration) {
	slices.SortFunc(p.ends, func(a, b struct {
		at, sent time.Duration
		j        int
	}) int {
		return int(a.at - b.at)
	})
	for len(p.ends) > 0 && p.ends[0].at <= now {
		e := p.ends[0]
		p.ends = p.ends[1:]
		p.inFlight[e.j]--
		f.Done(e.at, e.j, e.at-e.sent, e.at-e.sent)
	}
}

func TestOnlineLearnerStartsAsThePolicyAndLearns(t *testing.T) {
	pol := testPolicy(t)
	frozen, err := pol.Agent("lb1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := OnlineConfig{Deterministic: true, LearningStarts: 20, CriticWarmup: 30, LR: 1e-3, Seed: 1}
	l, err := NewOnlineLearner(pol, "lb1", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c := l.Config(); c.Reward != VBF || c.Estimate != EstimateBacklog {
		t.Errorf("defaults: reward %q estimate %q", c.Reward, c.Estimate)
	}
	var a, b fakePlane
	period := 50 * time.Millisecond
	var wFrozen, wOnline []float64
	for k := 0; k < 10; k++ {
		now := time.Duration(k) * period
		wFrozen = append(wFrozen[:0], frozen.Decide(now, nil)[0].(control.SetWeights).Weights...)
		wOnline = append(wOnline[:0], l.Decide(now)...)
		if !slices.EqualFunc(wFrozen, wOnline, func(x, y float64) bool { return math.Abs(x-y) < 1e-6*x }) {
			t.Fatalf("period %d: online learner weights %v, the frozen agent's %v", k, wOnline, wFrozen)
		}
		l.Learn()
		a.period(frozen.Feedback(0), now, now+period, wFrozen)
		b.period(l.Feedback(), now, now+period, wOnline)
	}
	l.Decide(10 * period)
	if est := l.agent.obs[0].Backlogs(10*period, nil); l.Reward() != Score(VBF, est) {
		t.Errorf("reward %g, want VBF of the backlogs %v", l.Reward(), est)
	}
	l.Learn()
	before := actorWeights(pol)
	for k := 11; l.Updates() < cfg.CriticWarmup; k++ {
		now := time.Duration(k) * period
		w := l.Decide(now)
		l.Learn()
		b.period(l.Feedback(), now, now+period, w)
	}
	if got := actorWeights(l.Policy()); !slices.Equal(before, got) {
		t.Fatal("the actor changed during the critics' warm-up")
	}
	for k := 0; k < 10; k++ {
		now := time.Duration(100+k) * period
		w := l.Decide(now)
		l.Learn()
		b.period(l.Feedback(), now, now+period, w)
	}
	after := l.Policy()
	if slices.Equal(before, actorWeights(after)) {
		t.Fatalf("the actor did not change after %d updates", l.Updates())
	}
	if after.Provenance.OnlineUpdates != l.Updates() {
		t.Errorf("provenance online updates %d, want %d", after.Provenance.OnlineUpdates, l.Updates())
	}
	if _, err := ReadPolicy(bytes.NewReader(policyBytes(t, after))); err != nil {
		t.Fatalf("written policy unreadable: %v", err)
	}
}

func actorWeights(p *Policy) []float32 {
	var w []float32
	for _, n := range p.state() {
		w = append(w, n.Value.Data...)
	}
	return w
}

func policyBytes(t *testing.T, p *Policy) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
