package loadgen

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoal-project/shoal/workload"
)

func constant(t *testing.T, rate float64) workload.Process {
	t.Helper()
	p, err := workload.NewConstant(rate)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCountsEveryArrival: 200 req/s for 250 ms schedules exactly the
// arrivals at 5, 10, ..., 245 ms; each is answered, counted once and timed.
func TestCountsEveryArrival(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	res, err := Run(context.Background(), Config{URLs: []string{srv.URL}, Arrivals: constant(t, 200), Duration: 250 * time.Millisecond}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	if res.Scheduled != 49 || res.Completed != 49 || hits.Load() != 49 || res.Failures() != 0 || res.Dropped != 0 {
		t.Fatalf("scheduled %d, completed %d, server saw %d, failed %v, dropped %d", res.Scheduled, res.Completed, hits.Load(), res.Failed, res.Dropped)
	}
	if res.Latency.Count() != 49 || res.Span != 245*time.Millisecond || res.Elapsed < res.Span {
		t.Fatalf("latency count %d, span %v, elapsed %v", res.Latency.Count(), res.Span, res.Elapsed)
	}
}

// TestSpreadsOverURLsAfterWarmup: 1000 req/s for 500 ms with a 100 ms
// warm-up measures the 400 arrivals at 100-499 ms, and the 499 sent in all split
// between two URLs as a fair coin would (within 4 standard deviations).
func TestSpreadsOverURLsAfterWarmup(t *testing.T) {
	var hits [2]atomic.Int64
	var urls []string
	for i := range hits {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits[i].Add(1) }))
		defer srv.Close()
		urls = append(urls, srv.URL)
	}
	res, err := Run(context.Background(), Config{URLs: urls, Arrivals: constant(t, 1000), Duration: 500 * time.Millisecond,
		Warmup: 100 * time.Millisecond}, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if res.Warm != 99 || res.Scheduled != 400 || res.Completed != 400 || res.Latency.Count() != 400 {
		t.Fatalf("warm %d, scheduled %d, completed %d, timed %d", res.Warm, res.Scheduled, res.Completed, res.Latency.Count())
	}
	a, b := hits[0].Load(), hits[1].Load()
	if a+b != 499 || math.Abs(float64(a)-249.5) > 4*math.Sqrt(499*0.25) {
		t.Fatalf("split %d / %d", a, b)
	}
	if s := res.Summary(); s.Completed != 400 || !(s.P99 >= s.P50) || s.Rate <= 0 {
		t.Fatalf("summary %+v", s)
	}
}

// TestLatencyFromScheduledStart: a server that takes 30 ms per request
// shows at least 30 ms at every percentile.
func TestLatencyFromScheduledStart(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(30 * time.Millisecond)
	}))
	defer srv.Close()
	res, err := Run(context.Background(), Config{URLs: []string{srv.URL}, Arrivals: constant(t, 100), Requests: 10}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 10 || res.Latency.Min() < 0.030 {
		t.Fatalf("completed %d, fastest %v s", res.Completed, res.Latency.Min())
	}
}

// TestFailuresAndDrops: HTTP errors count by status, refused connections as
// transport failures, and arrivals beyond MaxInFlight as dropped; every
// scheduled arrival is accounted for exactly once.
func TestFailuresAndDrops(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	res, err := Run(context.Background(), Config{URLs: []string{srv.URL}, Arrivals: constant(t, 100), Requests: 10}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 5 || res.Failed["http 503"] != 5 {
		t.Fatalf("completed %d, failed %v", res.Completed, res.Failed)
	}

	// The slow server holds every request until all 20 arrivals have been
	// sent or dropped (the process is asked for a 21st), so the two sent
	// first are still in flight however slow the machine.
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	arrivals := &hook{Process: constant(t, 1000), at: 21, do: func(time.Duration) (time.Duration, bool) {
		close(release)
		return 0, false
	}}
	res, err = Run(context.Background(), Config{URLs: []string{slow.URL}, Arrivals: arrivals, Duration: time.Hour, MaxInFlight: 2}, slow.Client())
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 2 || res.Dropped != 18 || res.Scheduled != 20 {
		t.Fatalf("completed %d, dropped %d of %d", res.Completed, res.Dropped, res.Scheduled)
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	url := closed.URL
	closed.Close()
	res, err = Run(context.Background(), Config{URLs: []string{url}, Arrivals: constant(t, 1000), Requests: 3}, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed["transport"] != 3 || res.Completed != 0 {
		t.Fatalf("failed %v, completed %d", res.Failed, res.Completed)
	}
	var out bytes.Buffer
	if err := res.WriteSummary(&out); err != nil || !strings.Contains(out.String(), "transport: 3") || !strings.Contains(out.String(), "no request completed") {
		t.Fatalf("summary %q, %v", out.String(), err)
	}
}

// hook is an arrival process whose arrival number at (1-based) is do's
// instead of the process's.
type hook struct {
	workload.Process
	at, n int
	do    func(prev time.Duration) (time.Duration, bool)
}

func (h *hook) Next(prev time.Duration, rng *rand.Rand) (time.Duration, bool) {
	if h.n++; h.n == h.at {
		return h.do(prev)
	}
	return h.Process.Next(prev, rng)
}

// TestCancelStopsTheRun: cancelling stops sending at once and returns what
// was measured with the context's error. The context is cancelled while
// the run waits for its fifth arrival, an hour away: the four before it
// were sent and are accounted for, the fifth never is, and the run does
// not wait for it.
func TestCancelStopsTheRun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	arrivals := &hook{Process: constant(t, 50), at: 5, do: func(prev time.Duration) (time.Duration, bool) {
		go cancel()
		return prev + time.Hour, true
	}}
	type result struct {
		res *Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := Run(ctx, Config{URLs: []string{srv.URL}, Arrivals: arrivals, Duration: 2 * time.Hour}, srv.Client())
		done <- result{res, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the run still waits for its next arrival a minute after its context was cancelled")
	}
	if r.err != context.Canceled || r.res == nil || r.res.Scheduled != 4 || r.res.Completed+r.res.Failures() != 4 || r.res.Dropped != 0 {
		t.Fatalf("err %v, result %+v; want context.Canceled, the 4 arrivals before the cancellation each sent and accounted for", r.err, r.res)
	}
}

func TestConfigErrors(t *testing.T) {
	p := constant(t, 1)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Arrivals: p, Requests: 1}, "no URL"},
		{Config{URLs: []string{"http://127.0.0.1:1/"}, Requests: 1}, "no arrival process"},
		{Config{URLs: []string{"http://127.0.0.1:1/"}, Arrivals: p}, "never ends"},
		{Config{URLs: []string{"http://127.0.0.1:1/"}, Arrivals: p, Requests: -1}, "negative"},
		{Config{URLs: []string{"http://127.0.0.1:1/"}, Arrivals: p, Requests: 1, Method: "BAD METHOD"}, "method"},
	} {
		if _, err := Run(context.Background(), c.cfg, http.DefaultClient); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.cfg, err, c.want)
		}
	}
}

// TestPhasesWindowsAndShed: two phases (100/s for 300 ms, then 400/s for
// 200 ms) against a server that answers every third request 503; each
// phase counts its own arrivals (Poisson, so within 5 standard deviations
// of the rate times the length), 503s count as shed, and the windows add
// up to the whole run.
func TestPhasesWindowsAndShed(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%3 == 0 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	phases := []Phase{{Rate: 100, Duration: 300 * time.Millisecond}, {Rate: 400, Duration: 200 * time.Millisecond}}
	arr, total, err := PhaseArrivals(phases)
	if err != nil || total != 500*time.Millisecond {
		t.Fatalf("PhaseArrivals: %v, total %v", err, total)
	}
	res, err := Run(context.Background(), Config{URLs: []string{srv.URL}, Arrivals: arr, Duration: total, Seed: 3,
		Phases: phases, Window: 100 * time.Millisecond}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	if res.Shed != res.Failed["http 503"] || res.Shed == 0 || res.Shed+res.Completed != res.Scheduled {
		t.Fatalf("shed %d, failed %v, completed %d, scheduled %d", res.Shed, res.Failed, res.Completed, res.Scheduled)
	}
	for i, p := range res.Phases {
		want := phases[i].Rate * phases[i].Duration.Seconds()
		if d := math.Abs(float64(p.Scheduled) - want); d > 5*math.Sqrt(want) {
			t.Errorf("phase %d: %d scheduled, want about %v", i+1, p.Scheduled, want)
		}
	}
	var sched, shed, done, finished int64
	for _, w := range res.Windows {
		sched, shed, done, finished = sched+w.Scheduled, shed+w.Shed, done+w.Completed, finished+w.Finished
	}
	if sched != res.Scheduled || shed != res.Shed || done != res.Completed || finished != res.Completed {
		t.Fatalf("windows: %d scheduled, %d shed, %d completed, %d finished; run: %d, %d, %d", sched, shed, done, finished,
			res.Scheduled, res.Shed, res.Completed)
	}
	if s := res.Summary(); len(s.Phases) != 2 || s.ShedShare != float64(res.Shed)/float64(res.Scheduled) || len(s.Windows) < 5 {
		t.Fatalf("summary %+v", s)
	}
	if _, _, err := PhaseArrivals([]Phase{{Rate: 10, Duration: 0}}); err == nil {
		t.Fatal("a phase of no duration was accepted")
	}
}
