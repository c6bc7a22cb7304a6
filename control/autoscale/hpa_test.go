package autoscale

import (
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// pod is one instance in a scripted snapshot.
type pod struct {
	ready    bool
	util     float64 // CPU utilisation of the request
	inFlight int
}

func readyPods(n int, util float64) []pod {
	ps := make([]pod, n)
	for i := range ps {
		ps[i] = pod{ready: true, util: util}
	}
	return ps
}

// hpaWorld replays scripted pods into an HPA every second and applies its
// decisions at once (new pods start at the utilisation the script gives).
type hpaWorld struct {
	t    *testing.T
	h    *HPA
	now  time.Duration
	ids  []int // instance ids, in order
	next int
	log  []decision
}

type decision struct {
	at       time.Duration
	replicas int
}

func newHPAWorld(t *testing.T, cfg HPAConfig, replicas int) *hpaWorld {
	t.Helper()
	cfg.Service = "web"
	h, err := NewHPA(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := &hpaWorld{t: t, h: h}
	w.resize(replicas)
	return w
}

func (w *hpaWorld) resize(n int) {
	for len(w.ids) < n {
		w.ids = append(w.ids, w.next)
		w.next++
	}
	w.ids = w.ids[:n]
}

// run advances d in 1-second periods with the pods given by script(i) for
// the current replica count.
func (w *hpaWorld) run(d time.Duration, script func(replicas int) []pod) {
	for end := w.now + d; w.now < end; {
		w.now += time.Second
		pods := script(len(w.ids))
		if len(pods) != len(w.ids) {
			w.t.Fatalf("script gave %d pods for %d replicas", len(pods), len(w.ids))
		}
		snap := snapshotOf(w.now, w.ids, pods)
		for _, a := range w.h.Decide(w.now, &snap) {
			r := a.(control.SetReplicas)
			w.log = append(w.log, decision{w.now, r.Replicas})
			w.resize(r.Replicas)
		}
	}
}

func snapshotOf(now time.Duration, ids []int, pods []pod) metrics.Snapshot {
	svc := metrics.ServiceStats{Name: "web", Replicas: len(pods), CPULimit: 1}
	for i, p := range pods {
		if p.ready {
			svc.Ready++
		}
		svc.Instances = append(svc.Instances, metrics.InstanceStats{ID: ids[i], Ready: p.ready, CPUUse: p.util,
			Utilisation: p.util, InFlight: p.inFlight})
		svc.InFlight += p.inFlight
	}
	return metrics.Snapshot{At: now, Period: time.Second, Services: []metrics.ServiceStats{svc}}
}

func steady(util float64) func(int) []pod { return func(n int) []pod { return readyPods(n, util) } }

func (w *hpaWorld) replicas() int { return len(w.ids) }

// The documented algorithm: desired = ceil(current × metric / target).
// Two pods at 100% of their request against a 50% target become four at
// the first sync (15s), and the new pods' equal share stops the scaling.
func TestHPADesiredIsCeilCurrentTimesRatio(t *testing.T) {
	w := newHPAWorld(t, HPAConfig{MaxReplicas: 10, Metrics: []HPAMetric{{Kind: MetricCPU, Target: 50}}}, 2)
	w.run(15*time.Second, steady(1.0))
	if len(w.log) != 1 || w.log[0] != (decision{15 * time.Second, 4}) {
		t.Fatalf("decisions %v, want 4 replicas at the 15s sync", w.log)
	}
	w.run(60*time.Second, steady(0.5)) // at target now
	if len(w.log) != 1 {
		t.Errorf("scaled again at target: %v", w.log)
	}
}

// Within the 0.1 tolerance nothing changes; just outside it does.
func TestHPATolerance(t *testing.T) {
	for _, tc := range []struct {
		util float64
		want int
	}{{0.54, 4}, {0.46, 4}, {0.56, 5}} {
		cfg := HPAConfig{MaxReplicas: 10, Metrics: []HPAMetric{{Kind: MetricCPU, Target: 50}},
			ScaleDown: &HPAScalingRules{StabilizationWindow: new(time.Duration), Policies: DefaultScaleDown().Policies}}
		w := newHPAWorld(t, cfg, 4)
		w.run(15*time.Second, steady(tc.util))
		if w.replicas() != tc.want {
			t.Errorf("utilisation %.2f of a 0.50 target: %d replicas, want %d (%v)", tc.util, w.replicas(), tc.want, w.log)
		}
	}
}

// Scale-up policies (4 pods or 100% per 15s, the larger): from 10 pods
// wanting 60, the HPA goes 20, 40, 60 at successive syncs.
func TestHPAScaleUpPolicies(t *testing.T) {
	w := newHPAWorld(t, HPAConfig{MaxReplicas: 100, Metrics: []HPAMetric{{Kind: MetricConcurrency, Target: 10}}}, 10)
	// The load is 600 calls in flight in all, spread over the pods.
	script := func(n int) []pod {
		ps := readyPods(n, 0.5)
		for i := range ps {
			ps[i].inFlight = 600 / n
		}
		return ps
	}
	w.run(45*time.Second, script)
	var got []int
	for _, d := range w.log {
		got = append(got, d.replicas)
	}
	if want := []int{20, 40, 60}; !equal(got, want) {
		t.Fatalf("scale-up steps %v, want %v", got, want)
	}
	// Small deployments: 1 pod may add 4 at once (the Pods policy wins).
	w = newHPAWorld(t, HPAConfig{MaxReplicas: 100, Metrics: []HPAMetric{{Kind: MetricConcurrency, Target: 10}}}, 1)
	w.run(15*time.Second, script)
	if w.replicas() != 5 {
		t.Errorf("from 1 pod: %d replicas after one sync, want 5 (1 + 4 pods)", w.replicas())
	}
}

// Scale-down stabilisation: no scale-down while any recommendation of the
// last 300s was higher; then down to the recommendation at once (100% per
// 15s allowed).
func TestHPAScaleDownStabilisation(t *testing.T) {
	w := newHPAWorld(t, HPAConfig{MinReplicas: 2, MaxReplicas: 20, Metrics: []HPAMetric{{Kind: MetricCPU, Target: 50}}}, 8)
	w.run(60*time.Second, steady(0.5)) // at target: recommendations of 8
	w.run(290*time.Second, steady(0.1))
	if w.replicas() != 8 || len(w.log) != 0 {
		t.Fatalf("scaled down inside the stabilisation window: %v", w.log)
	}
	w.run(30*time.Second, steady(0.1))
	if len(w.log) != 1 || w.log[0].replicas != 2 {
		t.Fatalf("decisions %v, want one scale-down to 2 (ceil(8 × 0.1/0.5) = 2) once 300s passed", w.log)
	}
	if at := w.log[0].at; at <= 60*time.Second+300*time.Second-15*time.Second || at > 60*time.Second+300*time.Second+15*time.Second {
		t.Errorf("scaled down at %v, want about 300s after the last recommendation of 8 (at 60s)", at)
	}
}

// Pods not ready yet (starting) count as 0% on a scale-up: two pods at
// 100% with two starting ones against a 50% target stay at four replicas.
// Without the starting pods the same two would double.
func TestHPAPendingPodsDampScaleUp(t *testing.T) {
	w := newHPAWorld(t, HPAConfig{MaxReplicas: 10, Metrics: []HPAMetric{{Kind: MetricCPU, Target: 50}}}, 4)
	w.run(15*time.Second, func(n int) []pod {
		return []pod{{ready: true, util: 1}, {ready: true, util: 1}, {}, {}}
	})
	if len(w.log) != 0 {
		t.Fatalf("scaled with half the pods starting: %v", w.log)
	}
	// At 150% on the ready pods the rebalanced ratio is 0.75/0.5 = 1.5:
	// six replicas.
	w = newHPAWorld(t, HPAConfig{MaxReplicas: 10, Metrics: []HPAMetric{{Kind: MetricCPU, Target: 50}}}, 4)
	w.run(15*time.Second, func(n int) []pod {
		ps := []pod{{ready: true, util: 1.5}, {ready: true, util: 1.5}}
		for len(ps) < n {
			ps = append(ps, pod{})
		}
		return ps
	})
	if w.replicas() != 6 {
		t.Errorf("%d replicas, want ceil(1.5 × 4) = 6 (%v)", w.replicas(), w.log)
	}
}

// A pod without a metric (restarting) counts as 100% of its request on a
// scale-down: four pods at 10% and one restarting against 50% go to 3, not
// the 1 that the four alone would give.
func TestHPAMissingMetricsDampScaleDown(t *testing.T) {
	cfg := HPAConfig{MaxReplicas: 10, Metrics: []HPAMetric{{Kind: MetricCPU, Target: 50}},
		ScaleDown: &HPAScalingRules{StabilizationWindow: new(time.Duration), Policies: DefaultScaleDown().Policies}}
	w := newHPAWorld(t, cfg, 5)
	w.run(10*time.Second, steady(0.1)) // every pod ready once
	w.run(5*time.Second, func(n int) []pod {
		ps := readyPods(n, 0.1)
		ps[n-1] = pod{} // now restarting
		return ps
	})
	if w.replicas() != 3 {
		t.Fatalf("%d replicas, want ceil(5 × (4×0.1 + 1)/5 / 0.5) = 3 (%v)", w.replicas(), w.log)
	}
}

// Several metrics: the largest proposal wins.
func TestHPAMaxOfMetrics(t *testing.T) {
	w := newHPAWorld(t, HPAConfig{MaxReplicas: 20, Metrics: []HPAMetric{{Kind: MetricCPU, Target: 50}, {Kind: MetricConcurrency, Target: 5}}}, 2)
	w.run(15*time.Second, func(n int) []pod {
		ps := readyPods(n, 0.6) // cpu proposes ceil(2 × 1.2) = 3
		for i := range ps {
			ps[i].inFlight = 15 // concurrency proposes ceil(2 × 3) = 6
		}
		return ps
	})
	if w.replicas() != 6 {
		t.Errorf("%d replicas, want 6 from the concurrency metric", w.replicas())
	}
}

// Bounds: above max goes to max at the next sync; a target at zero
// replicas with min > 0 is left alone (scaling disabled).
func TestHPABounds(t *testing.T) {
	w := newHPAWorld(t, HPAConfig{MinReplicas: 2, MaxReplicas: 5, Metrics: []HPAMetric{{Kind: MetricCPU, Target: 50}}}, 8)
	w.run(15*time.Second, steady(0.5))
	if w.replicas() != 5 {
		t.Errorf("above max: %d replicas, want 5", w.replicas())
	}
	w = newHPAWorld(t, HPAConfig{MinReplicas: 2, MaxReplicas: 5}, 0)
	w.run(60*time.Second, func(int) []pod { return nil })
	if len(w.log) != 0 {
		t.Errorf("scaled a target at zero replicas: %v", w.log)
	}
	w = newHPAWorld(t, HPAConfig{MinReplicas: 3, MaxReplicas: 5, Metrics: []HPAMetric{{Kind: MetricCPU, Target: 50}}}, 8)
	w.run(15*time.Second, steady(0.01))
	if w.replicas() != 5 {
		t.Errorf("%d replicas after one sync from 8 (max 5), want 5", w.replicas())
	}
}

// Decisions come only at the sync period.
func TestHPASyncPeriod(t *testing.T) {
	w := newHPAWorld(t, HPAConfig{MaxReplicas: 100, SyncPeriod: 30 * time.Second, Metrics: []HPAMetric{{Kind: MetricCPU, Target: 10}}}, 2)
	w.run(29*time.Second, steady(1))
	if len(w.log) != 0 {
		t.Fatalf("decided before the first sync: %v", w.log)
	}
	w.run(time.Second, steady(1))
	if len(w.log) != 1 || w.log[0].at != 30*time.Second {
		t.Fatalf("decisions %v, want one at 30s", w.log)
	}
}

func TestHPAConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		cfg  HPAConfig
		want string
	}{
		{HPAConfig{MaxReplicas: 3}, "service: required"},
		{HPAConfig{Service: "s"}, "max_replicas"},
		{HPAConfig{Service: "s", MaxReplicas: 3, Metrics: []HPAMetric{{Kind: "gpu", Target: 1}}}, "metrics[0].kind"},
		{HPAConfig{Service: "s", MaxReplicas: 3, Metrics: []HPAMetric{{Kind: MetricCPU}}}, "metrics[0].target"},
		{HPAConfig{Service: "s", MaxReplicas: 3, ScaleUp: &HPAScalingRules{Policies: []HPAScalingPolicy{{Type: "Nodes", Value: 1, Period: time.Second}}}},
			"scale_up.policies[0].type"},
		{HPAConfig{Service: "s", MaxReplicas: 3, ScaleDown: &HPAScalingRules{Policies: []HPAScalingPolicy{}}}, "scale_down.policies"},
		{HPAConfig{Service: "s", MaxReplicas: 3, Tolerance: 2}, "tolerance"},
	} {
		_, err := NewHPA(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to name %q", tc.cfg, err, tc.want)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestHPABehaviourDefaultsFieldByField: a behaviour that sets some fields
// takes the defaults for the others (autoscaling/v2 copyHPAScalingRules),
// and the caller's rules are not changed.
func TestHPABehaviourDefaultsFieldByField(t *testing.T) {
	w := time.Minute
	down := &HPAScalingRules{StabilizationWindow: &w}
	h, err := NewHPA(HPAConfig{Service: "s", MaxReplicas: 5, ScaleDown: down, ScaleUp: &HPAScalingRules{Select: SelectMin}})
	if err != nil {
		t.Fatal(err)
	}
	c := h.Config()
	if *c.ScaleDown.StabilizationWindow != time.Minute || c.ScaleDown.Select != SelectMax || len(c.ScaleDown.Policies) != 1 ||
		c.ScaleDown.Policies[0] != (HPAScalingPolicy{Type: PolicyPercent, Value: 100, Period: 15 * time.Second}) {
		t.Errorf("scale down %+v", c.ScaleDown)
	}
	if c.ScaleUp.Select != SelectMin || *c.ScaleUp.StabilizationWindow != 0 || len(c.ScaleUp.Policies) != 2 {
		t.Errorf("scale up %+v", c.ScaleUp)
	}
	if down.Select != "" || down.Policies != nil {
		t.Errorf("the caller's rules changed: %+v", down)
	}
}
