package lb

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

const c3ms = time.Millisecond

func c3Close(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s: %.12g, want %.12g", what, got, want)
	}
}

// TestC3ScoreFollowsThePaper computes Ψ_s = R̄_s − 1/μ̄_s + q̂_s³/μ̄_s,
// q̂_s = 1 + os_s·n + q̄_s (section 4.1) by hand after two responses and
// two requests in flight, with EWMAs of weight 0.9 that start at the
// first sample (absim's updateEma).
func TestC3ScoreFollowsThePaper(t *testing.T) {
	s := &C3{Clients: 3}
	if sc := s.Score(0); sc != 0 {
		t.Fatalf("score before any sample: %g, want 0", sc)
	}
	// Response 1: queue 4, service 2 ms, response time 5 ms.
	s.Sent(0, 0)
	s.Reported(5*c3ms, 0, Load{RIF: 4, Service: 2 * c3ms})
	s.Done(5*c3ms, 0, 5*c3ms, 6*c3ms)
	// q̄ = 4, 1/μ̄ = 0.002, R̄ = 0.005, os = 0: q̂ = 5,
	// Ψ = 0.005 − 0.002 + 125·0.002 = 0.253.
	c3Close(t, "after one response", s.Score(0), 0.253)
	// Response 2: queue 2, service 4 ms, response time 10 ms.
	s.Sent(10*c3ms, 0)
	s.Reported(20*c3ms, 0, Load{RIF: 2, Service: 4 * c3ms})
	s.Done(20*c3ms, 0, 10*c3ms, 10*c3ms)
	// q̄ = 0.9·2 + 0.1·4 = 2.2, 1/μ̄ = 0.9·0.004 + 0.1·0.002 = 0.0038,
	// R̄ = 0.9·0.010 + 0.1·0.005 = 0.0095.
	s.Sent(21*c3ms, 0)
	s.Sent(22*c3ms, 0)
	// os = 2, n = 3: q̂ = 1 + 6 + 2.2 = 9.2, q̂³ = 778.688,
	// Ψ = 0.0095 − 0.0038 + 778.688·0.0038 = 2.9647144.
	c3Close(t, "two in flight, three clients", s.Score(0), 2.9647144)
	s.Clients = 1 // q̂ = 1 + 2 + 2.2 = 5.2, q̂³ = 140.608
	c3Close(t, "one client", s.Score(0), 0.0057+140.608*0.0038)
}

// c3Cubic is the cubic growth of the paper's section 4.2 as absim's
// updateRates writes it, computed here on its own: R(T) = C·(T −
// (β·R0/C)^{1/3})³ + R0, T in milliseconds since the last decrease.
func c3Cubic(c, beta, r0, tMs float64) float64 {
	k := math.Pow(beta*r0/c, 1.0/3)
	return c*math.Pow(math.Abs(tMs-k), 3)*math.Copysign(1, tMs-k) + r0
}

// TestC3CubicGrowthFollowsAbsim: while the receive rate exceeds the
// sending rate, each response sets the rate to R(T), by at most Smax more
// than it was (absim's defaults C = 4e-6 per ms³, β = 0.2, Smax = 10).
func TestC3CubicGrowthFollowsAbsim(t *testing.T) {
	const c, beta, r0 = 0.000004, 0.2, 10.0
	// Landmarks of the formula: R(0) = R0·(1−β), R(K) = R0 at
	// K = ∛(β·R0/C) = ∛500000 ≈ 79.37 ms.
	c3Close(t, "R(0)", c3Cubic(c, beta, r0, 0), 8)
	kMs := math.Cbrt(500000)
	c3Close(t, "R(K)", c3Cubic(c, beta, r0, kMs), 10)

	s := &C3{}
	s.grow(1, 0)
	x := &s.srv[0]
	if x.r0 != r0 || x.rate != 5 || s.CubicC != c || s.CubicBeta != beta || s.CubicSmax != 10 {
		t.Fatalf("defaults: R0 %g rate %g C %g β %g Smax %g", x.r0, x.rate, s.CubicC, s.CubicBeta, s.CubicSmax)
	}
	for _, tMs := range []float64{0, 20, kMs, 120, 140} {
		at := time.Duration(tMs * float64(c3ms))
		// The receive rate is higher, measured in the current slot.
		x.rate, x.rrate, x.rslot, x.lastDecrease = 1, 1e9, int64(at/s.RateInterval), 0
		s.updateRate(x, at)
		c3Close(t, "rate at T = "+time.Duration(tMs*1e6).String(), x.rate, c3Cubic(c, beta, r0, float64(at)/1e6))
		if x.lastIncrease != at || x.lastDecrease != 0 {
			t.Errorf("T = %v: last increase %v, last decrease %v", at, x.lastIncrease, x.lastDecrease)
		}
	}
	// At T = 300 ms the cubic is at ≈ 52.96: the step is capped at Smax.
	x.rate, x.rrate, x.rslot = 1, 1e9, 30
	s.updateRate(x, 300*c3ms)
	if want := c3Cubic(c, beta, r0, 300); !(want > 50) || x.rate != 11 {
		t.Errorf("capped step: rate %g (cubic %g), want 1 + Smax = 11", x.rate, want)
	}
}

// TestC3DecreaseWaitsForTheHysteresis: a sending rate above the receive
// rate is cut by β, but only Hysteresis·δ (2 × 10 ms) after the last
// increase; the rate before the cut becomes R0, and the cubic regrows
// from R(0) = R0·(1−β).
func TestC3DecreaseWaitsForTheHysteresis(t *testing.T) {
	s := &C3{}
	s.grow(1, 0)
	x := &s.srv[0]
	x.rate, x.rrate, x.lastIncrease = 10, 0, 100*c3ms
	s.updateRate(x, 119*c3ms)
	if x.rate != 10 {
		t.Fatalf("19 ms after an increase: rate %g, want 10 (hysteresis)", x.rate)
	}
	s.updateRate(x, 121*c3ms)
	if x.rate != 2 || x.r0 != 10 || x.lastDecrease != 121*c3ms {
		t.Fatalf("21 ms after an increase: rate %g R0 %g at %v, want 2, 10, 121ms", x.rate, x.r0, x.lastDecrease)
	}
	x.rrate = 1e9
	s.updateRate(x, 121*c3ms)
	c3Close(t, "regrowth at T = 0", x.rate, 8)
	x.rate, x.rrate, x.lastIncrease = 1e-4, 0, 0
	s.updateRate(x, time.Second)
	if x.rate != 1e-4 {
		t.Errorf("floor: rate %g, want 1e-4", x.rate)
	}
}

// TestC3ReceiveRateFollowsAbsim replays absim's ReceiveRate.add on a hand
// trace (δ = 10 ms, initial rate 10, weight 0.9).
func TestC3ReceiveRateFollowsAbsim(t *testing.T) {
	s := &C3{}
	s.grow(1, 0)
	x := &s.srv[0]
	for _, at := range []time.Duration{1 * c3ms, 2 * c3ms} {
		s.received(x, at, 1)
	}
	if x.rrate != 10 || x.rcount != 2 {
		t.Fatalf("slot 0: rate %g count %g, want 10 and 2", x.rrate, x.rcount)
	}
	s.received(x, 12*c3ms, 1) // opens slot 1: counted with slot 0
	c3Close(t, "after slot 0", x.rrate, 0.9*3+0.1*10)
	s.received(x, 13*c3ms, 1)
	s.received(x, 35*c3ms, 1) // slot 3: slot 2's silence is not counted
	c3Close(t, "after slots 1-2", x.rrate, 0.9*2+0.1*3.7)
	s.received(x, 36*c3ms, 1)
	s.received(x, 150*c3ms, 1) // ten slots or more: the rate is the old count
	if x.rrate != 1 || x.rcount != 0 || x.rslot != 15 {
		t.Errorf("after a gap: rate %g count %g slot %d, want 1, 0, 15", x.rrate, x.rcount, x.rslot)
	}
}

// c3Run feeds s through Sent, Reported and Done from a tiny simulation:
// Poisson arrivals at rate 1/gap, FIFO single-worker servers with
// exponential service times of the given means, no network delay. Each
// response reports the requests left at its server and its service time.
// It returns the picks per server and the mean response time.
func c3Run(s *C3, mean []time.Duration, gap time.Duration, requests int, seed uint64) ([]int, time.Duration) {
	return c3RunSel(s, s, mean, gap, requests, seed)
}

func c3RunSel(sel Selector, s *C3, mean []time.Duration, gap time.Duration, requests int, seed uint64) ([]int, time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 7))
	n := len(mean)
	type job struct{ arrive, start, done time.Duration }
	queues := make([][]job, n)
	free := make([]time.Duration, n)
	v := &View{InFlight: make([]int32, n), Weights: make([]float64, n), Up: make([]bool, n)}
	for j := range n {
		v.Weights[j], v.Up[j] = 1, true
	}
	picks := make([]int, n)
	var total time.Duration
	deliver := func(until time.Duration) {
		for {
			j := -1
			for k := range n {
				if len(queues[k]) > 0 && queues[k][0].done <= until && (j < 0 || queues[k][0].done < queues[j][0].done) {
					j = k
				}
			}
			if j < 0 {
				return
			}
			d := queues[j][0]
			queues[j] = queues[j][1:]
			rif := 0
			for rif < len(queues[j]) && queues[j][rif].arrive <= d.done {
				rif++
			}
			v.InFlight[j]--
			s.Reported(d.done, j, Load{RIF: int32(rif), Service: d.done - d.start})
			s.Done(d.done, j, d.done-d.arrive, d.done-d.arrive)
			total += d.done - d.arrive
		}
	}
	now := time.Duration(0)
	for range requests {
		now += time.Duration(rng.ExpFloat64() * float64(gap))
		deliver(now)
		j := sel.Select(v, Request{Now: now})
		picks[j]++
		v.InFlight[j]++
		s.Sent(now, j)
		start := max(now, free[j])
		free[j] = start + time.Duration(rng.ExpFloat64()*float64(mean[j]))
		queues[j] = append(queues[j], job{now, start, free[j]})
	}
	deliver(math.MaxInt64)
	return picks, total / time.Duration(requests)
}

// TestC3PrefersTheFastServer: of two servers, one ten times slower (mean
// service 10 ms and 1 ms), C3 sends most requests to the fast one and
// keeps the mean response time near the fast server's: at 250 requests/s
// (the slow server alone could take 40%), with and without rate control,
// and at 500 requests/s (it could take 20%) ranking alone. At 500/s rate
// control with absim's constants does worse here: the fast server's
// sending rate hovers below the demand (every dip of the receive rate cuts
// it by β), its bucket empties, and requests go to the slow server up to
// that one's sending rate, which tracks its receive rate, its capacity, so
// its queue grows (with this seed 76% go to the fast server and the mean
// response is 0.7 s). A real C3 client would also send to the slow server
// while it has tokens; it would hold only the overrides.
func TestC3PrefersTheFastServer(t *testing.T) {
	mean := []time.Duration{10 * c3ms, c3ms}
	for _, c := range []struct {
		name string
		s    *C3
		gap  time.Duration
		rt   time.Duration
	}{
		{"rate control, 250/s", &C3{Rand: rand.New(rand.NewPCG(1, 1))}, 4 * c3ms, 8 * c3ms},
		{"ranking alone, 250/s", &C3{Rand: rand.New(rand.NewPCG(1, 1)), NoRateControl: true}, 4 * c3ms, 4 * c3ms},
		{"ranking alone, 500/s", &C3{Rand: rand.New(rand.NewPCG(1, 1)), NoRateControl: true}, 2 * c3ms, 5 * c3ms},
	} {
		picks, rt := c3Run(c.s, mean, c.gap, 20000, 3)
		t.Logf("%s: picks %v, mean response %v, overrides %d", c.name, picks, rt, c.s.Overrides)
		if float64(picks[1]) < 0.85*float64(picks[0]+picks[1]) {
			t.Errorf("%s: picks %v, want at least 85%% on the fast server", c.name, picks)
		}
		if rt > c.rt {
			t.Errorf("%s: mean response %v, want < %v", c.name, rt, c.rt)
		}
	}
}

// TestC3CubicPenalisesTheLongQueue: server 0 serves in 1 ms but reports 9
// requests queued; server 1 needs 4 ms and reports 2; both add 1 ms of
// waiting. A linear estimate (q+1)/μ prefers server 0 (10 ms < 12 ms); the
// cubic term (q̂³/μ: 1000 ms against 108 ms) prefers server 1, and C3
// picks it.
func TestC3CubicPenalisesTheLongQueue(t *testing.T) {
	s := &C3{Rand: rand.New(rand.NewPCG(5, 5))}
	v := &View{InFlight: make([]int32, 2), Weights: []float64{1, 1}, Up: []bool{true, true}}
	svc := []time.Duration{c3ms, 4 * c3ms}
	queue := []int32{9, 2}
	for j := range 2 {
		s.Sent(0, j)
		s.Reported(svc[j]+c3ms, j, Load{RIF: queue[j], Service: svc[j]})
		s.Done(svc[j]+c3ms, j, svc[j]+c3ms, svc[j]+c3ms)
	}
	linear := func(j int) float64 { return float64(queue[j]+1) * svc[j].Seconds() }
	if !(linear(0) < linear(1)) {
		t.Fatalf("linear estimates %g, %g: the test's premise is wrong", linear(0), linear(1))
	}
	c3Close(t, "Ψ_0", s.Score(0), 0.001+1000*0.001)
	c3Close(t, "Ψ_1", s.Score(1), 0.001+27*0.004)
	if j := s.Select(v, Request{Now: 10 * c3ms}); j != 1 {
		t.Errorf("picked %d, want 1 (the shorter queue)", j)
	}
}

// TestC3SkipsRateLimitedServers: buckets of 3 tokens, server 0 ranked
// far better (service 1 ms against 500 ms). Six requests at one instant:
// server 0 takes three and runs out of tokens, so server 1 takes the next
// three although it ranks worse; then both are limited and the seventh
// goes to the best-ranked, server 0, as an override.
func TestC3SkipsRateLimitedServers(t *testing.T) {
	v := &View{InFlight: make([]int32, 2), Weights: []float64{1, 1}, Up: []bool{true, true}}
	took := []time.Duration{c3ms, 500 * c3ms}
	feed := func(s *C3) {
		for j := range 2 {
			s.Sent(0, j)
			s.Reported(took[j], j, Load{RIF: 0, Service: took[j]})
			s.Done(took[j], j, took[j], took[j])
		}
	}
	s := &C3{MaxTokens: 3}
	feed(s)
	now := 600 * c3ms
	if t0, t1 := s.Tokens(now, 0), s.Tokens(now, 1); t0 != 3 || t1 != 3 {
		t.Fatalf("tokens %g, %g, want full buckets", t0, t1)
	}
	var got []int
	for range 7 {
		j := s.Select(v, Request{Now: now})
		got = append(got, j)
		s.Sent(now, j)
	}
	want := []int{0, 0, 0, 1, 1, 1, 0}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("picks %v, want %v", got, want)
		}
	}
	if s.Overrides != 1 {
		t.Errorf("%d overrides, want 1", s.Overrides)
	}
	if tk := s.Tokens(now, 0); tk != -1 {
		t.Errorf("server 0 holds %g tokens after the override, want -1", tk)
	}
	// Without rate control the best rank always wins.
	s = &C3{MaxTokens: 3, NoRateControl: true}
	feed(s)
	for range 10 {
		if j := s.Select(v, Request{Now: now}); j != 0 {
			t.Fatalf("without rate control: picked %d", j)
		}
		s.Sent(now, 0)
		s.Done(now, 0, took[0], took[0]) // os back to 0, R̄ unchanged
	}
	if s.Overrides != 0 {
		t.Errorf("without rate control: %d overrides", s.Overrides)
	}
}

// TestC3TriesNewServersInRandomOrder: servers without samples score 0;
// ties go to the first in a random rotation (absim's stable sort of a
// replica group that starts at a random server), so every one is tried,
// and a down server never is.
func TestC3TriesNewServersInRandomOrder(t *testing.T) {
	v := &View{InFlight: make([]int32, 4), Weights: []float64{1, 1, 1, 1}, Up: []bool{true, false, true, true}}
	s := &C3{Rand: rand.New(rand.NewPCG(9, 9)), NoRateControl: true}
	var c [4]int
	for range 4000 {
		c[s.Select(v, Request{})]++
	}
	if c[1] != 0 || c[0] < 600 || c[2] < 600 || c[3] < 600 {
		t.Errorf("picks %v: want every up server tried, the down one never", c)
	}
	if j := (&C3{}).Select(v, Request{}); j != 0 {
		t.Errorf("without Rand: picked %d, want 0", j)
	}
	v.Up = []bool{false, false, false, false}
	if j := s.Select(v, Request{}); j != -1 {
		t.Errorf("nothing up: picked %d", j)
	}
}

// c3Fed is a C3 over n backends that has seen a few responses from each.
func c3Fed(n int) (*C3, *View) {
	s := &C3{Rand: rand.New(rand.NewPCG(1, 9)), Clients: 4}
	v := &View{InFlight: make([]int32, n), Weights: make([]float64, n), Up: make([]bool, n)}
	for j := range n {
		v.Weights[j], v.Up[j] = 1, true
		for k := range 3 {
			at := time.Duration(k*n+j) * c3ms
			took := time.Duration(1+j%5) * c3ms
			s.Sent(at, j)
			s.Reported(at+took, j, Load{RIF: int32(j % 3), Service: took})
			s.Done(at+took, j, took+c3ms, took+c3ms)
		}
		s.Sent(0, j)
	}
	return s, v
}

func TestC3SelectDoesNotAllocate(t *testing.T) {
	s, v := c3Fed(20)
	now := time.Second
	if a := testing.AllocsPerRun(1000, func() { s.Select(v, Request{Now: now}) }); a != 0 {
		t.Errorf("%v allocs per Select", a)
	}
	if a := testing.AllocsPerRun(1000, func() {
		j := s.Select(v, Request{Now: now})
		s.Sent(now, j)
		s.Reported(now, j, Load{RIF: 1, Service: c3ms})
		s.Done(now, j, 2*c3ms, 2*c3ms)
		now += c3ms
	}); a != 0 {
		t.Errorf("%v allocs per request", a)
	}
}

func BenchmarkC3(b *testing.B) {
	b.Run("select", func(b *testing.B) {
		s, v := c3Fed(20)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			s.Select(v, Request{Now: time.Second})
		}
	})
	b.Run("request", func(b *testing.B) {
		s, v := c3Fed(20)
		now := time.Second
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			j := s.Select(v, Request{Now: now})
			s.Sent(now, j)
			s.Reported(now, j, Load{RIF: 1, Service: c3ms})
			s.Done(now, j, 2*c3ms, 2*c3ms)
			now += 100 * time.Microsecond
		}
	})
}
