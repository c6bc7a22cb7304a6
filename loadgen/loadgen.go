// Package loadgen is an open-loop HTTP load generator. Requests start at the
// instants of an arrival process (a workload.Process: Poisson, constant,
// MMPP, diurnal, trace replay), whatever became of earlier requests, and
// each latency is measured from the request's scheduled start, so a slow
// server cannot hide its queueing by slowing the generator down (no
// coordinated omission).
//
// The usage loop:
//
//	p, _ := workload.NewPoisson(100)
//	res, err := loadgen.Run(ctx, loadgen.Config{URLs: []string{url}, Arrivals: p, Duration: time.Minute, Seed: 1}, http.DefaultClient)
//	res.WriteSummary(os.Stdout)
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/workload"
)

// Config describes one load run. Zero fields take the defaults noted.
type Config struct {
	// URLs are the targets: each request goes to one of them, chosen
	// uniformly at random, so n URLs under Poisson arrivals of rate λ each
	// receive an independent Poisson stream of rate λ/n (thinning), as
	// clients spread over n load balancers.
	URLs []string
	// Method is the HTTP method (default GET).
	Method string
	// Arrivals are the request start instants, relative to the run's start.
	Arrivals workload.Process
	// Duration is when arrivals stop; Requests bounds their number. At
	// least one of the two must be set.
	Duration time.Duration
	Requests int
	// MaxInFlight bounds the requests in flight (default 10,000): an
	// arrival that finds this many is not sent and counts as dropped,
	// rather than delaying the schedule.
	MaxInFlight int
	// Seed seeds the arrival process: the same seed gives the same
	// schedule.
	Seed uint64
	// Warmup: requests scheduled before it are sent but not measured
	// (they count only in Warm).
	Warmup time.Duration
	// Phases, if set, report the outcomes of the requests scheduled in
	// each phase (Result.Phases); PhaseArrivals makes their arrivals.
	Phases []Phase
	// Window, if > 0, reports the outcomes by scheduled time in windows
	// this wide (Result.Windows), to see how fast latency recovers.
	Window time.Duration
}

// Phase is a stretch of a run at one mean rate.
type Phase struct {
	Rate     float64       // requests per second
	Duration time.Duration // how long
}

// Part is the outcome of the requests scheduled in [Start, End).
type Part struct {
	Start, End time.Duration
	Scheduled  int64
	Completed  int64
	Shed       int64 // answered 503
	Failed     int64 // every failure, shed ones included
	Transport  int64 // failures without an answer (refused, reset, timed out)
	// Finished counts the successes that ended in [Start, End), whenever
	// they were scheduled (windows only): goodput as a server sees it.
	Finished int64
	Latency  metrics.Histogram
}

// Result is the outcome of a run.
type Result struct {
	Scheduled int64 // arrivals due before the end, after the warm-up
	Warm      int64 // arrivals during the warm-up: sent, not measured
	Completed int64 // requests answered with a status below 400
	Dropped   int64 // arrivals not sent because MaxInFlight requests were in flight
	// Failed counts requests that failed, by kind: "transport" (no
	// response: refused, reset, timed out) or the HTTP status, "http 503".
	Failed map[string]int64
	// Shed counts the failed requests answered 503 (Service Unavailable):
	// refused at once or after a bounded wait by a server or a load
	// balancer that sheds load, rather than left to time out.
	Shed int64
	// Phases and Windows are the outcomes by scheduled time, per
	// Config.Phases and per Config.Window.
	Phases  []*Part
	Windows []*Part
	// Latency holds the completed requests' times from scheduled start to
	// the end of the response body, in seconds.
	Latency metrics.Histogram
	// Elapsed is the wall time from the start to the last response.
	Elapsed time.Duration
	// Span is the scheduled time from the start to the last arrival.
	Span time.Duration
}

// Failures is the number of failed requests of every kind.
func (r *Result) Failures() int64 {
	var n int64
	for _, c := range r.Failed {
		n += c
	}
	return n
}

// Run sends the requests of cfg with client and waits for every answer. When
// ctx is cancelled it stops sending, cancels the requests in flight and
// returns what it measured with ctx's error.
func Run(ctx context.Context, cfg Config, client *http.Client) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Method == "" {
		cfg.Method = http.MethodGet
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 10_000
	}
	for _, u := range cfg.URLs {
		if _, err := http.NewRequestWithContext(ctx, cfg.Method, u, nil); err != nil {
			return nil, fmt.Errorf("loadgen: %w", err)
		}
	}
	res := &Result{Failed: map[string]int64{}}
	var end time.Duration
	for _, ph := range cfg.Phases {
		res.Phases = append(res.Phases, &Part{Start: end, End: end + ph.Duration})
		end += ph.Duration
	}
	var mu sync.Mutex // guards res while requests are in flight
	var wg sync.WaitGroup
	slots := make(chan struct{}, cfg.MaxInFlight)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6c6f6164)) // "load"
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	start := time.Now()
	var at time.Duration
	for n := 0; cfg.Requests == 0 || n < cfg.Requests; n++ {
		next, ok := cfg.Arrivals.Next(at, rng)
		if !ok || (cfg.Duration > 0 && next >= cfg.Duration) {
			break
		}
		at = next
		due := start.Add(at)
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
			case <-timer.C:
			}
		}
		if ctx.Err() != nil {
			break
		}
		url := cfg.URLs[0]
		if len(cfg.URLs) > 1 {
			url = cfg.URLs[rng.IntN(len(cfg.URLs))]
		}
		warm := at < cfg.Warmup
		mu.Lock()
		if warm {
			res.Warm++
		} else {
			res.Scheduled++
			res.Span = at - cfg.Warmup
			for _, p := range res.parts(at, cfg.Window) {
				p.Scheduled++
			}
		}
		mu.Unlock()
		select {
		case slots <- struct{}{}:
		default:
			if !warm {
				mu.Lock()
				res.Dropped++
				mu.Unlock()
			}
			continue
		}
		wg.Add(1)
		go func(at time.Duration) {
			defer wg.Done()
			kind := send(ctx, client, cfg.Method, url)
			lat := time.Since(due).Seconds()
			<-slots
			mu.Lock()
			defer mu.Unlock()
			if warm {
				return
			}
			res.record(kind, lat)
			for _, p := range res.parts(at, cfg.Window) {
				p.record(kind, lat)
			}
			if kind == "" && cfg.Window > 0 {
				res.window(time.Since(start), cfg.Window).Finished++
			}
		}(at)
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	return res, ctx.Err()
}

// record counts one outcome: kind "" is a success after lat seconds.
func (r *Result) record(kind string, lat float64) {
	if tally(kind, lat, &r.Completed, &r.Shed, &r.Latency) {
		r.Failed[kind]++
	}
}

func (p *Part) record(kind string, lat float64) {
	if tally(kind, lat, &p.Completed, &p.Shed, &p.Latency) {
		p.Failed++
		if kind == transport {
			p.Transport++
		}
	}
}

// tally counts a success (kind "") and its latency, or a shed request,
// and reports whether the outcome is a failure.
func tally(kind string, lat float64, completed, shedN *int64, h *metrics.Histogram) (failed bool) {
	if kind == "" {
		*completed++
		h.Record(lat)
		return false
	}
	if kind == shed {
		*shedN++
	}
	return true
}

// Failure kinds: a 503 answer, and no answer.
const (
	shed      = "http 503"
	transport = "transport"
)

// parts returns the phase and the window that a request scheduled at at
// counts in (r's mutex held), making the window if it is new.
func (r *Result) parts(at, window time.Duration) []*Part {
	var out [2]*Part
	n := 0
	for _, p := range r.Phases {
		if at >= p.Start && at < p.End {
			out[n] = p
			n++
			break
		}
	}
	if window > 0 {
		out[n] = r.window(at, window)
		n++
	}
	return out[:n]
}

// window returns the window of width w holding at, making it if it is new
// (r's mutex held).
func (r *Result) window(at, w time.Duration) *Part {
	i := int(at / w)
	for len(r.Windows) <= i {
		k := time.Duration(len(r.Windows))
		r.Windows = append(r.Windows, &Part{Start: k * w, End: (k + 1) * w})
	}
	return r.Windows[i]
}

// PhaseArrivals is a Poisson process at each phase's rate in turn (a
// non-homogeneous Poisson process over the phases), and the phases' total
// duration.
func PhaseArrivals(phases []Phase) (workload.Process, time.Duration, error) {
	if len(phases) == 0 {
		return nil, 0, errors.New("loadgen: no phase")
	}
	var step, total time.Duration
	for i, ph := range phases {
		if !(ph.Rate >= 0) || ph.Duration <= 0 {
			return nil, 0, fmt.Errorf("loadgen: phase %d: rate must be >= 0 and duration > 0, got %g/s for %v", i+1, ph.Rate, ph.Duration)
		}
		step = gcd(step, ph.Duration)
		total += ph.Duration
	}
	if total/step > 1_000_000 {
		step = time.Millisecond // durations with no common step: a millisecond grid
	}
	var rates []float64
	for _, ph := range phases {
		for range ph.Duration / step {
			rates = append(rates, ph.Rate)
		}
	}
	p, err := workload.NewSeriesReplay(&workload.RateSeries{Step: step, Values: rates}, workload.ReplayOptions{})
	if err != nil {
		return nil, 0, fmt.Errorf("loadgen: phases: %w", err)
	}
	return p, total, nil
}

func gcd(a, b time.Duration) time.Duration {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func (c *Config) validate() error {
	switch {
	case len(c.URLs) == 0:
		return errors.New("loadgen: no URL")
	case c.Arrivals == nil:
		return errors.New("loadgen: no arrival process")
	case c.Duration < 0 || c.Requests < 0 || c.MaxInFlight < 0 || c.Warmup < 0:
		return fmt.Errorf("loadgen: duration %v, requests %d, max in flight %d and warm-up %v must not be negative", c.Duration, c.Requests, c.MaxInFlight, c.Warmup)
	case c.Duration > 0 && c.Warmup >= c.Duration:
		return fmt.Errorf("loadgen: warm-up %v leaves nothing of duration %v to measure", c.Warmup, c.Duration)
	case c.Duration == 0 && c.Requests == 0:
		return errors.New("loadgen: set a duration or a number of requests, or the run never ends")
	}
	return nil
}

// send makes one request and reads its body; it returns "" on success, else
// the kind of failure.
func send(ctx context.Context, client *http.Client, method, url string) string {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return transport // the URL was checked before the run
	}
	resp, err := client.Do(req)
	if err != nil {
		return transport
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return transport
	}
	if resp.StatusCode >= 400 {
		return fmt.Sprintf("http %d", resp.StatusCode)
	}
	return ""
}

// WriteSummary prints the counts, the achieved rate and the latency
// percentiles, then each phase's.
func (r *Result) WriteSummary(w io.Writer) error {
	var kinds []string
	for k := range r.Failed {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	failed := ""
	for _, k := range kinds {
		failed += fmt.Sprintf(", %s: %d", k, r.Failed[k])
	}
	fmt.Fprintf(w, "requests   %d scheduled, %d completed, %d failed%s, %d dropped (too many in flight)\n",
		r.Scheduled, r.Completed, r.Failures(), failed, r.Dropped)
	if r.Shed > 0 {
		fmt.Fprintf(w, "shed       %.1f%% of the scheduled requests answered 503 (shed by the server or a load balancer)\n",
			100*share(r.Shed, r.Scheduled))
	}
	fmt.Fprintf(w, "rate       %.1f req/s completed over %.2f s (%.1f req/s scheduled)\n",
		rate(r.Completed, r.Elapsed), r.Elapsed.Seconds(), rate(r.Scheduled, r.Span))
	if r.Latency.Count() == 0 {
		fmt.Fprintln(w, "latency    no request completed")
	} else {
		h := &r.Latency
		fmt.Fprintf(w, "latency    mean %s  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s (from scheduled start)\n",
			ms(h.Mean()), ms(h.Quantile(0.5)), ms(h.Quantile(0.9)), ms(h.Quantile(0.99)), ms(h.Quantile(0.999)), ms(h.Max()))
	}
	for i, p := range r.Phases {
		s := p.Summary()
		fmt.Fprintf(w, "phase %d    %v-%v: %d scheduled, %.1f req/s completed, %.1f%% shed, %d failed, p50 %s  p99 %s\n",
			i+1, p.Start, p.End, s.Scheduled, s.Goodput, 100*s.ShedShare, s.Failed, ms(s.P50), ms(s.P99))
	}
	return nil
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func share(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// Summary is a run's outcome in numbers, for scripts (JSON); times in
// seconds.
type Summary struct {
	Scheduled int64            `json:"scheduled"`
	Completed int64            `json:"completed"`
	Failed    map[string]int64 `json:"failed"`
	Dropped   int64            `json:"dropped"`
	Shed      int64            `json:"shed"`       // answered 503
	ShedShare float64          `json:"shed_share"` // of the scheduled
	Rate      float64          `json:"rate"`       // completed per second of wall time
	Mean      float64          `json:"mean"`
	P50       float64          `json:"p50"`
	P90       float64          `json:"p90"`
	P99       float64          `json:"p99"`
	P999      float64          `json:"p999"`
	Max       float64          `json:"max"`
	Phases    []PartSummary    `json:"phases,omitempty"`
	Windows   []PartSummary    `json:"windows,omitempty"`
}

// PartSummary is a phase's or a window's outcome; Goodput is the
// completed requests per second of its span.
type PartSummary struct {
	Start     float64 `json:"start"`
	End       float64 `json:"end"`
	Scheduled int64   `json:"scheduled"`
	Completed int64   `json:"completed"`
	Shed      int64   `json:"shed"`
	Failed    int64   `json:"failed"`
	Transport int64   `json:"transport"`
	Finished  int64   `json:"finished"` // windows: successes that ended in it
	ShedShare float64 `json:"shed_share"`
	Goodput   float64 `json:"goodput"`
	Mean      float64 `json:"mean"`
	P50       float64 `json:"p50"`
	P99       float64 `json:"p99"`
	Max       float64 `json:"max"`
}

// Summary returns the part's counts and latency percentiles.
func (p *Part) Summary() PartSummary {
	s := PartSummary{Start: p.Start.Seconds(), End: p.End.Seconds(), Scheduled: p.Scheduled, Completed: p.Completed,
		Shed: p.Shed, Failed: p.Failed, Transport: p.Transport, Finished: p.Finished, ShedShare: share(p.Shed, p.Scheduled), Goodput: rate(p.Completed, p.End-p.Start)}
	if h := &p.Latency; h.Count() > 0 {
		s.Mean, s.P50, s.P99, s.Max = h.Mean(), h.Quantile(0.5), h.Quantile(0.99), h.Max()
	}
	return s
}

// Summary returns the run's counts, rate and latency percentiles.
func (r *Result) Summary() Summary {
	h := &r.Latency
	s := Summary{Scheduled: r.Scheduled, Completed: r.Completed, Failed: r.Failed, Dropped: r.Dropped,
		Shed: r.Shed, ShedShare: share(r.Shed, r.Scheduled)}
	if r.Elapsed > 0 {
		s.Rate = float64(r.Completed) / r.Elapsed.Seconds()
	}
	if h.Count() > 0 {
		s.Mean, s.P50, s.P90, s.P99, s.P999, s.Max = h.Mean(), h.Quantile(0.5), h.Quantile(0.9), h.Quantile(0.99), h.Quantile(0.999), h.Max()
	}
	for _, p := range r.Phases {
		s.Phases = append(s.Phases, p.Summary())
	}
	for _, p := range r.Windows {
		s.Windows = append(s.Windows, p.Summary())
	}
	return s
}

func ms(s float64) string { return fmt.Sprintf("%.3fms", s*1e3) }
