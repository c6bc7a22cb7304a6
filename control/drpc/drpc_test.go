package drpc

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/learn/forecast"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/metrics"
)

// TestNotifierFollowsAlgorithm4: no verdict before npr rewards, then
// retraining exactly when the average of the last npr is below TH.
func TestNotifierFollowsAlgorithm4(t *testing.T) {
	n := NewNotifier(3, 0.5, 0)
	for i, tc := range []struct {
		r    float64
		want bool
	}{
		{0.1, false}, {0.1, false}, // fewer than npr: never (line 8)
		{0.1, true},  // average 0.1 < 0.5
		{0.9, true},  // (0.1+0.1+0.9)/3 = 0.37
		{0.9, false}, // (0.1+0.9+0.9)/3 = 0.63: the oldest left the ring
		{0.0, false}, // (0.9+0.9+0)/3 = 0.6
		{0.0, true},  // 0.3
	} {
		if got := n.Add(tc.r); got != tc.want {
			t.Errorf("reward %d (%v): retrain %v, want %v (average %v)", i, tc.r, got, tc.want, n.Average())
		}
	}
	n.Reset()
	if n.Add(0) {
		t.Error("after Reset the history must fill again")
	}
}

// TestRelativeNotifier: TH is set from the first npr rewards (0.9 times
// their average), then Algorithm 4 runs with it; Reset sets it anew.
func TestRelativeNotifier(t *testing.T) {
	n := NewNotifier(2, 0, 0.9)
	for i, tc := range []struct {
		r, th float64
		want  bool
	}{
		{0.6, 0, false}, {0.6, 0.54, false}, // the first window: TH = 0.9 × 0.6, no verdict yet
		{0.5, 0.54, false}, // (0.6+0.5)/2 = 0.55
		{0.5, 0.54, true},  // 0.5 < 0.54
	} {
		if got := n.Add(tc.r); got != tc.want || math.Abs(n.TH-tc.th) > 1e-12 {
			t.Errorf("reward %d (%v): retrain %v, TH %v; want %v, %v", i, tc.r, got, n.TH, tc.want, tc.th)
		}
	}
	n.Reset()
	n.Add(0.5)
	if n.Add(0.5) || math.Abs(n.TH-0.45) > 1e-12 {
		t.Errorf("after Reset: TH %v, want 0.45 from the new window", n.TH)
	}
}

// TestRewardEquations checks equations 1-3 at known points.
func TestRewardEquations(t *testing.T) {
	r := DefaultReward(500 * time.Millisecond)
	r.UtilWeight = 1 // the paper's
	for _, tc := range []struct{ rt, failed, want float64 }{
		{0.2, 0, 1},
		{0.5, 0, 1},
		{1.0, 0, math.Exp(-1)}, // ((1-0.5)/0.5)² = 1
		{1.5, 0, math.Exp(-4)}, // ((1.5-0.5)/0.5)² = 4
		{0.2, 0.25, 0.75},      // a quarter failed
		{1.0, 0.5, math.Exp(-1) / 2},
	} {
		if got := r.QoS(tc.rt, tc.failed); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("QoS(%v, %v) = %v, want %v", tc.rt, tc.failed, got, tc.want)
		}
	}
	// Equation 2: 1 + |0.6-u_cpu|³ + |0.75-u_mem|³.
	if got, want := r.Util(0.6, 0.75, true), 1.0; got != want {
		t.Errorf("Util at the targets = %v, want %v", got, want)
	}
	if got, want := r.Util(0.1, 0.25, true), 1+0.125+0.125; math.Abs(got-want) > 1e-12 {
		t.Errorf("Util(0.1, 0.25) = %v, want %v", got, want)
	}
	if got, want := r.Util(1.0, 0, false), 1+0.4*0.4*0.4; math.Abs(got-want) > 1e-12 {
		t.Errorf("Util without a memory limit = %v, want %v", got, want)
	}
	r.UtilWeight = 8
	if got, want := r.Util(0.2, 0, false), 1+8*0.4*0.4*0.4; math.Abs(got-want) > 1e-12 {
		t.Errorf("Util with weight 8 = %v, want %v", got, want)
	}
	if got := r.Of(0.5, 1.25); got != 0.4 {
		t.Errorf("equation 3: %v, want 0.4", got)
	}
}

// TestGuardRails: Algorithm 2's threshold, steps and bounds, and the rails.
func TestGuardRails(t *testing.T) {
	d := Deployment{Name: "s", MinReplicas: 1, MaxReplicas: 5, CPUMin: 0.25, CPUMax: 1, MemoryMin: 100, MemoryMax: 1000}
	opt := d
	opt.MinReplicas, opt.Optional = 0, true
	st := Steps{CPU: 0.1, Memory: 64, Replicas: 1}
	s := metrics.ServiceStats{Name: "s", Replicas: 1, Ready: 1, CPULimit: 0.5, MemoryLimit: 500, MemoryUse: 300}
	for _, tc := range []struct {
		name  string
		d     Deployment
		s     metrics.ServiceStats
		brown bool
		a     [ActionDim]float64
		want  Decision
	}{
		{"below the threshold nothing moves", d, s, false, [4]float64{0.5, -0.5, 0.49, 0}, Decision{Replicas: 1, CPU: 0.5, Memory: 500}},
		{"one step up each", d, s, false, [4]float64{1, 1, 1, 0}, Decision{Replicas: 2, CPU: 0.6, Memory: 564}},
		{"not below one replica", d, s, false, [4]float64{0, 0, -1, 0}, Decision{Replicas: 1, CPU: 0.5, Memory: 500, ClippedByRail: true}},
		{"memory stays above use x 1.25", d, s, false, [4]float64{0, -1, 0, 0}, Decision{Replicas: 1, CPU: 0.5, Memory: 436}},
		{"memory floor", d, metrics.ServiceStats{Replicas: 1, CPULimit: 0.5, MemoryLimit: 400, MemoryUse: 310}, false, [4]float64{0, -1, 0, 0},
			Decision{Replicas: 1, CPU: 0.5, Memory: 387.5, ClippedByRail: true}},
		{"cpu floor", d, metrics.ServiceStats{Replicas: 1, CPULimit: 0.3, MemoryLimit: 500}, false, [4]float64{-1, 0, 0, 0},
			Decision{Replicas: 1, CPU: 0.25, Memory: 500, ClippedByRail: true}},
		{"max replicas", d, metrics.ServiceStats{Replicas: 5, CPULimit: 0.5, MemoryLimit: 500}, false, [4]float64{0, 0, 1, 0},
			Decision{Replicas: 5, CPU: 0.5, Memory: 500, ClippedByRail: true}},
		{"brownout ignored unless optional", d, s, false, [4]float64{0, 0, -1, 1}, Decision{Replicas: 1, CPU: 0.5, Memory: 500, ClippedByRail: true}},
		{"optional and browned out: to zero", opt, s, false, [4]float64{0, 0, -1, 1}, Decision{Replicas: 0, CPU: 0.5, Memory: 500, Brownout: true}},
		{"optional, not browned out: one stays", opt, s, true, [4]float64{0, 0, -1, -1}, Decision{Replicas: 1, CPU: 0.5, Memory: 500, ClippedByRail: true}},
		{"no leaving brownout without a ready replica: one starts", opt, metrics.ServiceStats{Replicas: 0, CPULimit: 0.5, MemoryLimit: 500}, true,
			[4]float64{0, 0, 0, -1}, Decision{Replicas: 1, CPU: 0.5, Memory: 500, Brownout: true, ClippedByRail: true}},
		{"an OOM kill raises memory whatever the action", d, metrics.ServiceStats{Replicas: 1, CPULimit: 0.5, MemoryLimit: 500, Failures: metrics.Failures{OOM: 3}}, false,
			[4]float64{0, -1, 0, 0}, Decision{Replicas: 1, CPU: 0.5, Memory: 600, ClippedByRail: true}},
		{"brownout ends once a replica is ready", opt, metrics.ServiceStats{Replicas: 1, Ready: 1, CPULimit: 0.5, MemoryLimit: 500}, true,
			[4]float64{0, 0, 0, -1}, Decision{Replicas: 1, CPU: 0.5, Memory: 500}},
	} {
		got := Guard(&tc.d, st, &tc.s, tc.brown, tc.a[:])
		got.changedScale, got.changedSize, got.changedBrown = false, false, false
		if math.Abs(got.CPU-tc.want.CPU) < 1e-12 {
			got.CPU = tc.want.CPU
		}
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func testPolicy(t testing.TB) *Policy {
	deps := []Deployment{{Name: "front", MinReplicas: 1, MaxReplicas: 10, CPUMin: 0.25, CPUMax: 2, Period: Duration(time.Second)},
		{Name: "back", MinReplicas: 1, MaxReplicas: 10, CPUMin: 0.25, CPUMax: 2, Period: Duration(2 * time.Second)}}
	p, err := NewPolicy(Policy{Period: Duration(time.Second), Deployments: deps, Ingress: []string{"front"},
		Steps: Steps{CPU: 0.1, Replicas: 1}, Reward: DefaultReward(time.Second), StudentHidden: []int{16, 16},
		TeacherHidden: []int{32}, Notifier: NotifierConfig{NPR: 5, TH: 0.5}}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testSnapshot(at time.Duration, rate int64) *metrics.Snapshot {
	return &metrics.Snapshot{At: at, Period: time.Second, Services: []metrics.ServiceStats{
		{Name: "front", Replicas: 2, Ready: 2, CPULimit: 0.5, Arrivals: rate, Completions: rate, CPUUse: 0.6,
			Latency: metrics.LatencySum{Count: rate, Sum: 0.1 * float64(rate), Max: 0.3}},
		{Name: "back", Replicas: 3, Ready: 3, CPULimit: 0.5, Arrivals: 2 * rate, Completions: 2 * rate, CPUUse: 1.2,
			Latency: metrics.LatencySum{Count: 2 * rate, Sum: 0.05 * float64(rate), Max: 0.2}},
	}}
}

// recorder is a fallback that asks for 7 replicas of every service.
type recorder struct{ calls int }

func (r *recorder) Decide(time.Duration, *metrics.Snapshot) []control.Action {
	r.calls++
	return []control.Action{control.SetReplicas{Service: "front", Replicas: 7}, control.SetReplicas{Service: "back", Replicas: 7}}
}

// TestControllerPeriodsAndFallback: each student decides at its own
// period; a deployment whose inputs leave the trained range gets the
// fallback's actions, and only it.
func TestControllerPeriodsAndFallback(t *testing.T) {
	p := testPolicy(t)
	fb := &recorder{}
	c, err := NewController(p, Options{Fallback: []control.Controller{fb}})
	if err != nil {
		t.Fatal(err)
	}
	c.Decide(time.Second, testSnapshot(time.Second, 100))
	if s := c.Stats(); s.Decisions != 1 || s.Fallbacks != 0 || fb.calls != 1 {
		t.Fatalf("at 1 s: %+v, fallback called %d times; want one decision (back decides every 2 s)", s, fb.calls)
	}
	c.Decide(2*time.Second, testSnapshot(2*time.Second, 100))
	if s := c.Stats(); s.Decisions != 3 {
		t.Fatalf("at 2 s: %d decisions, want 3", s.Decisions)
	}
	// A trained range that excludes back's rate sends back, and only back, to the fallback.
	p.Low, p.High = make([]float64, LocalFeatures), make([]float64, LocalFeatures)
	for k := range p.Low {
		p.Low[k], p.High[k] = -100, 100
	}
	p.High[fRate] = math.Log1p(150)
	acts := c.Decide(4*time.Second, testSnapshot(4*time.Second, 100))
	if s := c.Stats(); s.Fallbacks != 1 {
		t.Fatalf("fallbacks %d, want 1", s.Fallbacks)
	}
	var fallbackActs int
	for _, a := range acts {
		if r, ok := a.(control.SetReplicas); ok && r.Replicas == 7 {
			if r.Service != "back" {
				t.Errorf("fallback action for %s, which is in range", r.Service)
			}
			fallbackActs++
		}
	}
	if fallbackActs != 1 {
		t.Errorf("%d fallback actions applied, want 1 (for back): %v", fallbackActs, acts)
	}
	// A snapshot without the deployments leaves everything to the fallback.
	acts = c.Decide(6*time.Second, &metrics.Snapshot{Period: time.Second})
	if len(acts) != 2 {
		t.Errorf("missing services: %v, want the fallback's two actions", acts)
	}
}

// TestControllerDecisionAllocatesNothing: a period of decisions by the
// students allocates nothing once warm.
func TestControllerDecisionAllocatesNothing(t *testing.T) {
	for _, over := range []*OverHPA{nil, {Target: 75, Range: 1}} {
		p := testPolicy(t)
		p.OverHPA = over
		c, err := NewController(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		snap := overSnapshot(2*time.Second, [2]int{2, 3}, 0.5)
		c.Decide(2*time.Second, snap)
		now := 2 * time.Second
		if n := testing.AllocsPerRun(100, func() { now += time.Second; c.Decide(now, snap) }); n != 0 {
			t.Errorf("over the HPA %v: %v allocations per period, want 0", over != nil, n)
		}
	}
}

// BenchmarkStudentDecision is one deployment's decision: features, the
// student network, the base rule or the HPA's new target, the hold and the
// guard rails (the paper's 6e-5 s of CPU).
func BenchmarkStudentDecision(b *testing.B) {
	for _, over := range []bool{false, true} {
		name := "base"
		p := testPolicy(b)
		p.Base, p.Hold = &Base{Low: 0.3, High: 0.75, Stabilize: 12}, &Hold{High: 0.75} // as trained with --residual
		if over {
			name, p.Base, p.OverHPA = "over-hpa", nil, &OverHPA{Target: 75, Range: 1}
		}
		b.Run(name, func(b *testing.B) {
			c, err := NewController(p, Options{})
			if err != nil {
				b.Fatal(err)
			}
			snap := testSnapshot(time.Second, 100)
			c.Decide(time.Second, snap)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				c.policyAction(0, false)
				if c.hpas != nil {
					c.hpas.Steer(0, c.act)
				}
				s := c.obs.Service(snap, 0)
				dec := Guard(&c.pol.Deployments[0], c.pol.Steps, s, false, c.act)
				c.acts = dec.Actions(c.acts[:0], "front", s)
			}
		})
	}
}

// TestRetrainingRefreshesStudents: when the average reward of the last npr
// periods falls below TH, the teacher takes over for Retrain periods and
// then the students are refit on what they recorded, which changes them.
func TestRetrainingRefreshesStudents(t *testing.T) {
	p := testPolicy(t)
	c, err := NewController(p, Options{Retrain: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	in := make([]float32, LocalFeatures)
	before := p.Student(0).NewPredictor().Predict(make([]float32, ActionDim), in)
	before = append([]float32(nil), before...)
	slow := func(at time.Duration) *metrics.Snapshot {
		s := testSnapshot(at, 100)
		s.Services[0].Latency.Sum = 5 * float64(s.Services[0].Latency.Count) // 5 s: QoS e^-16
		return s
	}
	sum := 0.0 // of the periods' rewards: Stats.Reward is their mean
	for k := 1; k <= 5; k++ {
		c.Decide(time.Duration(k)*time.Second, slow(time.Duration(k)*time.Second))
		sum += c.Reward()
	}
	if s := c.Stats(); s.Notified != 1 || c.teaching != 2 {
		t.Fatalf("after 5 bad periods: %+v, teaching %d; want one notification and the teacher in charge", s, c.teaching)
	}
	for k := 6; k <= 7; k++ {
		c.Decide(time.Duration(k)*time.Second, testSnapshot(time.Duration(k)*time.Second, 100))
		sum += c.Reward()
	}
	if s := c.Stats(); s.Retrained != 1 || c.teaching != 0 {
		t.Fatalf("after the teacher's periods: %+v, teaching %d", s, c.teaching)
	}
	after := p.Student(0).NewPredictor().Predict(make([]float32, ActionDim), in)
	if slices.Equal(before, after) {
		t.Error("the refresh left student 0 unchanged")
	}
	// The reward before is the window's that fired; after, the first full
	// window's once the students are back.
	low := c.Stats().RewardBefore
	if !(low > 0 && low < 0.1) || c.Stats().RewardAfter != 0 {
		t.Fatalf("before %v (want the slow periods' few hundredths), after %v (want none yet)", low, c.Stats().RewardAfter)
	}
	for k := 8; k <= 12; k++ {
		c.Decide(time.Duration(k)*time.Second, testSnapshot(time.Duration(k)*time.Second, 100))
		sum += c.Reward()
	}
	if s := c.Stats(); !(s.RewardAfter > 10*low) {
		t.Errorf("after five good periods: reward after %v, before %v", s.RewardAfter, s.RewardBefore)
	}
	if s := c.Stats(); math.Abs(s.Reward-sum/12) > 1e-9 || !(s.Reward > low && s.Reward < s.RewardAfter) {
		t.Errorf("mean reward %v, want %v (the 12 periods'), between %v and %v", s.Reward, sum/12, low, s.RewardAfter)
	}
}

// With the teacher's critics in the policy, retraining fine-tunes the
// teacher online (it explores and learns from the periods' rewards) before
// the students are refreshed; the critics survive the policy file.
func TestRetrainingFineTunesTheTeacher(t *testing.T) {
	p := testPolicy(t)
	td3 := rl.DefaultTD3Config()
	td3.Hidden, td3.BatchSize = p.TeacherHidden, 2
	critics := []*nn.MLP[float32]{
		nn.NewMLP[float32](rand.New(rand.NewPCG(3, 3)), "q1", []int{TeacherInput(2) + ActionDim, 32, 1}, nn.ReLU, nn.Identity),
		nn.NewMLP[float32](rand.New(rand.NewPCG(4, 4)), "q2", []int{TeacherInput(2) + ActionDim, 32, 1}, nn.ReLU, nn.Identity)}
	if err := p.SetCritics(critics, NewFineTune(td3, 4)); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	q, err := ReadPolicy(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if q.FineTune == nil || len(q.Critics()) != 2 || !slices.Equal(q.Critics()[1].Params()[0].Value.Data, critics[1].Params()[0].Value.Data) {
		t.Fatal("the critics did not survive the policy file")
	}
	c, err := NewController(q, Options{Retrain: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	teacher := slices.Clone(q.Teacher().Params()[0].Value.Data)
	student := slices.Clone(q.Student(1).Params()[0].Value.Data)
	for k := 1; k <= 9; k++ {
		s := testSnapshot(time.Duration(k)*time.Second, 100)
		if k <= 5 {
			s.Services[0].Latency.Sum = 5 * float64(s.Services[0].Latency.Count) // 5 s: the notifier fires at 5
		}
		c.Decide(time.Duration(k)*time.Second, s)
	}
	if st := c.Stats(); st.Notified != 1 || st.Retrained != 1 {
		t.Fatalf("stats %+v, want one notification and one refresh", st)
	}
	if slices.Equal(teacher, q.Teacher().Params()[0].Value.Data) {
		t.Error("the teacher did not learn while in charge")
	}
	if slices.Equal(student, q.Student(1).Params()[0].Value.Data) {
		t.Error("student 1 was not refreshed")
	}
}

// fixedForecast predicts a constant ratio and records what it was given.
type fixedForecast struct {
	ratio float64
	rates []float64
}

func (f *fixedForecast) Next(rate float64) float64 {
	f.rates = append(f.rates, rate)
	return f.ratio
}

// TestForecastFeature: the forecaster sees each period's ingress rate once,
// its ratio becomes the forecast feature, and the trend still compares
// this period's rate with the last one's.
func TestForecastFeature(t *testing.T) {
	fc := &fixedForecast{ratio: 2}
	c, err := NewController(testPolicy(t), Options{Forecast: fc})
	if err != nil {
		t.Fatal(err)
	}
	c.Decide(time.Second, testSnapshot(time.Second, 100))
	c.Decide(2*time.Second, testSnapshot(2*time.Second, 200))
	if len(fc.rates) != 2 || fc.rates[0] != 100 || fc.rates[1] != 200 {
		t.Fatalf("forecaster saw %v, want [100 200]", fc.rates)
	}
	f := c.obs.Local(0)
	if math.Abs(f[fForecast]-math.Log(2)) > 1e-12 || math.Abs(f[fTrend]-math.Log(201.0/101)) > 1e-12 {
		t.Errorf("forecast %v (want ln 2), trend %v (want ln(201/101))", f[fForecast], f[fTrend])
	}
}

// TestRateForecast: no change expected until a window is full, then the
// forecaster's last horizon over the current rate (a seasonal-naive
// forecaster with season 2 on an alternating series gives the exact ratio).
func TestRateForecast(t *testing.T) {
	f := NewRateForecast(forecast.NewSeasonalNaive(1, 2, 2))
	got := []float64{f.Next(100)}
	for _, r := range []float64{200, 100, 200} {
		got = append(got, f.Next(r))
	}
	// Window 2: the first rate gives 1; then 2 periods ahead of 200 is 200
	// (ratio 1), of 100 is 100: the season repeats.
	for i, want := range []float64{1, 1, 1, 1} {
		if math.Abs(got[i]-want) > 1e-12 {
			t.Errorf("period %d: ratio %v, want %v (all %v)", i, got[i], want, got)
		}
	}
	g := NewRateForecast(forecast.NewSeasonalNaive(1, 1, 2))
	g.Next(100)
	if r := g.Next(200); math.Abs(r-0.5) > 1e-12 {
		t.Errorf("one period ahead of 200 after 100, 200: ratio %v, want 0.5 (back to 100)", r)
	}
	if n := testing.AllocsPerRun(100, func() { g.Next(150) }); n != 0 {
		t.Errorf("%v allocations per period", n)
	}
}
