package lb

import (
	"math"
	"testing"
	"time"
)

func TestObserverLayout(t *testing.T) {
	o, err := NewObserver(2, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if o.Len() != 2*12+5 {
		t.Fatalf("len %d", o.Len())
	}
	ms := time.Millisecond
	o.Sent(0, 0)
	o.Sent(500*ms, 1)
	o.Sent(1500*ms, 1)
	o.Done(2*time.Second, 1, 300*ms, 400*ms)
	o.SetPrevious([]float64{0.5, -0.5})
	obs := o.Observe(2*time.Second, nil)
	want := map[int]float64{
		0:  math.Log1p(1),    // backend 0: one in flight
		1:  0,                // no duration samples yet
		11: math.Log1p(1),    // backend 1: two sent, one done
		12: math.Log1p(0.3),  // duration mean
		17: math.Log1p(0.4),  // TCT mean
		19: 0,                // TCT std of one sample
		22: math.Log1p(0.75), // inter-arrival mean of 0.5 and 1.0 s
		27: 0.5,              // previous action
	}
	for i, w := range want {
		if math.Abs(obs[i]-w) > 1e-12 {
			t.Errorf("obs[%d] = %g, want %g", i, obs[i], w)
		}
	}
	if obs[len(obs)-1] != -0.5 {
		t.Errorf("last entry %g, want the previous action -0.5", obs[len(obs)-1])
	}
	if a := testing.AllocsPerRun(100, func() { o.Observe(3*time.Second, obs) }); a != 0 {
		t.Errorf("%v allocs per Observe", a)
	}
	o.Reset()
	for i, v := range o.Observe(3*time.Second, obs) {
		if v != 0 {
			t.Fatalf("obs[%d] = %g after reset", i, v)
		}
	}
}

// TestObserverAbandon: a request that got no answer leaves the in-flight
// count (the send matched by its time) but gives no duration sample.
func TestObserverAbandon(t *testing.T) {
	o, err := NewObserver(1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	o.Sent(100*ms, 0)
	o.Sent(200*ms, 0)
	o.Abandon(250*ms, 0, 50*ms) // the one sent at 200 ms
	obs := o.Observe(300*ms, nil)
	if obs[0] != math.Log1p(1) || obs[1] != 0 {
		t.Fatalf("in flight %g (want log 2), duration mean %g (want no sample)", obs[0], obs[1])
	}
	// The request left is the one sent at 100 ms: its age bounds the duration.
	if d := o.Durations(300*ms, nil); math.Abs(d[0]-0.2) > 1e-12 {
		t.Fatalf("duration bound %g, want the age 0.2 s of the request sent at 100 ms", d[0])
	}
	o.Abandon(400*ms, 0, 300*ms)
	o.Abandon(400*ms, 0, 300*ms) // more abandons than sends must not go negative
	if obs := o.Observe(400*ms, nil); obs[0] != 0 {
		t.Fatalf("in flight %g after every request ended", obs[0])
	}
}

func TestActionToWeights(t *testing.T) {
	w := ActionToWeights(nil, []float64{-1, 0, 1, 7})
	r := math.Sqrt(10)
	for i, want := range []float64{1 / r, 1, r, r} {
		if math.Abs(w[i]-want) > 1e-12 {
			t.Errorf("w[%d] = %g, want %g", i, w[i], want)
		}
	}
}

// TestDurationsCountOngoingTasks: a backend whose tasks have not finished
// reports at least the oldest one's age (censored samples), not a stale or
// empty average of the finished ones; new requests do not lower it.
func TestDurationsCountOngoingTasks(t *testing.T) {
	o, _ := NewObserver(2, 500*time.Millisecond)
	s := time.Second
	o.Sent(0, 0)
	o.Sent(s, 0)
	if l := o.Durations(3*s, nil); l[0] != 3 || l[1] != 0 {
		t.Fatalf("two ongoing tasks aged 3 s and 2 s: l = %v, want [3 0]", l)
	}
	o.Sent(3*s, 0)
	if l := o.Durations(3*s, nil); l[0] != 3 {
		t.Fatalf("a new request lowered l to %g", l[0])
	}
	o.Done(3*s, 0, 0, 0)                       // the third, just sent
	o.Done(3*s, 0, 2900*time.Millisecond, 3*s) // the first, sent at 0
	if l := o.Durations(4*s, nil); math.Abs(l[0]-3) > 1e-12 {
		t.Fatalf("finished 2.9 s, ongoing aged 3 s: l = %g, want 3", l[0])
	}
	o.Done(4*s, 0, time.Second, 3*s) // the second, sent at 1 s
	w := 0.9 * 0.9                   // the 2.9 s and 0 s samples are two periods old
	if want := (w*2.9 + 1) / (2*w + 1); math.Abs(o.Durations(4*s, nil)[0]-want) > 1e-12 {
		t.Fatalf("nothing ongoing: l = %g, want the discounted average %g of 2.9, 0 and 1", o.Durations(4*s, nil)[0], want)
	}
}

// TestBacklogs: l = q/λ with λ the completions discounted by 0.9 per
// period over the window τ = period/−ln 0.9, and at least one per window.
func TestBacklogs(t *testing.T) {
	period := 500 * time.Millisecond
	o, _ := NewObserver(2, period)
	tau := period.Seconds() / -math.Log(0.9)
	for k := 0; k < 4; k++ {
		o.Sent(0, 0)
	}
	if l := o.Backlogs(0, nil); math.Abs(l[0]-4*tau) > 1e-12 || l[1] != 0 {
		t.Fatalf("4 in flight, nothing finished yet: l = %v, want [%g 0]", l, 4*tau)
	}
	for k := 0; k < 3; k++ {
		o.Done(time.Second, 0, time.Second, time.Second)
	}
	if l := o.Backlogs(time.Second, nil); math.Abs(l[0]-tau/3) > 1e-12 {
		t.Fatalf("1 in flight, 3 just finished: l = %g, want %g", l[0], tau/3)
	}
	if l := o.Backlogs(time.Second+period, nil); math.Abs(l[0]-tau/2.7) > 1e-12 {
		t.Fatalf("one period later: l = %g, want %g", l[0], tau/2.7)
	}
}
