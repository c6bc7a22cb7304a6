package autoscale

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// kedaSim drives a KEDA ScaledObject with a scripted request rate: every
// period of a second it builds the service's snapshot (the requests reach
// the ready instances, or are refused for lack of capacity at zero
// replicas, as the simulator does), calls Decide and applies SetReplicas at
// once, the new instances ready immediately.
type kedaSim struct {
	t        *testing.T
	k        *KEDA
	now      time.Duration
	replicas int
	snap     metrics.Snapshot
	acts     []scaleAct
}

const kedaPeriod = time.Second

func newKEDASim(t *testing.T, cfg KEDAConfig, replicas int) *kedaSim {
	t.Helper()
	if cfg.Service == "" {
		cfg.Service = "fn"
	}
	k, err := NewKEDA(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &kedaSim{t: t, k: k, replicas: replicas}
}

// kedaStats is the service's telemetry for a period with n requests.
func kedaStats(name string, replicas int, n int64) metrics.ServiceStats {
	st := metrics.ServiceStats{Name: name, Replicas: replicas, Ready: replicas}
	if replicas == 0 {
		st.Failures.NoCapacity = n
	} else {
		st.Arrivals, st.Completions = n, n
	}
	return st
}

// run advances to until; rps gives the requests per second of the period
// starting at its argument.
func (s *kedaSim) run(until time.Duration, rps func(time.Duration) float64) {
	s.t.Helper()
	for s.now < until {
		start := s.now
		s.now += kedaPeriod
		n := int64(math.Round(rps(start) * kedaPeriod.Seconds()))
		s.snap.At, s.snap.Period = s.now, kedaPeriod
		s.snap.Services = append(s.snap.Services[:0], kedaStats(s.k.cfg.Service, s.replicas, n))
		for _, a := range s.k.Decide(s.now, &s.snap) {
			r, ok := a.(control.SetReplicas)
			if !ok || r.Service != s.k.cfg.Service {
				s.t.Fatalf("%v: unexpected action %#v", s.now, a)
			}
			if r.Replicas > s.k.cfg.MaxReplicaCount || r.Replicas < 0 {
				s.t.Fatalf("%v: %d replicas outside [0, %d]", s.now, r.Replicas, s.k.cfg.MaxReplicaCount)
			}
			s.replicas = r.Replicas
			s.acts = append(s.acts, scaleAct{s.now, r.Replicas})
		}
	}
}

// rpsSteps is a rate that changes at the given times: rates[0] before
// at[0], rates[i+1] from at[i].
func kedaSteps(rates []float64, at ...time.Duration) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		i := 0
		for i < len(at) && t >= at[i] {
			i++
		}
		return rates[i]
	}
}

// From zero, the first poll that sees requests scales to 1 (KEDA's
// scaleFromZeroOrIdle); the HPA's next syncs then set ceil(rps / threshold)
// within the default scale-up policies (+4 pods or +100% per 15 s).
// Polls: 1s (creation), 31s, 61s; HPA syncs every 15 s.
func TestKEDAScalesFromZeroThenOnRate(t *testing.T) {
	s := newKEDASim(t, KEDAConfig{Threshold: 10, RateWindow: 10 * time.Second}, 0)
	s.run(sec(120), kedaSteps([]float64{0, 45, 95}, sec(40), sec(80)))
	checkActs(t, s.acts, []scaleAct{
		{sec(61), 1},  // first poll after the requests began at 40 s
		{sec(75), 5},  // HPA: ceil(45 / 10)
		{sec(90), 10}, // HPA: ceil(95 / 10), +100% allowed
	})
}

// KEDA checks the trigger only every PollingInterval: activity at 40 s
// wakes the service at the first poll after it.
func TestKEDAActivatesOnlyAtPolls(t *testing.T) {
	for _, tc := range []struct {
		poll time.Duration
		at   time.Duration
	}{{0, sec(61)}, {10 * time.Second, sec(41)}, {time.Minute, sec(61)}, {2 * time.Minute, sec(121)}} {
		// No HPA sync within the run.
		s := newKEDASim(t, KEDAConfig{Threshold: 10, PollingInterval: tc.poll, RateWindow: 10 * time.Second, HPASyncPeriod: time.Hour}, 0)
		s.run(sec(130), kedaSteps([]float64{0, 3}, sec(40)))
		checkActs(t, s.acts, []scaleAct{{tc.at, 1}})
	}
}

// The HPA holds the highest recommendation of the last 300 s: a drop in
// load at 200 s scales down only when the last recommendation of 10 (the
// sync at 195 s) leaves the window, at 495 s.
func TestKEDANoScaleDownInsideStabilisationWindow(t *testing.T) {
	s := newKEDASim(t, KEDAConfig{Threshold: 10, RateWindow: 10 * time.Second}, 10)
	s.run(sec(494), kedaSteps([]float64{95, 15}, sec(200)))
	checkActs(t, s.acts, nil)
	s.run(sec(600), kedaSteps([]float64{95, 15}, sec(200)))
	checkActs(t, s.acts, []scaleAct{{sec(495), 2}})
}

// The HPA's tolerance and the External AverageValue rule over all
// replicas: desired = ceil(total / target) when |1 − total / (target ×
// replicas)| > 0.1, in milli-units.
func TestKEDAExternalAverageValueRule(t *testing.T) {
	for _, tc := range []struct {
		current   int
		rate, thr float64
		want      int
	}{
		{4, 42, 10, 4},        // ratio 1.05: within the tolerance
		{4, 45, 10, 5},        // 1.125
		{4, 30, 10, 3},        // 0.75
		{4, 35, 10, 4},        // 0.875: ceil(3.5)
		{1, 0, 10, 0},         // no load: the HPA's minReplicas bounds it later
		{3, 0.0019, 0.001, 1}, // milli-units: 1.9 m truncates to 1 m
	} {
		if got := kedaReplicas(tc.current, tc.rate, tc.thr, 0.1); got != tc.want {
			t.Errorf("kedaReplicas(%d, %v, %v) = %d, want %d", tc.current, tc.rate, tc.thr, got, tc.want)
		}
	}
}

// With minReplicaCount 0 KEDA scales to zero at the first poll more than
// cooldownPeriod after the trigger was last active (time.Before is
// strict); never before. The load stops at 100 s; the last active poll is
// at 91 s (rate window 10 s).
func TestKEDAScalesToZeroOnlyAfterCooldown(t *testing.T) {
	for _, tc := range []struct {
		cooldown time.Duration
		at       time.Duration
	}{{0, sec(421)}, {300 * time.Second, sec(421)}, {60 * time.Second, sec(181)}, {290 * time.Second, sec(391)}} {
		s := newKEDASim(t, KEDAConfig{Threshold: 10, RateWindow: 10 * time.Second, CooldownPeriod: tc.cooldown}, 1)
		load := kedaSteps([]float64{5, 0}, sec(100))
		s.run(tc.at-time.Second, load)
		checkActs(t, s.acts, nil)
		s.run(sec(900), load)
		checkActs(t, s.acts, []scaleAct{{tc.at, 0}})
	}
}

// A ScaledObject whose trigger was never active scales to zero at once
// ("when you first create your Deployment, KEDA will immediately scale it
// to minReplicaCount"), or after initialCooldownPeriod.
func TestKEDANeverActiveScalesToZeroAtOnce(t *testing.T) {
	for _, tc := range []struct {
		initial time.Duration
		at      time.Duration
	}{{0, sec(1)}, {120 * time.Second, sec(121)}} {
		s := newKEDASim(t, KEDAConfig{Threshold: 10, InitialCooldownPeriod: tc.initial}, 3)
		s.run(sec(600), kedaSteps([]float64{0}))
		checkActs(t, s.acts, []scaleAct{{tc.at, 0}})
	}
}

// With minReplicaCount 2: an inactive service below it is raised to it,
// activity at zero scales to it, and it never goes to zero.
func TestKEDAMinReplicaCount(t *testing.T) {
	s := newKEDASim(t, KEDAConfig{Threshold: 10, MinReplicaCount: 2}, 0)
	s.run(sec(1000), kedaSteps([]float64{0}))
	checkActs(t, s.acts, []scaleAct{{sec(1), 2}})

	s = newKEDASim(t, KEDAConfig{Threshold: 10, MinReplicaCount: 2, RateWindow: 10 * time.Second}, 0)
	s.run(sec(1000), kedaSteps([]float64{5, 0}, sec(100)))
	checkActs(t, s.acts, []scaleAct{{sec(1), 2}})
}

// The trigger is active only above activationThreshold.
func TestKEDAActivationThreshold(t *testing.T) {
	s := newKEDASim(t, KEDAConfig{Threshold: 10, ActivationThreshold: 5, RateWindow: 10 * time.Second}, 0)
	s.run(sec(300), kedaSteps([]float64{5}))
	checkActs(t, s.acts, nil)
	s.run(sec(400), kedaSteps([]float64{6}))
	checkActs(t, s.acts, []scaleAct{{sec(301), 1}})
}

// maxReplicaCount bounds the HPA.
func TestKEDAMaxReplicaCount(t *testing.T) {
	s := newKEDASim(t, KEDAConfig{Threshold: 10, MaxReplicaCount: 4, RateWindow: 10 * time.Second}, 1)
	s.run(sec(300), kedaSteps([]float64{1000}))
	checkActs(t, s.acts, []scaleAct{{sec(15), 4}})
}

// The rate counts requests refused for lack of capacity; the window's rate
// prorates a period that straddles its start and divides by the time
// covered when the run is younger than the window.
func TestKEDARateWindow(t *testing.T) {
	st := metrics.ServiceStats{Arrivals: 7}
	st.Failures.NoCapacity = 3
	if got := kedaOffered(&st); got != 10 {
		t.Fatalf("offered %v, want 10", got)
	}
	var w countWindow
	w.add(0, sec(4), 40, time.Minute) // 10/s
	if got := w.rate(sec(4), 10*time.Second); got != 10 {
		t.Fatalf("rate over 4 s of a 10 s window: %v, want 10", got)
	}
	w.add(sec(4), sec(12), 16, time.Minute) // 2/s
	// Window [2 s, 12 s): 2 s of the first period (20) and the second (16).
	if got := w.rate(sec(12), 10*time.Second); math.Abs(got-3.6) > 1e-12 {
		t.Fatalf("rate %v, want 3.6", got)
	}
	if got := w.max(sec(12), 10*time.Second); got != 40 {
		t.Fatalf("max %v, want 40", got)
	}
	if got := w.max(sec(14), 10*time.Second); got != 16 {
		t.Fatalf("max %v, want 16 (the 40 ended before the window)", got)
	}
}

func TestKEDAConfigDefaults(t *testing.T) {
	k, err := NewKEDA(KEDAConfig{Service: "s", Threshold: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := KEDAConfig{Service: "s", MaxReplicaCount: 100, Threshold: 100, PollingInterval: 30 * time.Second,
		CooldownPeriod: 300 * time.Second, RateWindow: 2 * time.Minute, HPASyncPeriod: 15 * time.Second, Tolerance: 0.1}
	if got := k.Config(); got != want {
		t.Fatalf("config\n got %+v\nwant %+v", got, want)
	}
	h := k.hpa.Config()
	if h.MinReplicas != 1 || h.MaxReplicas != 100 || *h.ScaleDown.StabilizationWindow != 300*time.Second {
		t.Fatalf("the HPA KEDA creates: %+v", h)
	}
}

func TestKEDAConfigErrorsNameTheField(t *testing.T) {
	ok := KEDAConfig{Service: "s", Threshold: 10}
	for _, tc := range []struct {
		mod  func(*KEDAConfig)
		want string
	}{
		{func(c *KEDAConfig) { c.Service = "" }, "service"},
		{func(c *KEDAConfig) { c.Threshold = 0 }, "threshold"},
		{func(c *KEDAConfig) { c.Threshold = math.Inf(1) }, "threshold"},
		{func(c *KEDAConfig) { c.ActivationThreshold = math.NaN() }, "activation_threshold"},
		{func(c *KEDAConfig) { c.MinReplicaCount = -1 }, "min_replica_count"},
		{func(c *KEDAConfig) { c.MinReplicaCount, c.MaxReplicaCount = 5, 3 }, "max_replica_count"},
		{func(c *KEDAConfig) { c.PollingInterval = -time.Second }, "polling_interval"},
		{func(c *KEDAConfig) { c.CooldownPeriod = -time.Second }, "cooldown_period"},
		{func(c *KEDAConfig) { c.InitialCooldownPeriod = -time.Second }, "initial_cooldown_period"},
		{func(c *KEDAConfig) { c.RateWindow = -time.Second }, "rate_window"},
		{func(c *KEDAConfig) { c.HPASyncPeriod = -time.Second }, "hpa_sync_period"},
		{func(c *KEDAConfig) { c.Tolerance = 1.5 }, "tolerance"},
	} {
		cfg := ok
		tc.mod(&cfg)
		_, err := NewKEDA(cfg)
		if !kedaNamesField(err, "new keda: ", tc.want) {
			t.Errorf("%+v: error %v, want it to name %q", cfg, err, tc.want)
		}
	}
	if _, err := NewKEDA(ok); err != nil {
		t.Fatal(err)
	}
}

// kedaNamesField reports whether one of the errors joined in err, after
// prefix, starts with "field:".
func kedaNamesField(err error, prefix, field string) bool {
	if err == nil {
		return false
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if strings.HasPrefix(strings.TrimPrefix(line, prefix), field+":") {
			return true
		}
	}
	return false
}

// A service absent from the snapshot gets no decision.
func TestKEDAUnknownService(t *testing.T) {
	k, err := NewKEDA(KEDAConfig{Service: "s", Threshold: 1})
	if err != nil {
		t.Fatal(err)
	}
	snap := metrics.Snapshot{Period: kedaPeriod, Services: []metrics.ServiceStats{kedaStats("other", 0, 500)}}
	for now := kedaPeriod; now < time.Minute; now += kedaPeriod {
		if acts := k.Decide(now, &snap); len(acts) != 0 {
			t.Fatalf("actions %v", acts)
		}
	}
}

func TestKEDADecideAllocatesNothingInSteadyState(t *testing.T) {
	k, err := NewKEDA(KEDAConfig{Service: "s", Threshold: 10, PollingInterval: 2 * time.Second, HPASyncPeriod: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	snap := metrics.Snapshot{Period: kedaPeriod, Services: []metrics.ServiceStats{
		kedaStats("a", 1, 3), kedaStats("s", 4, 40)}}
	if a := steadyAllocs(t, k, &snap, kedaPeriod, 600); a != 0 {
		t.Fatalf("%v allocations per Decide", a)
	}
}
