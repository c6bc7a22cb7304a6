package autoscale

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// kpaSim drives a KPA with scripted load: every period it builds the
// service's snapshot from the load (total requests in the system), calls
// Decide and applies SetReplicas at once, the new pods ready immediately.
type kpaSim struct {
	t        *testing.T
	k        *KPA
	now      time.Duration
	period   time.Duration
	replicas int
	snap     metrics.Snapshot
	acts     []scaleAct
	// panicAt records Panicking() after each tick time asked for.
	panicAt map[time.Duration]bool
}

const kpaPeriod = 500 * time.Millisecond

func newKPASim(t *testing.T, cfg KPAConfig, replicas int) *kpaSim {
	t.Helper()
	if cfg.Service == "" {
		cfg.Service = "fn"
	}
	k, err := NewKPA(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &kpaSim{t: t, k: k, period: kpaPeriod, replicas: replicas, panicAt: map[time.Duration]bool{}}
}

// kpaStats is the service's telemetry for a period of the given length in
// which c requests were in the system on average, with ready pods: calls of
// 0.1 s, c of them in flight at the end; with no ready pod the c requests
// are refused for lack of capacity, as the simulator does.
func kpaStats(name string, replicas, ready int, c float64, period time.Duration) metrics.ServiceStats {
	st := metrics.ServiceStats{Name: name, Replicas: replicas, Ready: ready}
	if c <= 0 {
		return st
	}
	if ready == 0 {
		st.Failures.NoCapacity = int64(math.Round(c))
		return st
	}
	const latency = 0.1
	p := period.Seconds()
	st.InFlight = int(math.Round(c))
	st.Latency = metrics.LatencySum{Count: max(1, int64(math.Round(c*p/latency))), Sum: c * p, Max: latency}
	st.Completions = st.Latency.Count
	return st
}

// run advances to until; load gives the concurrency of the period starting
// at its argument.
func (s *kpaSim) run(until time.Duration, load func(time.Duration) float64) {
	s.t.Helper()
	for s.now < until {
		start := s.now
		s.now += s.period
		s.snap.At, s.snap.Period = s.now, s.period
		s.snap.Services = append(s.snap.Services[:0], kpaStats(s.k.cfg.Service, s.replicas, s.replicas, load(start), s.period))
		for _, a := range s.k.Decide(s.now, &s.snap) {
			r, ok := a.(control.SetReplicas)
			if !ok || r.Service != s.k.cfg.Service {
				s.t.Fatalf("%v: unexpected action %#v", s.now, a)
			}
			if r.Replicas == s.replicas {
				s.t.Fatalf("%v: SetReplicas to the current %d", s.now, r.Replicas)
			}
			s.acts = append(s.acts, scaleAct{s.now, r.Replicas})
			s.replicas = r.Replicas
		}
		if _, ok := s.panicAt[s.now]; ok {
			s.panicAt[s.now] = s.k.Panicking()
		}
	}
}

// watchPanic asks run to record Panicking() at these times.
func (s *kpaSim) watchPanic(at ...time.Duration) {
	for _, t := range at {
		s.panicAt[t] = false
	}
}

func kpaConst(c float64) func(time.Duration) float64 { return func(time.Duration) float64 { return c } }

// kpaSteps is a load of before until at, then after.
func kpaSteps(before float64, at time.Duration, after float64) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		if t < at {
			return before
		}
		return after
	}
}

// Desired pods = ceil(observed concurrency / (target × utilisation)), the
// stable-mode rule of Scale (dspc). Worked examples: Knative docs
// (config-autoscaler: containerConcurrency 10 at 70% keeps 7 requests per
// pod), Alibaba's KPA guide (100 requests, concurrency 10, utilisation 0.7
// → 15 pods), Knative autoscaler README (50 requests at concurrency 10 →
// 5 pods).
func TestKPASteadyConcurrencyDesiredIsCeilOverTarget(t *testing.T) {
	for _, tc := range []struct {
		name          string
		load, target  float64
		util          float64
		start, wanted int
	}{
		{"10 at 10x0.7", 10, 10, 0.7, 1, 2},
		{"100 at 10x0.7", 100, 10, 0.7, 1, 15},
		{"50 at 10x1.0", 50, 10, 1, 1, 5},
		{"7 at 10x0.7", 7, 10, 0.7, 1, 1},
		{"14 at 10x0.7 already right", 14, 10, 0.7, 2, 2},
		{"700 at default 100x0.7", 700, 0, 0, 1, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newKPASim(t, KPAConfig{TargetConcurrency: tc.target, TargetUtilization: tc.util}, tc.start)
			s.run(sec(200), kpaConst(tc.load))
			if s.replicas != tc.wanted {
				t.Fatalf("replicas %d, want %d (decisions %v)", s.replicas, tc.wanted, s.acts)
			}
			for _, a := range s.acts {
				if a.At > sec(100) {
					t.Fatalf("still changing after 100s of steady load: %v", s.acts)
				}
			}
			if tc.start == tc.wanted && len(s.acts) != 0 {
				t.Fatalf("changed a right scale: %v", s.acts)
			}
		})
	}
}

// A burst that doubles the panic-window demand over the ready pods starts
// panic mode and scales on the 6 s panic window at once (docs kpa-specific
// "Panic window", "Panic threshold"; Scale: isOverPanicThreshold); the
// same rise below the threshold is followed in stable mode, on the 60 s
// average.
func TestKPABurstPanicsAndScalesUpAtOnce(t *testing.T) {
	t.Run("burst 7 to 70 on 1 pod", func(t *testing.T) {
		s := newKPASim(t, KPAConfig{TargetConcurrency: 10}, 1)
		s.watchPanic(sec(120), sec(122))
		s.run(sec(200), kpaSteps(7, sec(120), 70))
		// At 122 s the panic window holds 4 s at 7 and 2 s at 70: 28
		// requests, 4 pods, ≥ 2 × 1 ready; the stable window alone
		// would ask for ceil(9.1/7) = 2. Then 49 → 7 pods, 70 → 10.
		checkActs(t, s.acts, []scaleAct{{sec(122), 4}, {sec(124), 7}, {sec(126), 10}})
		if s.panicAt[sec(120)] || !s.panicAt[sec(122)] {
			t.Fatalf("panicking at 120 s %v, at 122 s %v; want false, true", s.panicAt[sec(120)], s.panicAt[sec(122)])
		}
	})
	t.Run("exactly double on 1 pod panics", func(t *testing.T) {
		// 14 requests for 2 s: at 122 s the panic window holds 9.33, 2
		// pods, exactly 2 × 1 ready ("at least", >=). Panic holds 2 pods
		// until 184 s; in stable mode they would go at 182 s, when the
		// burst leaves the stable window.
		s := newKPASim(t, KPAConfig{TargetConcurrency: 10}, 1)
		s.watchPanic(sec(122))
		s.run(sec(200), func(t time.Duration) float64 {
			if t >= sec(120) && t < sec(122) {
				return 14
			}
			return 7
		})
		checkActs(t, s.acts, []scaleAct{{sec(122), 2}, {sec(184), 1}})
		if !s.panicAt[sec(122)] {
			t.Fatal("not panicking at 122 s")
		}
	})
	t.Run("rise 28 to 42 on 4 pods stays stable", func(t *testing.T) {
		s := newKPASim(t, KPAConfig{TargetConcurrency: 10}, 4)
		s.watchPanic(sec(100), sec(122), sec(152))
		s.run(sec(200), kpaSteps(28, sec(120), 42))
		// 6 pods wanted is 1.5 × 4 < 2: no panic. The stable average
		// passes 28 at once (5 pods) and 35 after half the window.
		checkActs(t, s.acts, []scaleAct{{sec(122), 5}, {sec(152), 6}})
		for at, p := range s.panicAt {
			if p {
				t.Fatalf("panicking at %v", at)
			}
		}
	})
}

// In panic mode the desired count never decreases; panic ends when a full
// stable window has passed since the panic condition last held, and then
// the scale-down is limited to floor(ready / MaxScaleDownRate) per tick
// (docs kpa-specific: "When using panic mode, the Revision will not scale
// down ... will leave panic mode if there has been no reason to react
// quickly during the stable window timeframe"; Scale: maxPanicPods,
// un-panicking, maxScaleDown).
func TestKPAPanicHoldsThenEndsAfterStableWindow(t *testing.T) {
	s := newKPASim(t, KPAConfig{TargetConcurrency: 10}, 1)
	s.watchPanic(sec(130), sec(160), sec(182), sec(184))
	// 70 requests from 120 s to 130 s, then 7 again. The condition last
	// holds at 122 s (4 wanted on 1 ready pod).
	s.run(sec(260), func(t time.Duration) float64 {
		if t >= sec(120) && t < sec(130) {
			return 70
		}
		return 7
	})
	// At 184 s the stable window holds 6 s at 70 and 54 s at 7: 13.3
	// requests, 2 pods, but at most halving: 10 → 5 → 2, then 1.
	checkActs(t, s.acts, []scaleAct{
		{sec(122), 4}, {sec(124), 7}, {sec(126), 10},
		{sec(184), 5}, {sec(186), 2}, {sec(190), 1},
	})
	for _, at := range []time.Duration{sec(130), sec(160), sec(182)} {
		if !s.panicAt[at] {
			t.Fatalf("not panicking at %v", at)
		}
	}
	if s.panicAt[sec(184)] {
		t.Fatal("still panicking at 184 s, > 122 s + 60 s")
	}
}

// Panic mode is extended at every tick the condition still holds
// (Scale: "If we're still over panic threshold right now — extend the
// panic window"; upstream TestAutoscalerExtendPanicWindow).
func TestKPAPanicExtendsWhileConditionHolds(t *testing.T) {
	// MaxScale 2 keeps 2 ready pods under 70 requests from 120 s to
	// 150 s: 4 pods or more wanted, ≥ 2 × 2, until the tick at 154 s. Panic
	// ends at 216 s, not 184 s (a stable window after it began); in stable
	// mode the burst leaves the stable window at 210 s.
	s := newKPASim(t, KPAConfig{TargetConcurrency: 10, MaxScale: 2}, 1)
	s.watchPanic(sec(184), sec(214), sec(216))
	s.run(sec(260), func(t time.Duration) float64 {
		if t >= sec(120) && t < sec(150) {
			return 70
		}
		return 7
	})
	checkActs(t, s.acts, []scaleAct{{sec(122), 2}, {sec(216), 1}})
	if !s.panicAt[sec(184)] || !s.panicAt[sec(214)] || s.panicAt[sec(216)] {
		t.Fatalf("panicking at 184 s, 214 s, 216 s: %v %v %v; want true true false",
			s.panicAt[sec(184)], s.panicAt[sec(214)], s.panicAt[sec(216)])
	}
}

// Scale-up is bounded by ceil(MaxScaleUpRate × ready) per tick, and so is
// at least one pod (Scale: maxScaleUp, its worked example MSUR=1.1,
// OCC=3, RPC=2, TV=1 → 3 pods; config-autoscaler: "the number of pods can
// at most go N to 2N ... but at least N to N+1").
func TestKPAScaleUpRate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rate   float64
		target float64
		load   float64
		start  int
		want   []scaleAct
	}{
		{"rate 2 doubles", 2, 10, 100, 1, []scaleAct{{sec(0.5), 2}, {sec(2), 4}, {sec(4), 8}, {sec(6), 10}}},
		{"rate 1000 at once", 1000, 10, 100, 1, []scaleAct{{sec(0.5), 10}}},
		{"upstream example 1.1 from 2", 1.1, 1, 3, 2, []scaleAct{{sec(0.5), 3}}},
		{"rate 1.1 adds at least one", 1.1, 1, 10, 1, []scaleAct{
			{sec(0.5), 2}, {sec(2), 3}, {sec(4), 4}, {sec(6), 5}, {sec(8), 6},
			{sec(10), 7}, {sec(12), 8}, {sec(14), 9}, {sec(16), 10}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newKPASim(t, KPAConfig{TargetConcurrency: tc.target, TargetUtilization: 1, MaxScaleUpRate: tc.rate}, tc.start)
			s.run(sec(60), kpaConst(tc.load))
			checkActs(t, s.acts, tc.want)
		})
	}
}

// An autoscaler created over more than one ready pod starts in panic mode
// and keeps the scale for a stable window (newAutoscaler); then scale-down
// is limited to floor(ready / MaxScaleDownRate) per tick (Scale:
// maxScaleDown; config-autoscaler: "at most go N to N/2").
func TestKPAScaleDownRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate float64
		want []scaleAct
	}{
		{"rate 2 halves", 2, []scaleAct{{sec(62), 8}, {sec(64), 4}, {sec(66), 2}, {sec(68), 1}}},
		{"rate 4 quarters", 4, []scaleAct{{sec(62), 4}, {sec(64), 1}}},
		{"rate 1.5", 1.5, []scaleAct{{sec(62), 10}, {sec(64), 6}, {sec(66), 4}, {sec(68), 2}, {sec(70), 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newKPASim(t, KPAConfig{TargetConcurrency: 10, MaxScaleDownRate: tc.rate, MinScale: 1}, 16)
			s.run(sec(120), kpaConst(0))
			checkActs(t, s.acts, tc.want)
		})
	}
}

// Scale to zero: the last pod goes only after the stable window without
// traffic (the stable average is 0 and the service has been active that
// long, handleScaleToZero) and then the grace period inactive, activator
// in the path (CanScaleToZero); never with MinScale >= 1 (applyBounds);
// not if traffic returns in the grace period; and a request at zero scales
// up at once (multiscaler Poke) on its own concurrency (the windows restart
// after a window without data). Docs kpa-specific: "the last Replica will
// only be removed after there has not been any traffic to the Revision for
// the entire duration of the stable window"; config-autoscaler:
// "scale-to-zero-grace-period ... the time an inactive revision is left
// running before it is scaled to zero".
func TestKPAScaleToZero(t *testing.T) {
	// 7 requests (1 pod) until 100 s, then nothing: the stable average is
	// 0 from 160 s, the service inactive from then, and zero allowed once
	// inactive for more than 30 s: at 192 s.
	for _, tc := range []struct {
		name string
		cfg  KPAConfig
		load func(time.Duration) float64
		want []scaleAct
	}{
		{"idle", KPAConfig{}, kpaSteps(7, sec(100), 0), []scaleAct{{sec(192), 0}}},
		// Idle from the start: the stable average is 0 at once, but the
		// service must first be active for the stable window (from 0.5 s,
		// inactive at 62 s), then inactive for more than 30 s.
		{"idle from the start", KPAConfig{}, kpaConst(0), []scaleAct{{sec(94), 0}}},
		{"min scale 1", KPAConfig{MinScale: 1}, kpaSteps(7, sec(100), 0), nil},
		{"traffic back in the grace period", KPAConfig{}, func(t time.Duration) float64 {
			if t >= sec(100) && t < sec(170) {
				return 0
			}
			return 7
		}, nil},
		{"longer grace period", KPAConfig{ScaleToZeroGracePeriod: 45 * time.Second}, kpaSteps(7, sec(100), 0), []scaleAct{{sec(206), 0}}},
		{"shorter stable window", KPAConfig{StableWindow: 20 * time.Second}, kpaSteps(7, sec(100), 0), []scaleAct{{sec(152), 0}}},
		{"request at zero", KPAConfig{}, func(t time.Duration) float64 {
			switch {
			case t < sec(100):
				return 7
			case t == sec(300.5):
				return 20 // refused: 20 requests held by the activator, 3 pods
			}
			return 0
		}, []scaleAct{{sec(192), 0}, {sec(301), 3}}},
		// Zero ready pods count as one: at most ceil(2 × 1) from zero.
		{"request at zero, up rate 2", KPAConfig{MaxScaleUpRate: 2}, func(t time.Duration) float64 {
			switch {
			case t < sec(100):
				return 7
			case t == sec(300.5):
				return 20
			}
			return 0
		}, []scaleAct{{sec(192), 0}, {sec(301), 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.TargetConcurrency = 10
			s := newKPASim(t, cfg, 1)
			s.run(sec(320), tc.load)
			checkActs(t, s.acts, tc.want)
		})
	}
}

// MinScale and MaxScale bound every decision (scaler.go applyBounds).
func TestKPAScaleBounds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		min, max int
		load     float64
		want     []scaleAct
	}{
		{"max 5 of 100 wanted", 0, 5, 1000, []scaleAct{{sec(0.5), 5}}},
		{"min 3 with no load", 3, 0, 0, []scaleAct{{sec(0.5), 3}}},
		{"min 3 max 3", 3, 3, 1000, []scaleAct{{sec(0.5), 3}}},
		{"within bounds", 2, 20, 100, []scaleAct{{sec(0.5), 10}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newKPASim(t, KPAConfig{TargetConcurrency: 10, TargetUtilization: 1, MinScale: tc.min, MaxScale: tc.max}, 1)
			s.run(sec(300), kpaConst(tc.load))
			checkActs(t, s.acts, tc.want)
		})
	}
}

// Decisions come every TickInterval only.
func TestKPATickInterval(t *testing.T) {
	s := newKPASim(t, KPAConfig{TargetConcurrency: 10, TargetUtilization: 1, MaxScaleUpRate: 2, TickInterval: 5 * time.Second}, 1)
	s.run(sec(60), kpaConst(100))
	checkActs(t, s.acts, []scaleAct{{sec(0.5), 2}, {sec(5), 4}, {sec(10), 8}, {sec(15), 10}})
}

// The concurrency of a period: Little's law when calls are shorter than
// the period, the count at the end otherwise, the activator's held requests
// with no ready pod.
func TestKPAConcurrencyEstimate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		st       metrics.ServiceStats
		want     float64
		reported bool
	}{
		{"little's law", metrics.ServiceStats{Ready: 2, InFlight: 3, Latency: metrics.LatencySum{Count: 40, Sum: 4}}, 8, true},
		{"calls longer than the period", metrics.ServiceStats{Ready: 2, InFlight: 9, Queued: 3, Latency: metrics.LatencySum{Count: 1, Sum: 2}}, 12, true},
		{"nothing completed", metrics.ServiceStats{Ready: 2, InFlight: 9, Queued: 1}, 10, true},
		{"idle pods report zero", metrics.ServiceStats{Ready: 2}, 0, true},
		{"activator at zero", metrics.ServiceStats{Failures: metrics.Failures{NoCapacity: 5, Timeout: 2}}, 5, true},
		{"nothing at zero", metrics.ServiceStats{Failures: metrics.Failures{Timeout: 2}}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := kpaConcurrency(sec(0.5), &tc.st)
			if math.Abs(c-tc.want) > 1e-12 || ok != tc.reported {
				t.Fatalf("got %v %v, want %v %v", c, ok, tc.want, tc.reported)
			}
		})
	}
}

// The window averages of pkg/autoscaler/aggregation/bucketing.go.
func TestKPAWindowAverages(t *testing.T) {
	rec := func(w *kpaBuckets, vals ...float64) {
		for i, v := range vals {
			if !math.IsNaN(v) {
				w.record(sec(float64(i)), sec(float64(i+1)), v)
			}
		}
	}
	// WeightedFloat64Buckets.WindowAverage's worked example: [10, 10, 5, 5]
	// newest last, decay 0.6 → 5.544; reversed 9.072; linear 7.5.
	w := newKPABuckets(4, 4)
	rec(&w, 10, 10, 5, 5)
	if got := w.weighted(sec(4), 4, w.firstStable, 0.6); math.Abs(got-5.544) > 1e-9 {
		t.Fatalf("weighted %v, want 5.544", got)
	}
	if got := w.linear(sec(4), 4, w.firstStable); got != 7.5 {
		t.Fatalf("linear %v, want 7.5", got)
	}
	// A second later the empty bucket of now takes the first weight:
	// 5×0.24 + 5×0.096 + 10×0.0384.
	if got := w.weighted(sec(5), 4, w.firstStable, 0.6); math.Abs(got-2.064) > 1e-9 {
		t.Fatalf("weighted a bucket later %v, want 2.064", got)
	}
	w = newKPABuckets(4, 4)
	rec(&w, 5, 5, 10, 10)
	if got := w.weighted(sec(4), 4, w.firstStable, 0.6); math.Abs(got-9.072) > 1e-9 {
		t.Fatalf("weighted reversed %v, want 9.072", got)
	}
	// computeSmoothingCoeff: 60 buckets hit the 0.2 floor; 6 do not.
	if a := kpaSmoothing(60); a != 0.2 {
		t.Fatalf("smoothing(60) = %v", a)
	}
	if a := kpaSmoothing(6); math.Abs(a-(1-math.Pow(1e-4, 1.0/6))) > 1e-12 || a < 0.78 {
		t.Fatalf("smoothing(6) = %v", a)
	}

	// TimedFloat64Buckets.WindowAverage: a partial window averages only
	// the buckets since the first write; gaps inside count 0; after the
	// last write the window shrinks; a window without data restarts it.
	w = newKPABuckets(60, 6)
	rec(&w, 10, 10, 10)
	if got := w.linear(sec(3), 60, w.firstStable); got != 10 {
		t.Fatalf("partial window %v, want 10", got)
	}
	w = newKPABuckets(60, 6)
	rec(&w, 10, math.NaN(), 10)
	if got := w.linear(sec(3), 60, w.firstStable); got != 6.666666 {
		t.Fatalf("gap %v, want 6.666666", got)
	}
	if got := w.linear(sec(10), 60, w.firstStable); got != 6.666666 {
		t.Fatalf("stale %v, want 6.666666", got)
	}
	// At 7 s the 6 s window holds buckets 1 to 6, of which 1 and 2 are
	// before or at the last write.
	if got := w.linear(sec(7), 6, w.firstPanic); got != 5 {
		t.Fatalf("panic window %v, want 5", got)
	}
	if got := w.linear(sec(8), 6, w.firstPanic); got != 10 {
		t.Fatalf("panic window %v, want 10", got)
	}
	if got := w.linear(sec(9), 6, w.firstPanic); got != 0 {
		t.Fatalf("panic window a window after the last write %v, want 0", got)
	}
	if w.empty(sec(63)) || !w.empty(sec(64)) {
		t.Fatal("empty: want data until 60 buckets after the last write")
	}
	w.record(sec(100), sec(101), 4)
	if got := w.linear(sec(101), 60, w.firstStable); got != 4 {
		t.Fatalf("after a window without data %v, want 4", got)
	}
	// Sub-second periods share a bucket by their time.
	w = newKPABuckets(60, 6)
	w.record(0, sec(0.5), 2)
	w.record(sec(0.5), sec(1), 6)
	if got := w.linear(sec(1), 60, w.firstStable); got != 4 {
		t.Fatalf("half-second periods %v, want 4", got)
	}
}

// The weighted average reacts faster to a burst than the linear one.
func TestKPAWeightedAverageFollowsBurstFaster(t *testing.T) {
	run := func(weighted bool) []scaleAct {
		s := newKPASim(t, KPAConfig{TargetConcurrency: 10, WeightedAverage: weighted}, 4)
		s.run(sec(200), kpaSteps(28, sec(120), 42))
		return s.acts
	}
	lin, wei := run(false), run(true)
	last := func(a []scaleAct) scaleAct { return a[len(a)-1] }
	if len(lin) == 0 || len(wei) == 0 || last(lin).Replicas != 6 || last(wei).Replicas != 6 {
		t.Fatalf("linear %v, weighted %v: want both at 6", lin, wei)
	}
	if last(wei).At >= last(lin).At {
		t.Fatalf("weighted reached 6 at %v, linear at %v", last(wei).At, last(lin).At)
	}
}

func TestKPAConfigDefaults(t *testing.T) {
	k, err := NewKPA(KPAConfig{Service: "s"})
	if err != nil {
		t.Fatal(err)
	}
	want := KPAConfig{
		Service: "s", TargetConcurrency: 100, TargetUtilization: 0.7,
		StableWindow: 60 * time.Second, PanicWindow: 6 * time.Second, PanicThreshold: 2,
		MaxScaleUpRate: 1000, MaxScaleDownRate: 2,
		ScaleToZeroGracePeriod: 30 * time.Second, TickInterval: 2 * time.Second,
	}
	if got := k.Config(); got != want {
		t.Fatalf("defaults\n got  %+v\n want %+v", got, want)
	}
	if k.target != 70 {
		t.Fatalf("target %v, want 70", k.target)
	}
	k, err = NewKPA(KPAConfig{Service: "s", StableWindow: 125 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if pw := k.Config().PanicWindow; pw != 13*time.Second {
		t.Fatalf("panic window of 125s: %v, want 10%% rounded, 13s", pw)
	}
}

func TestKPAConfigErrorsNameTheField(t *testing.T) {
	ok := KPAConfig{Service: "s"}
	for _, tc := range []struct {
		mod  func(*KPAConfig)
		want string
	}{
		{func(c *KPAConfig) { c.Service = "" }, "service: required"},
		{func(c *KPAConfig) { c.TargetConcurrency = -1 }, "target_concurrency: must be > 0"},
		{func(c *KPAConfig) { c.TargetConcurrency = math.Inf(1) }, "target_concurrency"},
		{func(c *KPAConfig) { c.TargetUtilization = 1.5 }, "target_utilization: must be in (0, 1]"},
		{func(c *KPAConfig) { c.StableWindow = 5 * time.Second }, "stable_window"},
		{func(c *KPAConfig) { c.StableWindow = 61500 * time.Millisecond }, "stable_window: must be whole seconds"},
		{func(c *KPAConfig) { c.PanicWindow = 90 * time.Second }, "panic_window"},
		{func(c *KPAConfig) { c.PanicWindow = 1500 * time.Millisecond }, "panic_window"},
		{func(c *KPAConfig) { c.PanicThreshold = 1.05 }, "panic_threshold: must be in [1.1, 10]"},
		{func(c *KPAConfig) { c.MaxScaleUpRate = 1 }, "max_scale_up_rate: must be > 1"},
		{func(c *KPAConfig) { c.MaxScaleDownRate = 0.5 }, "max_scale_down_rate: must be > 1"},
		{func(c *KPAConfig) { c.MinScale = -1 }, "min_scale: must be >= 0"},
		{func(c *KPAConfig) { c.MinScale, c.MaxScale = 3, 2 }, "max_scale: must be >= min_scale"},
		{func(c *KPAConfig) { c.MaxScale = -2 }, "max_scale: must be >= 0"},
		{func(c *KPAConfig) { c.ScaleToZeroGracePeriod = time.Second }, "scale_to_zero_grace_period: must be >= 6s"},
		{func(c *KPAConfig) { c.TickInterval = -time.Second }, "tick_interval: must be > 0"},
	} {
		cfg := ok
		tc.mod(&cfg)
		_, err := NewKPA(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", cfg, err, tc.want)
		}
	}
	// Every bad field is reported.
	_, err := NewKPA(KPAConfig{TargetUtilization: 2, MinScale: -1})
	wantFieldErrors(t, err, "service", "target_utilization", "min_scale")
	if _, err := NewKPA(ok); err != nil {
		t.Fatal(err)
	}
}

// A service absent from the snapshot gets no decision.
func TestKPAUnknownService(t *testing.T) {
	k, err := NewKPA(KPAConfig{Service: "s"})
	if err != nil {
		t.Fatal(err)
	}
	snap := metrics.Snapshot{Period: kpaPeriod, Services: []metrics.ServiceStats{kpaStats("other", 1, 1, 500, kpaPeriod)}}
	if acts := k.Decide(sec(0.5), &snap); len(acts) != 0 {
		t.Fatalf("actions %v", acts)
	}
}

func TestKPADecideAllocatesNothingInSteadyState(t *testing.T) {
	k, err := NewKPA(KPAConfig{Service: "s", TargetConcurrency: 10})
	if err != nil {
		t.Fatal(err)
	}
	snap := metrics.Snapshot{Period: kpaPeriod, Services: []metrics.ServiceStats{
		kpaStats("a", 1, 1, 3, kpaPeriod), kpaStats("s", 2, 2, 14, kpaPeriod)}}
	if a := steadyAllocs(t, k, &snap, kpaPeriod, 200); a != 0 {
		t.Fatalf("%v allocations per Decide", a)
	}
}
