package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/workload"
)

func newServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// request serves one request with the given demand header ("" = none) in
// process and returns the recorder.
func request(s *Server, ctx context.Context, demand string) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/work", nil)
	if demand != "" {
		r.Header.Set(HeaderDemand, demand)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// serviceTime is the X-Shoal-Service-Time of a 200 response.
func serviceTime(t testing.TB, w *httptest.ResponseRecorder) time.Duration {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	x, err := strconv.ParseFloat(w.Header().Get(HeaderServiceTime), 64)
	if err != nil {
		t.Fatalf("%s: %v", HeaderServiceTime, err)
	}
	return sec(x)
}

// Tolerances of the wall-clock tests: the model's instant is exact, the
// response comes when the timer fires and the goroutine runs (Linux timer
// slack ~50 µs, plus scheduling on a busy machine).
const (
	early = time.Millisecond     // a request cannot finish before the model says
	late  = 5 * time.Millisecond // how much later it may answer
)

// timing collects the wall-clock checks of one attempt.
type timing struct {
	t   *testing.T
	off []string
}

// within checks that got is want, up to the tolerances.
func (c *timing) within(what string, got, want time.Duration) {
	if got < want-early || got > want+late {
		c.off = append(c.off, fmt.Sprintf("%s: %v, want %v (-%v/+%v)", what, got, want, early, late))
		return
	}
	c.t.Logf("%s: %v, want %v", what, got, want)
}

// retry runs a wall-clock measurement up to three times and fails only if
// every attempt is off: on a shared two-core machine a compile or another
// test can delay a wake-up by tens of milliseconds once, while a wrong
// model is off every time.
func retry(t *testing.T, measure func(c *timing)) { retryN(t, 3, measure) }

// retryN is retry with at most n attempts.
func retryN(t *testing.T, n int, measure func(c *timing)) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		c := &timing{t: t}
		measure(c)
		if len(c.off) == 0 {
			return
		}
		if attempt == n {
			for _, o := range c.off {
				t.Error(o)
			}
			return
		}
		t.Logf("attempt %d off (%s), again", attempt, strings.Join(c.off, "; "))
	}
}

// TestBackendOneRequest: cpu=0.1 core-seconds on one core at speed 2 takes
// 50 ms, and the response carries the demand used.
func TestBackendOneRequest(t *testing.T) {
	retry(t, func(c *timing) {
		s := newServer(t, Config{Cores: 1, Speed: 2})
		start := time.Now()
		w := request(s, context.Background(), "cpu=0.1")
		wall := time.Since(start)
		c.within("service time", serviceTime(t, w), 50*time.Millisecond)
		c.within("wall time", wall, 50*time.Millisecond)
		if got := w.Header().Get(HeaderDemand); got != "cpu=0.1,io=0" {
			t.Errorf("%s %q, want cpu=0.1,io=0", HeaderDemand, got)
		}
		if st := s.Stats(); st.Served != 1 || st.InService != 0 || math.Abs(st.BusyCoreSeconds-0.05) > 1e-9 {
			t.Errorf("stats %+v, want 1 served, 0.05 busy core-seconds", st)
		}
	})
}

// TestBackendProcessorSharing: n requests of equal demand w arriving
// together each take w / (Speed·min(1, Cores/n)), the processor-sharing
// rate; I/O phases take io/IOSpeed (pure delay) on top.
func TestBackendProcessorSharing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    Config
		demand Demand
		n      int
	}{
		{"two share one core", Config{Cores: 1}, Demand{CPU: 0.05}, 2},
		{"two on two cores", Config{Cores: 2}, Demand{CPU: 0.05}, 2},
		{"three share two cores at speed 2", Config{Cores: 2, Speed: 2}, Demand{CPU: 0.05}, 3},
		{"half a core", Config{Cores: 0.5}, Demand{CPU: 0.02}, 1},
		{"cpu then io at io speed 2", Config{Cores: 1, IOSpeed: 2}, Demand{CPU: 0.02, IO: 0.04}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.fill()
			n := float64(tc.n)
			want := sec(tc.demand.CPU/(cfg.Speed*math.Min(1, cfg.Cores/n)) + tc.demand.IO/cfg.IOSpeed)
			retry(t, func(c *timing) {
				s := newServer(t, tc.cfg)
				got := make([]time.Duration, tc.n)
				var wg sync.WaitGroup
				for i := range tc.n {
					wg.Go(func() { got[i] = serviceTime(t, request(s, context.Background(), tc.demand.String())) })
				}
				wg.Wait()
				for i, d := range got {
					c.within("request "+strconv.Itoa(i), d, want)
				}
			})
		})
	}
}

// mg1ps is the sample path of TestBackendMG1PS and BenchmarkBackendMG1PS:
// Poisson arrivals at load ρ = 0.5 on one core with demands of mean
// E[S] = 10 ms, which give a mean response time E[S]/(1-ρ) = 20 ms under
// processor sharing, whatever the demand distribution (M/G/1-PS
// insensitivity). With deterministic demands FCFS would give 15 ms, so
// the second case tells processor sharing from a queue. Twenty
// independent servers at once give about 3000 requests in 3 s. The
// arrivals and demands (sent in X-Shoal-Demand) are seeded, so the path
// is fixed.
const (
	mg1psServers  = 20
	mg1psLambda   = 50.0 // per second and server
	mg1psMeanS    = 0.010
	mg1psDuration = 3 * time.Second
	mg1psTheory   = mg1psMeanS / (1 - mg1psLambda*mg1psMeanS)
)

var mg1psDists = []struct {
	name string
	dist workload.DistSpec
}{
	{"exp", workload.DistSpec{Dist: workload.DistExp, Mean: mg1psMeanS}},
	{"det", workload.DistSpec{Dist: workload.DistDet, Mean: mg1psMeanS}},
}

// mg1psPaths draws each server's arrivals and demands, and returns them
// with their exact mean response time, replayed in the engine in virtual
// time, and their number.
func mg1psPaths(tb testing.TB, dist workload.DistSpec) (paths [][]refJob, exact float64, count int) {
	tb.Helper()
	d, err := dist.Build()
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2024, 1))
	paths = make([][]refJob, mg1psServers)
	for k := range paths {
		for at := time.Duration(0); ; {
			at += sec(rng.ExpFloat64() / mg1psLambda)
			if at >= mg1psDuration {
				break
			}
			paths[k] = append(paths[k], refJob{arrive: at, cpu: d.Sample(rng)})
		}
	}
	for _, p := range paths {
		for _, r := range runEngine(tb, Config{}, p) {
			exact += secs(r)
			count++
		}
	}
	return paths, exact / float64(count), count
}

// mg1psServe sends the paths to wall-clock servers of one core, each
// request at its instant, and returns the servers and each request's
// X-Shoal-Service-Time.
func mg1psServe(tb testing.TB, paths [][]refJob) ([]*Server, [][]time.Duration) {
	servers := make([]*Server, len(paths))
	times := make([][]time.Duration, len(paths))
	start := time.Now()
	var wg sync.WaitGroup
	for k, p := range paths {
		s := newServer(tb, Config{Cores: 1})
		servers[k] = s
		times[k] = make([]time.Duration, len(p))
		wg.Go(func() {
			var reqs sync.WaitGroup
			for i, r := range p {
				time.Sleep(time.Until(start.Add(r.arrive)))
				reqs.Go(func() {
					times[k][i] = serviceTime(tb, request(s, context.Background(), Demand{CPU: r.cpu}.String()))
				})
			}
			reqs.Wait()
		})
	}
	wg.Wait()
	return servers, times
}

// TestBackendMG1PS checks the model against queueing theory and the
// wall-clock server against the model. The mean response time of the
// sample path, replayed in the engine in virtual time, is the theory's
// within 15%. Served by wall-clock servers, every request is answered,
// none sooner than its demand allows (alone on the core), and each
// server's busy core-seconds are exactly the demands it was sent. How
// close the wall-clock means come to the exact one depends on how busy
// the machine is: BenchmarkBackendMG1PS measures it.
func TestBackendMG1PS(t *testing.T) {
	for _, tc := range mg1psDists {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			paths, exact, count := mg1psPaths(t, tc.dist)
			if r := exact/mg1psTheory - 1; math.Abs(r) > 0.15 {
				t.Fatalf("the model's mean response %.2f ms on this path is %+.1f%% off the theory's %.2f ms", 1e3*exact, 100*r, 1e3*mg1psTheory)
			}
			servers, times := mg1psServe(t, paths)
			var measured float64
			for k, p := range paths {
				demand := 0.0
				for i, r := range p {
					demand += r.cpu
					measured += secs(times[k][i])
					// The header is in whole microseconds.
					if got := times[k][i]; got < sec(r.cpu)-time.Microsecond {
						t.Errorf("server %d, request %d: service time %v, less than its demand %v on a core of its own", k, i, got, sec(r.cpu))
					}
				}
				if st := servers[k].Stats(); st.Served != int64(len(p)) || st.InService != 0 || st.Queued != 0 || math.Abs(st.BusyCoreSeconds-demand) > 1e-6 {
					t.Errorf("server %d: stats %+v, want %d served and %.9f busy core-seconds", k, st, len(p), demand)
				}
			}
			t.Logf("%d requests: mean response %.2f ms measured, %.2f ms exact on this path, %.2f ms theory",
				count, 1e3*measured/float64(count), 1e3*exact, 1e3*mg1psTheory)
		})
	}
}

// BenchmarkBackendMG1PS measures how far the wall-clock servers' mean
// response time on TestBackendMG1PS's path is from the exact one of the
// same path (ms-late: a response comes when a timer fires and a goroutine
// runs, a fraction of a millisecond after the model's instant on an idle
// machine) and from the theory's (%-off-theory).
func BenchmarkBackendMG1PS(b *testing.B) {
	if raceEnabled {
		b.Skip("timing: the race detector slows every request several times")
	}
	for _, tc := range mg1psDists {
		b.Run(tc.name, func(b *testing.B) {
			paths, exact, count := mg1psPaths(b, tc.dist)
			var late, off float64
			for b.Loop() {
				_, times := mg1psServe(b, paths)
				var measured float64
				for _, ts := range times {
					for _, x := range ts {
						measured += secs(x)
					}
				}
				measured /= float64(count)
				late += 1e3 * (measured - exact)
				off += 100 * (measured/mg1psTheory - 1)
			}
			b.ReportMetric(late/float64(b.N), "ms-late")
			b.ReportMetric(off/float64(b.N), "%-off-theory")
		})
	}
}

// waitFor polls cond until it holds, or fails the test after 30 s (a
// goroutine on a busy machine may take long to arrive).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestBackendConcurrencyLimit: requests beyond the concurrency limit wait in a
// bounded FIFO, and when it is full the server answers 429 at once, as a
// cluster instance rejects with the service's concurrency and queue.
func TestBackendConcurrencyLimit(t *testing.T) {
	for _, tc := range []struct {
		name        string
		concurrency int
		queue       int
		n           int   // requests of 100 ms sent one after the other
		want        []int // status codes
	}{
		{"no queue", 1, 0, 2, []int{200, 429}},
		{"queue of one", 1, 1, 3, []int{200, 200, 429}},
		{"two slots, queue of one", 2, 1, 4, []int{200, 200, 200, 429}},
		{"unbounded queue", 1, -1, 4, []int{200, 200, 200, 200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, Config{Cores: 4, Concurrency: tc.concurrency, Queue: tc.queue})
			codes := make([]int, tc.n)
			rec := make([]*httptest.ResponseRecorder, tc.n)
			var wg sync.WaitGroup
			for i := range tc.n {
				wg.Go(func() {
					rec[i] = request(s, context.Background(), "cpu=0.1")
					codes[i] = rec[i].Code
				})
				// Wait until the request is admitted, queued or rejected.
				waitFor(t, "arrival", func() bool {
					st := s.Stats()
					return st.InService+st.Queued+int(st.Rejected+st.Served) == i+1
				})
			}
			wg.Wait()
			for i := range codes {
				if codes[i] != tc.want[i] {
					t.Errorf("request %d: status %d, want %d (%s)", i, codes[i], tc.want[i], strings.TrimSpace(rec[i].Body.String()))
				}
			}
			rejected := 0
			for _, c := range tc.want {
				if c == 429 {
					rejected++
				}
			}
			if st := s.Stats(); int(st.Rejected) != rejected || int(st.Served) != tc.n-rejected {
				t.Errorf("stats %+v, want %d rejected", st, rejected)
			}
		})
	}
	// A queued request's time includes its wait: one slot, 20 ms each.
	retry(t, func(c *timing) {
		s := newServer(t, Config{Concurrency: 1, Queue: 1})
		var first time.Duration
		done := make(chan struct{})
		start := time.Now()
		go func() {
			first = serviceTime(t, request(s, context.Background(), "cpu=0.02"))
			close(done)
		}()
		waitFor(t, "admission", func() bool { return s.Stats().InService == 1 })
		offset := time.Since(start) // the second arrives at most this much later
		second := serviceTime(t, request(s, context.Background(), "cpu=0.02"))
		<-done
		c.within("first", first, 20*time.Millisecond)
		c.within("queued second", second, 40*time.Millisecond-offset)
	})
}

// TestBackendBadRequests: a bad X-Shoal-Demand header is answered 400 with a
// message that says what is wrong.
func TestBackendBadRequests(t *testing.T) {
	s := newServer(t, Config{})
	for _, tc := range []struct{ header, want string }{
		{"cpu", "not key=value"},
		{"cpu=abc", "cpu must be a number"},
		{"cpu=-1", "cpu must be a number of seconds in [0, 1e+06]"},
		{"cpu=NaN", "cpu must be a number"},
		{"cpu=Inf", "cpu must be a number"},
		{"io=2e6", "io must be a number"},
		{"mem=1", `unknown key "mem"`},
		{"cpu=1,cpu=2", "cpu given twice"},
		{" ", "empty demand"},
		{",cpu=1", "not key=value"},
	} {
		w := request(s, context.Background(), tc.header)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), tc.want) ||
			!strings.Contains(w.Body.String(), "bad X-Shoal-Demand header") {
			t.Errorf("%q: %d %q, want 400 with %q", tc.header, w.Code, w.Body, tc.want)
		}
	}
	if st := s.Stats(); st.BadRequests != 10 || st.Served != 0 {
		t.Errorf("stats %+v, want 10 bad requests", st)
	}
}

func TestBackendParseDemand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Demand
	}{
		{"cpu=0.25,io=0.01", Demand{0.25, 0.01}},
		{"io=0.002, cpu=0", Demand{0, 0.002}},
		{"cpu=1e-3", Demand{CPU: 0.001}},
		{" io = 0.5 ", Demand{IO: 0.5}},
	} {
		got, err := ParseDemand(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { ParseDemand("cpu=0.25,io=0.01") }); n != 0 {
		t.Errorf("ParseDemand allocates %v times, want 0", n)
	}
}

// FuzzBackendParseDemand: whatever the input, ParseDemand does not panic,
// and what it accepts formats back to a header that parses to the same
// demand.
func FuzzBackendParseDemand(f *testing.F) {
	for _, s := range []string{"cpu=0.25,io=0.01", "cpu=1", "io=0", "cpu=1,cpu=2", "x", "cpu=1e6", ",", "cpu=0x1p-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDemand(s)
		if err != nil {
			return
		}
		if !(d.CPU >= 0 && d.CPU <= MaxDemand && d.IO >= 0 && d.IO <= MaxDemand) {
			t.Fatalf("%q: accepted %v", s, d)
		}
		back, err := ParseDemand(d.String())
		if err != nil || back != d {
			t.Fatalf("%q: %v formats to %q, which parses to %v, %v", s, d, d.String(), back, err)
		}
	})
}

// TestBackendCancel: a request whose client goes away leaves the CPU at
// once, and the next request gets the whole core.
func TestBackendCancel(t *testing.T) {
	s := newServer(t, Config{Concurrency: 1, Queue: 1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() { done <- request(s, ctx, "cpu=10").Code }()
	waitFor(t, "admission", func() bool { return s.Stats().InService == 1 })
	// A second request queues behind it; cancelled, it leaves the queue.
	ctx2, cancel2 := context.WithCancel(context.Background())
	done2 := make(chan int)
	go func() { done2 <- request(s, ctx2, "cpu=10").Code }()
	waitFor(t, "queueing", func() bool { return s.Stats().Queued == 1 })
	cancel2()
	if code := <-done2; code != 499 {
		t.Errorf("the queued request cancelled: status %d, want 499", code)
	}
	cancel()
	// Served to the end, the first would answer 200 after 10 s.
	select {
	case code := <-done:
		if code != 499 {
			t.Errorf("the request in service cancelled: status %d, want 499", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("cancelled request still waits")
	}
	if st := s.Stats(); st.Cancelled != 2 || st.InService != 0 || st.Queued != 0 {
		t.Errorf("stats %+v, want 2 cancelled, nothing in service", st)
	}
	retry(t, func(c *timing) {
		c.within("next request", serviceTime(t, request(s, context.Background(), "cpu=0.02")), 20*time.Millisecond)
	})
}

// TestBackendDrawnDemands: without the header, demands come from the seeded
// stream (CPU, then I/O, as cluster draws them): the same seed gives the
// same demands; a deterministic demand is served exactly.
func TestBackendDrawnDemands(t *testing.T) {
	cfg := Config{
		Cores: 8,
		CPU:   workload.DistSpec{Dist: workload.DistExp, Mean: 0.001},
		IO:    workload.DistSpec{Dist: workload.DistUniform, Min: 0.001, Max: 0.002},
		Seed:  42,
	}
	var seqs [2][]string
	for k := range seqs {
		s := newServer(t, cfg)
		for range 5 {
			seqs[k] = append(seqs[k], request(s, context.Background(), "").Header().Get(HeaderDemand))
		}
	}
	d, _ := cfg.CPU.Build()
	e, _ := cfg.IO.Build()
	rng := rand.New(rand.NewPCG(42, 0))
	for i := range seqs[0] {
		want := Demand{CPU: d.Sample(rng), IO: e.Sample(rng)}.String()
		if seqs[0][i] != want || seqs[1][i] != want {
			t.Errorf("request %d: demands %q and %q, want %q", i, seqs[0][i], seqs[1][i], want)
		}
	}
	s := newServer(t, Config{Speed: 2, CPU: workload.DistSpec{Dist: workload.DistDet, Mean: 0.04}})
	retry(t, func(c *timing) {
		c.within("det 0.04 at speed 2", serviceTime(t, request(s, context.Background(), "")), 20*time.Millisecond)
	})
}

// TestBackendHealthzAndStats: /healthz answers ok; /stats the counters as JSON.
func TestBackendHealthzAndStats(t *testing.T) {
	s := newServer(t, Config{Cores: 2})
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if w.Code != 200 || strings.TrimSpace(w.Body.String()) != "ok" {
		t.Errorf("/healthz: %d %q", w.Code, w.Body)
	}
	request(s, context.Background(), "cpu=0.01")
	w = httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/stats", nil))
	var st Stats
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("/stats: %v: %s", err, w.Body)
	}
	if st.Served != 1 || math.Abs(st.BusyCoreSeconds-0.01) > 1e-6 || st.UptimeSeconds <= 0 {
		t.Errorf("/stats %s", w.Body)
	}
	for _, key := range []string{"served", "rejected", "cancelled", "bad_requests", "in_service", "queued", "busy_core_seconds", "uptime_seconds"} {
		if !strings.Contains(w.Body.String(), `"`+key+`"`) {
			t.Errorf("/stats lacks %q: %s", key, w.Body)
		}
	}
}

// TestBackendOverLoopback serves over a real 127.0.0.1 connection, where the
// request context is cancelled when the client goes away.
func TestBackendOverLoopback(t *testing.T) {
	s := newServer(t, Config{Cores: 1})
	ts := httptest.NewServer(s)
	defer ts.Close()
	retry(t, func(c *timing) {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/x", nil)
		req.Header.Set(HeaderDemand, "cpu=0.02,io=0.01")
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		x, _ := strconv.ParseFloat(resp.Header.Get(HeaderServiceTime), 64)
		c.within("service time", sec(x), 30*time.Millisecond)
	})
	// A client that gives up frees the server.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/x", nil)
	req.Header.Set(HeaderDemand, "cpu=100")
	if _, err := ts.Client().Do(req); err == nil {
		t.Fatal("no error from a timed-out request")
	}
	waitFor(t, "cancellation", func() bool { return s.Stats().Cancelled == 1 && s.Stats().InService == 0 })
}

// discardWriter is a ResponseWriter that keeps only the header, reused
// between requests, so that a benchmark counts the handler's allocations.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// TestBackendServeAllocs bounds the handler's allocations per request: the two
// response header strings and their slices.
func TestBackendServeAllocs(t *testing.T) {
	s := newServer(t, Config{})
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set(HeaderDemand, "cpu=0,io=0")
	w := &discardWriter{h: http.Header{}}
	n := testing.AllocsPerRun(1000, func() {
		clear(w.h)
		s.ServeHTTP(w, r)
	})
	if n > 4 {
		t.Errorf("%v allocations per request, want <= 4", n)
	}
}

// BenchmarkServeZeroDemand is the handler's own cost: a request with zero
// demand, admitted and answered without waiting.
func BenchmarkServeZeroDemand(b *testing.B) {
	for _, header := range []string{"", "cpu=0,io=0"} {
		name := "drawn"
		if header != "" {
			name = "header"
		}
		b.Run(name, func(b *testing.B) {
			s := newServer(b, Config{})
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			if header != "" {
				r.Header.Set(HeaderDemand, header)
			}
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				s.ServeHTTP(w, r)
			}
		})
	}
}

// BenchmarkServeParallel is the handler under contention for its one lock:
// every goroutine sends requests of zero demand.
func BenchmarkServeParallel(b *testing.B) {
	s := newServer(b, Config{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		w := &discardWriter{h: http.Header{}}
		for pb.Next() {
			clear(w.h)
			s.ServeHTTP(w, r)
		}
	})
}

// probe asks s for its load.
func probe(t *testing.T, s *Server) (rif int, latency time.Duration) {
	t.Helper()
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, lb.ProbePath, nil))
	rif, err := strconv.Atoi(w.Header().Get(lb.HeaderRIF))
	if err != nil {
		t.Fatalf("%s: %v", lb.HeaderRIF, err)
	}
	x, err := strconv.ParseFloat(w.Header().Get(lb.HeaderLatency), 64)
	if err != nil {
		t.Fatalf("%s: %v", lb.HeaderLatency, err)
	}
	return rif, sec(x)
}

// TestBackendLoadProbe: /load answers the requests in flight and the
// median latency of requests that found as many; responses carry the RIF
// they leave behind.
func TestBackendLoadProbe(t *testing.T) {
	retry(t, func(c *timing) {
		s := newServer(t, Config{Cores: 1})
		if rif, lat := probe(t, s); rif != 0 || lat != 0 {
			t.Fatalf("fresh server: RIF %d, latency %v; want 0, 0", rif, lat)
		}
		for _, d := range []string{"cpu=0.01", "cpu=0.03", "cpu=0.02"} { // alone: RIF 0, median 20 ms
			if w := request(s, context.Background(), d); w.Header().Get(lb.HeaderRIF) != "0" {
				t.Fatalf("response leaves RIF %q, want 0", w.Header().Get(lb.HeaderRIF))
			}
		}
		_, lat := probe(t, s)
		c.within("latency estimate at RIF 0", lat, 20*time.Millisecond)
		done := make(chan string, 3)
		for range 3 {
			go func() { done <- request(s, context.Background(), "cpu=0.3").Header().Get(lb.HeaderRIF) }()
		}
		waitFor(t, "three requests in flight", func() bool { return s.Stats().InService == 3 })
		// Three in flight, nothing recorded at RIF 3 yet: the nearest RIF
		// with samples, 0, answers. The requests only leave, so if three
		// are still in flight after the probe, three were during it.
		rif, lat := probe(t, s)
		if s.Stats().InService < 3 {
			c.off = append(c.off, "a request completed before the probe")
		} else if rif != 3 {
			t.Errorf("RIF %d with three requests in flight, want 3", rif)
		}
		c.within("latency estimate at RIF 3 (from RIF 0)", lat, 20*time.Millisecond)
		left := []string{<-done, <-done, <-done}
		slices.Sort(left)
		if !slices.Equal(left, []string{"0", "1", "2"}) {
			t.Errorf("the three left RIF %v behind, want 0, 1, 2 in some order", left)
		}
	})
}
