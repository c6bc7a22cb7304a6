package autoscale

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// vpaSim drives a VPA with scripted use: every period each of n ready
// instances (ids 0..n−1) uses cpu(t) cores and mem(t) MB, t the period's
// start; Decide is called and SetResources applied at once.
type vpaSim struct {
	t                  *testing.T
	v                  *VPA
	now, period        time.Duration
	n                  int
	cpuLimit, memLimit float64
	cpu, mem           func(time.Duration) float64
	snap               metrics.Snapshot
	acts               []vpaAct
}

// vpaAct is one SetResources decision.
type vpaAct struct {
	At       time.Duration
	CPU      float64
	MemoryMB float64
}

const vpaTestMB = 1 << 20

func newVPASim(t *testing.T, cfg VPAConfig, n int, cpuLimit, memLimit float64) *vpaSim {
	t.Helper()
	if cfg.Service == "" {
		cfg.Service = "svc"
	}
	v, err := NewVPA(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &vpaSim{t: t, v: v, period: time.Minute, n: n, cpuLimit: cpuLimit, memLimit: memLimit,
		cpu: vpaConst(0), mem: vpaConst(0)}
}

func vpaConst(x float64) func(time.Duration) float64 { return func(time.Duration) float64 { return x } }

// step advances one period; mod, if not nil, edits the service's stats
// before Decide.
func (s *vpaSim) step(mod func(*metrics.ServiceStats)) {
	s.t.Helper()
	start := s.now
	s.now += s.period
	s.snap.At, s.snap.Period = s.now, s.period
	if len(s.snap.Services) == 0 {
		s.snap.Services = make([]metrics.ServiceStats, 2)
	}
	s.snap.Services[0].Name = "other"
	st := &s.snap.Services[1]
	inst := st.Instances[:0]
	*st = metrics.ServiceStats{Name: s.v.cfg.Service, Replicas: s.n, Ready: s.n, CPULimit: s.cpuLimit, MemoryLimit: s.memLimit}
	for i := range s.n {
		c, m := s.cpu(start), s.mem(start)
		inst = append(inst, metrics.InstanceStats{ID: i, Ready: true, CPUUse: c, Utilisation: c / s.cpuLimit, MemoryUse: m})
		st.CPUUse += c
		st.MemoryUse += m
	}
	st.Instances = inst
	if mod != nil {
		mod(st)
	}
	for _, a := range s.v.Decide(s.now, &s.snap) {
		r, ok := a.(control.SetResources)
		if !ok || r.Service != s.v.cfg.Service || !(r.CPU > 0) || !(r.MemoryMB > 0) {
			s.t.Fatalf("%v: unexpected action %#v", s.now, a)
		}
		s.acts = append(s.acts, vpaAct{s.now, r.CPU, r.MemoryMB})
		s.cpuLimit, s.memLimit = r.CPU, r.MemoryMB
	}
}

func (s *vpaSim) run(until time.Duration) {
	s.t.Helper()
	for s.now < until {
		s.step(nil)
	}
}

func (s *vpaSim) rec() VPARecommendation {
	s.t.Helper()
	r, ok := s.v.Recommendation()
	if !ok {
		s.t.Fatalf("%v: no recommendation", s.now)
	}
	return r
}

// vpaEnd is the end of the histogram bucket holding x: the first bucket is
// [0, first), bucket b ≥ 1 starts at first × (r^b − 1)/(r − 1) with
// r = 1.05, so x ≥ first lies in b = ⌊log_r(x(r − 1)/first + 1)⌋.
func vpaEnd(x, first float64) float64 {
	const r = 1.05
	b := 0.0
	if x >= first {
		b = math.Floor(math.Log(x*(r-1)/first+1) / math.Log(r))
	}
	return first * (math.Pow(r, b+1) - 1) / (r - 1)
}

// vpaEst is an estimate of amount (millicores or bytes) with the 15%
// margin, both truncated to whole amounts as ResourceAmount is.
func vpaEst(amount float64) int64 {
	a := int64(amount)
	return a + int64(float64(a)*0.15)
}

// vpaCPUEst (millicores) and vpaMemEst (bytes) of a constant use: its
// bucket's end plus the margin.
func vpaCPUEst(cores float64) int64 { return vpaEst(vpaEnd(cores, 0.01) * 1000) }
func vpaMemEst(mb float64) int64    { return vpaEst(vpaEnd(mb*vpaTestMB, 1e7)) }

// vpaConf scales by the confidence multiplier (1 + m/conf)^e.
func vpaConf(a int64, m, e, conf float64) int64 { return int64(float64(a) * math.Pow(1+m/conf, e)) }

func vpaInCores(milli int64) float64 { return float64(milli) / 1000 }
func vpaInMB(bytes int64) float64    { return float64(bytes) / vpaTestMB }

func vpaCheckOrder(t *testing.T, r VPARecommendation) {
	t.Helper()
	if !(r.LowerBound.CPU <= r.Target.CPU && r.Target.CPU <= r.UpperBound.CPU &&
		r.LowerBound.MemoryMB <= r.Target.MemoryMB && r.Target.MemoryMB <= r.UpperBound.MemoryMB) {
		t.Fatalf("bounds out of order: %+v", r)
	}
}

// A constant 0.5 cores and 300 MB for a day: every percentile is the end
// of the value's bucket, plus 15%; the bounds are scaled by the confidence
// multipliers of a history of 1439 minutes and 1440 samples.
func TestVPAConstantUseTargetIsBucketEndPlusMargin(t *testing.T) {
	s := newVPASim(t, VPAConfig{Mode: VPAModeOff}, 1, 1, 1024)
	s.cpu, s.mem = vpaConst(0.5), vpaConst(300)
	s.run(24 * time.Hour)
	r := s.rec()

	// Worked: 0.5 cores lies in bucket 25 = [0.4773, 0.5111); its end is
	// 511 millicores, plus 15% (76) is 587.
	if got := vpaEnd(0.5, 0.01); math.Abs(got-0.5111345) > 1e-6 {
		t.Fatalf("bucket end of 0.5 cores %v", got)
	}
	cpu, mem := vpaCPUEst(0.5), vpaMemEst(300)
	if cpu != 587 || r.Target.CPU != 0.587 {
		t.Fatalf("cpu target %v, estimate %dm, want 0.587", r.Target.CPU, cpu)
	}
	if r.Target.MemoryMB != vpaInMB(mem) {
		t.Fatalf("memory target %v MB, want %v", r.Target.MemoryMB, vpaInMB(mem))
	}
	if r.UncappedTarget != r.Target {
		t.Fatalf("uncapped %+v != target %+v", r.UncappedTarget, r.Target)
	}
	conf := 1439.0 / 1440 // min(span in days, samples / 1440)
	want := VPARecommendation{
		Target:         VPAResources{vpaInCores(cpu), vpaInMB(mem)},
		LowerBound:     VPAResources{vpaInCores(vpaConf(cpu, 0.001, -2, conf)), vpaInMB(vpaConf(mem, 0.001, -2, conf))},
		UpperBound:     VPAResources{vpaInCores(vpaConf(cpu, 1, 1, conf)), vpaInMB(vpaConf(mem, 1, 1, conf))},
		UncappedTarget: VPAResources{vpaInCores(cpu), vpaInMB(mem)},
	}
	if r != want {
		t.Fatalf("recommendation\n%+v, want\n%+v", r, want)
	}
	vpaCheckOrder(t, r)
	if s.v.Samples() != 1440 {
		t.Fatalf("%d samples, want 1440", s.v.Samples())
	}
}

// An idle service gets the minimum, 25 millicores and 250 MB, for target
// and both bounds.
func TestVPAMinimumResourcesForIdleService(t *testing.T) {
	s := newVPASim(t, VPAConfig{Mode: VPAModeOff}, 2, 1, 1024)
	s.run(24 * time.Hour)
	r := s.rec()
	least := VPAResources{0.025, 250}
	if r.Target != least || r.LowerBound != least || r.UpperBound != least {
		t.Fatalf("idle service: %+v, want all %+v", r, least)
	}
	// A fresh history keeps the upper bound wide (×25 after an hour)
	// above the minimum.
	s = newVPASim(t, VPAConfig{Mode: VPAModeOff}, 1, 1, 1024)
	s.run(time.Hour)
	if r := s.rec(); r.Target != least || r.LowerBound != least || r.UpperBound.CPU <= 0.025 {
		t.Fatalf("idle service after an hour: %+v", r)
	}
}

// A sample one half-life newer weighs twice as much: with one old and one
// new sample the percentile switches from the old value to the new at 1/3,
// and at 1/5 for two half-lives. Renormalising far in time keeps that.
func TestVPAHistogramHalfLife(t *testing.T) {
	o := newVPABuckets(1000, 0.01, 1.05, vpaEpsilon)
	day := 24 * time.Hour
	for _, tc := range []struct {
		name       string
		old, new   time.Duration
		switchesAt float64
	}{
		{"one half-life", 0, day, 1.0 / 3},
		{"two half-lives", 0, 2 * day, 1.0 / 5},
		{"after renormalising", 150 * day, 151 * day, 1.0 / 3},
		{"across a renormalisation", 99 * day, 101 * day, 1.0 / 5},
	} {
		h := newVPAHistogram(&o, day)
		if tc.old >= 100*day {
			h.add(5, 1, tc.old-day) // forces a shift of the reference first
			h.subtract(5, 1, tc.old-day)
		}
		h.add(0.1, 1, tc.old)
		h.add(1.0, 1, tc.new)
		lo, hi := vpaEnd(0.1, 0.01), vpaEnd(1.0, 0.01)
		if got := h.percentile(tc.switchesAt - 0.01); math.Abs(got-lo) > 1e-12 {
			t.Errorf("%s: p%.2f = %v, want the old value's bucket end %v", tc.name, tc.switchesAt-0.01, got, lo)
		}
		if got := h.percentile(tc.switchesAt + 0.01); math.Abs(got-hi) > 1e-12 {
			t.Errorf("%s: p%.2f = %v, want the new value's bucket end %v", tc.name, tc.switchesAt+0.01, got, hi)
		}
	}
}

// A day at 0.2 cores, then 18 hours at 1.0: the newer samples are fewer but
// weigh more, so the median (the lower bound's percentile) moves to the new
// load; with (nearly) no decay it stays at the old one.
func TestVPADecayMovesTowardNewLoad(t *testing.T) {
	load := func(t time.Duration) float64 {
		if t < 24*time.Hour {
			return 0.2
		}
		return 1.0
	}
	const samples = 42 * 60
	conf := float64(samples-1) / 1440
	for _, tc := range []struct {
		halfLife time.Duration
		median   float64
	}{{0, 1.0}, {10000 * time.Hour, 0.2}} {
		s := newVPASim(t, VPAConfig{Mode: VPAModeOff, CPUHistogramDecayHalfLife: tc.halfLife}, 1, 1, 1024)
		s.cpu, s.mem = load, vpaConst(300)
		s.run(42 * time.Hour)
		r := s.rec()
		want := vpaInCores(vpaConf(vpaCPUEst(tc.median), 0.001, -2, conf))
		if r.LowerBound.CPU != want {
			t.Errorf("half-life %v: lower bound %v, want %v (median at %v cores)", tc.halfLife, r.LowerBound.CPU, want, tc.median)
		}
		// The 90th percentile is the new load either way.
		if r.Target.CPU != vpaInCores(vpaCPUEst(1.0)) {
			t.Errorf("half-life %v: target %v, want %v", tc.halfLife, r.Target.CPU, vpaInCores(vpaCPUEst(1.0)))
		}
	}
}

// CPU samples weigh as the request (the limit), at least 0.1 core: two
// hours at 0.8 cores under a 1-core limit outweigh two newer hours at 0.04
// under 0.05, whose samples still weigh 0.1, about 9% of the total.
func TestVPACPUSamplesWeighedByRequest(t *testing.T) {
	s := newVPASim(t, VPAConfig{Mode: VPAModeOff, LowerBoundCPUPercentile: 0.07}, 1, 1, 1024)
	s.cpu, s.mem = vpaConst(0.8), vpaConst(300)
	s.run(2 * time.Hour)
	s.cpuLimit, s.cpu = 0.05, vpaConst(0.04)
	s.run(4 * time.Hour)
	r := s.rec()
	if want := vpaInCores(vpaCPUEst(0.8)); r.Target.CPU != want {
		t.Errorf("target %v, want %v: the 1-core samples dominate", r.Target.CPU, want)
	}
	conf := float64(4*60-1) / 1440
	if want := vpaInCores(vpaConf(vpaCPUEst(0.04), 0.001, -2, conf)); r.LowerBound.CPU != want {
		t.Errorf("7th percentile %v, want %v: the 0.05-core samples weigh 0.1 each", r.LowerBound.CPU, want)
	}
}

// A CPU sample is the mean over the snapshots since the last one.
func TestVPACPUSampleAveragesSnapshots(t *testing.T) {
	s := newVPASim(t, VPAConfig{Mode: VPAModeOff}, 3, 1, 1024)
	s.period = 15 * time.Second
	s.cpu = func(t time.Duration) float64 {
		if (t/(15*time.Second))%2 == 0 {
			return 0.2
		}
		return 0.8
	}
	s.mem = vpaConst(300)
	s.run(2 * time.Hour)
	if r := s.rec(); r.Target.CPU != 0.587 {
		t.Fatalf("target %v, want 0.587 (the mean, 0.5 cores)", r.Target.CPU)
	}
	if n := s.v.Samples(); n != 3*120 {
		t.Fatalf("%d samples, want one per instance and minute, 360", n)
	}
}

// An OOM kill is a memory sample of max(limit × 1.2, limit + 100 MB) that
// replaces the instance's peak of the interval.
func TestVPAOOMBumpsMemory(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limit   float64
		oom     float64 // MB sampled
		restart bool    // the instance is seen down (else: restarted within the period)
	}{
		{"min bump", 256, 356, true},
		{"ratio", 1000, 1200, true},
		{"restarted within the period", 256, 356, false},
	} {
		s := newVPASim(t, VPAConfig{Mode: VPAModeOff}, 2, 1, tc.limit)
		s.cpu, s.mem = vpaConst(0.5), vpaConst(240)
		s.run(time.Hour)
		before := s.rec().Target.MemoryMB
		if before != vpaInMB(vpaMemEst(240)) {
			t.Fatalf("%s: memory target %v before the OOM, want %v", tc.name, before, vpaInMB(vpaMemEst(240)))
		}
		s.step(func(st *metrics.ServiceStats) {
			st.Failures.OOM = 3
			in := &st.Instances[1]
			if tc.restart {
				in.Ready, in.MemoryUse, in.CPUUse = false, 0, 0
				st.Ready--
			} else {
				in.MemoryUse = 10
			}
		})
		s.run(2 * time.Hour)
		// Instance 0's peak is 240 MB, instance 1's the OOM sample; the
		// 90th percentile of the two is the OOM sample's bucket.
		r := s.rec()
		if want := vpaInMB(vpaMemEst(tc.oom)); r.Target.MemoryMB != want {
			t.Errorf("%s: memory target %v, want %v (from an OOM sample of %v MB)", tc.name, r.Target.MemoryMB, want, tc.oom)
		}
		if r.LowerBound.MemoryMB >= r.Target.MemoryMB {
			t.Errorf("%s: the median stays at the usage peak: lower %v, target %v", tc.name, r.LowerBound.MemoryMB, r.Target.MemoryMB)
		}
	}
	// An instance going down without OOM failures (draining) is no OOM.
	s := newVPASim(t, VPAConfig{Mode: VPAModeOff}, 2, 1, 256)
	s.cpu, s.mem = vpaConst(0.5), vpaConst(240)
	s.run(time.Hour)
	s.step(func(st *metrics.ServiceStats) { st.Instances[1].Ready, st.Instances[1].MemoryUse = false, 0 })
	s.run(2 * time.Hour)
	if r := s.rec(); r.Target.MemoryMB != vpaInMB(vpaMemEst(240)) {
		t.Errorf("no OOM: memory target %v, want %v", r.Target.MemoryMB, vpaInMB(vpaMemEst(240)))
	}
}

// A zero memory peak (an idle instance of a service without idle memory)
// gives way to a larger sample in the same interval (a deliberate
// departure from upstream, see VPA).
func TestVPAZeroMemoryPeakIsReplaced(t *testing.T) {
	s := newVPASim(t, VPAConfig{Mode: VPAModeOff}, 1, 1, 1024)
	s.cpu = vpaConst(0.5)
	s.mem = func(t time.Duration) float64 {
		if t < 10*time.Minute {
			return 0
		}
		return 300
	}
	s.run(time.Hour)
	if r := s.rec(); r.Target.MemoryMB != vpaInMB(vpaMemEst(300)) {
		t.Fatalf("memory target %v, want %v", r.Target.MemoryMB, vpaInMB(vpaMemEst(300)))
	}
}

// The bounds are the 50th and 95th percentiles scaled by (1 + 0.001/c)^-2
// and (1 + 1/c), c the history in days: wide for an hour, narrow after a
// week (upstream's table: ×0.95 and ×25 at 1h, ×3 at 12h, ×2 at 24h,
// ×1.14 at a week).
func TestVPAConfidenceNarrowsTheBounds(t *testing.T) {
	s := newVPASim(t, VPAConfig{Mode: VPAModeOff}, 1, 1, 1024)
	s.cpu, s.mem = vpaConst(0.5), vpaConst(300)
	cpu := vpaCPUEst(0.5)
	prevWidth := math.Inf(1)
	for _, tc := range []struct {
		at           time.Duration
		lower, upper float64 // upstream's multipliers, approximately
	}{
		{time.Hour, 0.95, 25}, {12 * time.Hour, 1, 3}, {24 * time.Hour, 1, 2}, {7 * 24 * time.Hour, 1, 1.14},
	} {
		s.run(tc.at)
		r := s.rec()
		n := float64(tc.at / time.Minute)
		conf := (n - 1) / 1440
		if want := vpaInCores(vpaConf(cpu, 0.001, -2, conf)); r.LowerBound.CPU != want {
			t.Errorf("%v: cpu lower bound %v, want %v", tc.at, r.LowerBound.CPU, want)
		}
		if want := vpaInCores(vpaConf(cpu, 1, 1, conf)); r.UpperBound.CPU != want {
			t.Errorf("%v: cpu upper bound %v, want %v", tc.at, r.UpperBound.CPU, want)
		}
		lo, hi := r.LowerBound.CPU/r.Target.CPU, r.UpperBound.CPU/r.Target.CPU
		if math.Abs(lo-tc.lower) > 0.01 || math.Abs(hi-tc.upper)/tc.upper > 0.02 {
			t.Errorf("%v: multipliers %.3f and %.3f, upstream's about %v and %v", tc.at, lo, hi, tc.lower, tc.upper)
		}
		width := r.UpperBound.CPU - r.LowerBound.CPU
		if !(width < prevWidth) {
			t.Errorf("%v: bounds %v wide, not narrower than %v", tc.at, width, prevWidth)
		}
		prevWidth = width
		vpaCheckOrder(t, r)
	}
}

// Off mode recommends and never acts, however far off the limits are.
func TestVPAOffModeNeverActs(t *testing.T) {
	s := newVPASim(t, VPAConfig{Mode: VPAModeOff, PodLifetimeThreshold: time.Minute}, 2, 4, 4096)
	s.cpu, s.mem = vpaConst(0.5), vpaConst(300)
	s.run(2 * 24 * time.Hour)
	if len(s.acts) != 0 {
		t.Fatalf("off mode acted: %v", s.acts)
	}
	if r := s.rec(); r.Target.CPU != 0.587 || r.UpperBound.CPU >= 4 {
		t.Fatalf("recommendation %+v", r)
	}
}

// Auto mode acts when a limit leaves [lower, upper]: a 4-core limit for a
// 0.5-core load once the upper bound 587m × (1 + 1440/(n − 1)) falls below
// 4 cores, at sample n; then never again while the use is steady.
func TestVPAAutoActsOutsideTheBounds(t *testing.T) {
	cpu, mem := vpaCPUEst(0.5), vpaMemEst(300)
	first := 2
	for vpaConf(cpu, 1, 1, float64(first-1)/1440) >= 4000 {
		first++
	}
	s := newVPASim(t, VPAConfig{}, 2, 4, vpaInMB(mem))
	s.cpu, s.mem = vpaConst(0.5), vpaConst(300)
	s.run(2 * 24 * time.Hour)
	want := []vpaAct{{time.Duration(first) * time.Minute, 0.587, vpaInMB(mem)}}
	if len(s.acts) != 1 || s.acts[0] != want[0] {
		t.Fatalf("actions %v, want %v", s.acts, want)
	}
	if first < 4*60 || first > 5*60 {
		t.Fatalf("first update at %d min, expected between 4h and 5h", first)
	}

	// A memory limit below the lower bound is raised at the first update:
	// the lower bound is at least the 250 MB minimum.
	s = newVPASim(t, VPAConfig{}, 1, 0.587, 100)
	s.cpu, s.mem = vpaConst(0.5), vpaConst(300)
	s.run(time.Hour)
	if len(s.acts) != 1 || s.acts[0].At != time.Minute || s.acts[0].MemoryMB != vpaInMB(mem) {
		t.Fatalf("actions %v, want one at 1m to %v MB", s.acts, vpaInMB(mem))
	}
}

// Inside the bounds an instance is updated only after running undisrupted
// for the lifetime threshold, and only when the requests differ from the
// target by at least the update threshold in sum.
func TestVPAAutoInsideTheBoundsWaitsForLifetimeAndThreshold(t *testing.T) {
	mem := vpaInMB(vpaMemEst(300))
	for _, tc := range []struct {
		name     string
		cfg      VPAConfig
		cpuLimit float64
		want     []time.Duration
	}{
		{"diff 16% after 12h", VPAConfig{}, 0.7, []time.Duration{12 * time.Hour}},
		{"diff 5%", VPAConfig{}, 0.62, nil},
		{"diff 5%, threshold 4%", VPAConfig{UpdateThreshold: 0.04}, 0.62, []time.Duration{12 * time.Hour}},
		{"lifetime 1h", VPAConfig{PodLifetimeThreshold: time.Hour}, 0.7, []time.Duration{time.Hour}},
	} {
		s := newVPASim(t, tc.cfg, 2, tc.cpuLimit, mem)
		s.cpu, s.mem = vpaConst(0.5), vpaConst(300)
		s.run(2 * 24 * time.Hour)
		var at []time.Duration
		for _, a := range s.acts {
			if a.CPU != 0.587 || a.MemoryMB != mem {
				t.Errorf("%s: action %v, want the target", tc.name, a)
			}
			at = append(at, a.At)
		}
		if !equalDurations(at, tc.want) {
			t.Errorf("%s: updates at %v, want %v", tc.name, at, tc.want)
		}
	}
}

func equalDurations(a, b []time.Duration) bool {
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

// The updater acts only on its own ticks and once the recommender holds
// MinSamples samples; a limit far below the lower bound is raised at the
// first tick allowed.
func TestVPAUpdateIntervalAndMinSamples(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  VPAConfig
		n    int
		want time.Duration
	}{
		{"defaults", VPAConfig{}, 1, 2 * time.Minute}, // one sample: zero confidence, lower bound 0
		{"min samples 10", VPAConfig{MinSamples: 10}, 1, 10 * time.Minute},
		{"min samples 10, two instances", VPAConfig{MinSamples: 10}, 2, 5 * time.Minute},
		{"update interval 5m", VPAConfig{UpdateInterval: 5 * time.Minute}, 1, 5 * time.Minute},
	} {
		s := newVPASim(t, tc.cfg, tc.n, 0.05, vpaInMB(vpaMemEst(300)))
		s.cpu, s.mem = vpaConst(0.5), vpaConst(300)
		s.run(time.Hour)
		if len(s.acts) != 1 || s.acts[0].At != tc.want || s.acts[0].CPU != 0.587 {
			t.Errorf("%s: actions %v, want one at %v to 0.587 cores", tc.name, s.acts, tc.want)
		}
	}
}

// An OOM kill within EvictAfterOOMThreshold of the container's start
// updates at once, inside the bounds and before the lifetime threshold.
func TestVPAQuickOOMUpdates(t *testing.T) {
	for _, tc := range []struct {
		name      string
		threshold time.Duration
		want      time.Duration
	}{
		{"quick OOM", 0, 5 * time.Minute},
		{"not quick", time.Minute, 7 * time.Minute}, // waits until the limit is below the lower bound
	} {
		s := newVPASim(t, VPAConfig{EvictAfterOOMThreshold: tc.threshold}, 1, 0.587, 256)
		s.cpu, s.mem = vpaConst(0.5), vpaConst(200)
		s.run(4 * time.Minute)
		s.step(func(st *metrics.ServiceStats) {
			st.Failures.OOM = 1
			st.Ready = 0
			st.Instances[0].Ready, st.Instances[0].MemoryUse, st.Instances[0].CPUUse = false, 0, 0
		})
		s.run(30 * time.Minute)
		want := vpaInMB(vpaMemEst(356))
		if len(s.acts) == 0 || s.acts[0].At != tc.want || s.acts[0].MemoryMB != want {
			t.Errorf("%s: actions %v, want the first at %v to %v MB", tc.name, s.acts, tc.want, want)
		}
	}
}

// MinAllowed and MaxAllowed cap target and bounds; the uncapped target
// stays.
func TestVPAMinMaxAllowed(t *testing.T) {
	s := newVPASim(t, VPAConfig{Mode: VPAModeOff, MaxAllowedCPU: 0.4, MinAllowedMemoryMB: 1000}, 1, 1, 1024)
	s.cpu, s.mem = vpaConst(0.5), vpaConst(300)
	s.run(24 * time.Hour)
	r := s.rec()
	if r.Target != (VPAResources{0.4, 1000}) || r.UncappedTarget != (VPAResources{0.587, vpaInMB(vpaMemEst(300))}) {
		t.Fatalf("target %+v, uncapped %+v", r.Target, r.UncappedTarget)
	}
	if r.UpperBound.CPU != 0.4 || r.LowerBound.CPU > 0.4 || r.LowerBound.MemoryMB != 1000 || r.UpperBound.MemoryMB != 1000 {
		t.Fatalf("bounds %+v / %+v", r.LowerBound, r.UpperBound)
	}
}

func TestVPAConfigDefaults(t *testing.T) {
	v, err := NewVPA(VPAConfig{Service: "s"})
	if err != nil {
		t.Fatal(err)
	}
	want := VPAConfig{Service: "s", Mode: VPAModeAuto,
		TargetCPUPercentile: 0.9, LowerBoundCPUPercentile: 0.5, UpperBoundCPUPercentile: 0.95,
		TargetMemoryPercentile: 0.9, LowerBoundMemoryPercentile: 0.5, UpperBoundMemoryPercentile: 0.95,
		SafetyMarginFraction: 0.15, PodMinCPUMillicores: 25, PodMinMemoryMB: 250,
		CPUHistogramDecayHalfLife: 24 * time.Hour, MemoryHistogramDecayHalfLife: 24 * time.Hour,
		MemoryAggregationInterval: 24 * time.Hour, OOMBumpUpRatio: 1.2, OOMMinBumpUpMB: 100,
		SampleInterval: time.Minute, UpdateInterval: time.Minute, MinSamples: 1, UpdateThreshold: 0.1,
		PodLifetimeThreshold: 12 * time.Hour, EvictAfterOOMThreshold: 10 * time.Minute}
	if got := v.Config(); got != want {
		t.Fatalf("defaults\n%+v, want\n%+v", got, want)
	}
	// Both histograms have upstream's 176 buckets.
	if v.cpuOpt.n != 176 || v.memOpt.n != 176 {
		t.Fatalf("buckets %d and %d, want 176", v.cpuOpt.n, v.memOpt.n)
	}
	if _, ok := v.Recommendation(); ok {
		t.Fatal("a recommendation before any sample")
	}
}

func TestVPAConfigErrorsNameTheField(t *testing.T) {
	ok := VPAConfig{Service: "s"}
	for _, tc := range []struct {
		mod  func(*VPAConfig)
		want string
	}{
		{func(c *VPAConfig) { c.Service = "" }, "service: required"},
		{func(c *VPAConfig) { c.Mode = "Recreate" }, `mode: want Off or Auto, got "Recreate"`},
		{func(c *VPAConfig) { c.TargetCPUPercentile = 2 }, "target_cpu_percentile: must be in (0, 1], got 2"},
		{func(c *VPAConfig) { c.LowerBoundCPUPercentile = -0.5 }, "lower_bound_cpu_percentile: must be in (0, 1]"},
		{func(c *VPAConfig) { c.UpperBoundCPUPercentile = 1.5 }, "upper_bound_cpu_percentile"},
		{func(c *VPAConfig) { c.TargetMemoryPercentile = math.NaN() }, "target_memory_percentile"},
		{func(c *VPAConfig) { c.LowerBoundMemoryPercentile = 3 }, "lower_bound_memory_percentile"},
		{func(c *VPAConfig) { c.UpperBoundMemoryPercentile = -1 }, "upper_bound_memory_percentile"},
		{func(c *VPAConfig) { c.SafetyMarginFraction = -0.1 }, "safety_margin_fraction: must be >= 0"},
		{func(c *VPAConfig) { c.PodMinCPUMillicores = -1 }, "pod_min_cpu_millicores: must be >= 0"},
		{func(c *VPAConfig) { c.PodMinMemoryMB = math.Inf(1) }, "pod_min_memory_mb: must be >= 0"},
		{func(c *VPAConfig) { c.MinAllowedCPU = -1 }, "min_allowed_cpu: must be >= 0"},
		{func(c *VPAConfig) { c.MinAllowedCPU, c.MaxAllowedCPU = 2, 1 }, "max_allowed_cpu: must be >= min_allowed_cpu"},
		{func(c *VPAConfig) { c.MinAllowedMemoryMB, c.MaxAllowedMemoryMB = 512, 256 }, "max_allowed_memory_mb: must be >= min_allowed_memory_mb"},
		{func(c *VPAConfig) { c.OOMBumpUpRatio = 0.5 }, "oom_bump_up_ratio: must be >= 1"},
		{func(c *VPAConfig) { c.OOMMinBumpUpMB = -100 }, "oom_min_bump_up_mb: must be >= 0"},
		{func(c *VPAConfig) { c.CPUHistogramDecayHalfLife = -time.Hour }, "cpu_histogram_decay_half_life: must be > 0"},
		{func(c *VPAConfig) { c.MemoryHistogramDecayHalfLife = -time.Hour }, "memory_histogram_decay_half_life: must be > 0"},
		{func(c *VPAConfig) { c.MemoryAggregationInterval = -time.Hour }, "memory_aggregation_interval: must be > 0"},
		{func(c *VPAConfig) { c.SampleInterval = -time.Second }, "sample_interval: must be > 0"},
		{func(c *VPAConfig) { c.UpdateInterval = -time.Second }, "update_interval: must be > 0"},
		{func(c *VPAConfig) { c.MinSamples = -1 }, "min_samples: must be >= 1"},
		{func(c *VPAConfig) { c.UpdateThreshold = -0.1 }, "update_threshold: must be >= 0"},
		{func(c *VPAConfig) { c.PodLifetimeThreshold = -time.Hour }, "pod_lifetime_threshold: must be >= 0"},
		{func(c *VPAConfig) { c.EvictAfterOOMThreshold = -time.Minute }, "evict_after_oom_threshold: must be >= 0"},
	} {
		cfg := ok
		tc.mod(&cfg)
		_, err := NewVPA(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", cfg, err, tc.want)
		}
	}
	// Every bad field is reported.
	_, err := NewVPA(VPAConfig{Mode: "x", TargetCPUPercentile: 2, MinSamples: -3})
	wantFieldErrors(t, err, "service", "mode", "target_cpu_percentile", "min_samples")
	if _, err := NewVPA(ok); err != nil {
		t.Fatal(err)
	}
}

// A service absent from the snapshot is neither sampled nor updated.
func TestVPAUnknownService(t *testing.T) {
	v, err := NewVPA(VPAConfig{Service: "s"})
	if err != nil {
		t.Fatal(err)
	}
	snap := metrics.Snapshot{Period: time.Minute, Services: []metrics.ServiceStats{{Name: "other", CPULimit: 1,
		Instances: []metrics.InstanceStats{{ID: 0, Ready: true, CPUUse: 0.5}}}}}
	for i := 1; i <= 10; i++ {
		if acts := v.Decide(time.Duration(i)*time.Minute, &snap); len(acts) != 0 {
			t.Fatalf("actions %v", acts)
		}
	}
	if _, ok := v.Recommendation(); ok || v.Samples() != 0 {
		t.Fatalf("sampled another service: %d samples", v.Samples())
	}
}

func TestVPADecideAllocatesNothingInSteadyState(t *testing.T) {
	s := newVPASim(t, VPAConfig{Service: "s"}, 3, 0.587, vpaInMB(vpaMemEst(300)))
	s.period = 15 * time.Second
	s.cpu, s.mem = vpaConst(0.5), vpaConst(300)
	s.run(time.Hour)
	if len(s.acts) != 0 {
		t.Fatalf("actions %v at the target", s.acts)
	}
	step := func() { s.step(nil) }
	if a := testing.AllocsPerRun(400, step); a != 0 {
		t.Fatalf("%v allocations per Decide", a)
	}
	if len(s.acts) != 0 || s.v.Samples() < 3*(60+100) {
		t.Fatalf("actions %v, %d samples", s.acts, s.v.Samples())
	}
}
