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
		go func() {
			defer wg.Done()
			kind := send(ctx, client, cfg.Method, url)
			lat := time.Since(due).Seconds()
			<-slots
			mu.Lock()
			defer mu.Unlock()
			switch {
			case warm:
			case kind == "":
				res.Completed++
				res.Latency.Record(lat)
			default:
				res.Failed[kind]++
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	return res, ctx.Err()
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
		return "transport" // the URL was checked before the run
	}
	resp, err := client.Do(req)
	if err != nil {
		return "transport"
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return "transport"
	}
	if resp.StatusCode >= 400 {
		return fmt.Sprintf("http %d", resp.StatusCode)
	}
	return ""
}

// WriteSummary prints the counts, the achieved rate and the latency
// percentiles.
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
	rate := func(n int64, d time.Duration) float64 {
		if d <= 0 {
			return 0
		}
		return float64(n) / d.Seconds()
	}
	fmt.Fprintf(w, "rate       %.1f req/s completed over %.2f s (%.1f req/s scheduled)\n",
		rate(r.Completed, r.Elapsed), r.Elapsed.Seconds(), rate(r.Scheduled, r.Span))
	if r.Latency.Count() == 0 {
		_, err := fmt.Fprintln(w, "latency    no request completed")
		return err
	}
	h := &r.Latency
	_, err := fmt.Fprintf(w, "latency    mean %s  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s (from scheduled start)\n",
		ms(h.Mean()), ms(h.Quantile(0.5)), ms(h.Quantile(0.9)), ms(h.Quantile(0.99)), ms(h.Quantile(0.999)), ms(h.Max()))
	return err
}

// Summary is a run's outcome in numbers, for scripts (JSON); times in
// seconds.
type Summary struct {
	Scheduled int64            `json:"scheduled"`
	Completed int64            `json:"completed"`
	Failed    map[string]int64 `json:"failed"`
	Dropped   int64            `json:"dropped"`
	Rate      float64          `json:"rate"` // completed per second of wall time
	Mean      float64          `json:"mean"`
	P50       float64          `json:"p50"`
	P90       float64          `json:"p90"`
	P99       float64          `json:"p99"`
	P999      float64          `json:"p999"`
	Max       float64          `json:"max"`
}

// Summary returns the run's counts, rate and latency percentiles.
func (r *Result) Summary() Summary {
	h := &r.Latency
	s := Summary{Scheduled: r.Scheduled, Completed: r.Completed, Failed: r.Failed, Dropped: r.Dropped}
	if r.Elapsed > 0 {
		s.Rate = float64(r.Completed) / r.Elapsed.Seconds()
	}
	if h.Count() > 0 {
		s.Mean, s.P50, s.P90, s.P99, s.P999, s.Max = h.Mean(), h.Quantile(0.5), h.Quantile(0.9), h.Quantile(0.99), h.Quantile(0.999), h.Max()
	}
	return s
}

func ms(s float64) string { return fmt.Sprintf("%.3fms", s*1e3) }
