// Package record turns a live cluster's traffic, as its Prometheus saw it
// over a time range, into a scenario that the simulator replays: an
// arrivals trace of the ingress service's requests and a scenario file
// whose services have the replicas, limits and CPU demand per call that
// the cluster had. A controller can then be trained and compared on the
// user's own traffic.
//
// The usage loop:
//
//	rec, err := record.Record(ctx, record.Config{Prometheus: url, Start: t0, End: t1, Step: 15 * time.Second,
//		Workloads: workloads, Ingress: "front", Queries: prom.DefaultQueries()})
//	err = rec.Write(dir)                      // dir/arrivals.txt and dir/scenario.yaml
//	sc, err := scenario.Load(dir + "/scenario.yaml")
//
// What is recorded, each from the workload's prom.Queries template:
//   - the arrivals: the ingress's Arrivals per step (Period = the step),
//     as requests per second, written as a NASA-format trace (requests in
//     each second, whitespace-separated) and replayed step by step (bin:
//     the step; Poisson within a step), looped past the range;
//   - per service, Replicas, CPULimit and MemoryLimit at the start of the
//     range, and the most replicas over it (max_replicas is twice that,
//     room for an autoscaler);
//   - per service, the CPU demand of a call: the CPU seconds it used over
//     the whole range (CPUUse with Period = the range, times its length)
//     over the calls it completed (Completions; Arrivals when that query is
//     empty or has no data), drawn exponentially around that mean;
//   - the call graph, which Prometheus's per-workload series do not hold: a
//     tree the caller gives (Calls), by default one level, the ingress
//     calling every other service. A callee is called, per call of its
//     caller, the ratio of their call counts over the range (Arrivals, else
//     Completions): r = 2.5 is two calls and a third with probability 0.5,
//     one after the other. A tree is exact for counts and CPU when every
//     service has one caller; a service with several callers is given one
//     (the ingress by default) and carries all their calls.
//
// What is not: I/O, network and database time (a call's response time less
// its CPU time), concurrency limits, queues and cold starts. The replayed
// response times are those of CPU work alone; the scenario file says so and
// can be edited.
package record

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/shoal-project/shoal/prom"
)

// Edge is one call-graph edge: Caller calls Callee.
type Edge struct {
	Caller, Callee string
}

// Config says what to record.
type Config struct {
	// Prometheus is the server's URL, http://host:port.
	Prometheus string
	// Start and End bound the range; End is cut to a whole number of steps.
	Start, End time.Time
	// Step is the arrivals trace's resolution, whole seconds, at least 1s.
	// Each step must hold two scrapes of the ingress's request series.
	Step time.Duration
	// Workloads are the services, by their Service names.
	Workloads []prom.Workload
	// Ingress is the Service that requests enter (default: the first).
	Ingress string
	// Calls are the call graph's edges, a tree rooted at the ingress;
	// services that are no edge's callee are called by the ingress.
	Calls []Edge
	// Queries are the PromQL templates (prom.DefaultQueries: kube-state-
	// metrics, cAdvisor and Istio). Replicas, CPUUse and Arrivals or
	// Completions are required.
	Queries prom.Queries
	// Name is the scenario's name (default "recorded").
	Name string
}

// ConfigError is a bad Config field; Field is prometheus, start, end,
// step, workloads, ingress, calls or queries.
type ConfigError struct {
	Field string
	Err   error
}

func (e *ConfigError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func bad(field, format string, a ...any) error {
	return &ConfigError{Field: field, Err: fmt.Errorf(format, a...)}
}

// maxStep bounds the step (and so a trace bucket).
const maxStep = 24 * time.Hour

// Validate checks the configuration as Record would, without Prometheus.
func (c *Config) Validate() error {
	u, err := url.Parse(c.Prometheus)
	switch {
	case c.Prometheus == "":
		return bad("prometheus", "the server's URL is required")
	case err != nil:
		return bad("prometheus", "%v", err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return bad("prometheus", "%q: want http://host:port", c.Prometheus)
	}
	switch {
	case c.Start.IsZero():
		return bad("start", "required")
	case c.End.IsZero():
		return bad("end", "required")
	case c.Step < time.Second || c.Step%time.Second != 0 || c.Step > maxStep:
		return bad("step", "%v: want whole seconds, from 1s to %v", c.Step, maxStep)
	case !c.End.After(c.Start):
		return bad("end", "%s is not after the start %s", c.End.Format(time.RFC3339), c.Start.Format(time.RFC3339))
	case c.End.Sub(c.Start) < c.Step:
		return bad("end", "the range %v is shorter than one step (%v)", c.End.Sub(c.Start), c.Step)
	}
	if len(c.Workloads) == 0 {
		return bad("workloads", "none given")
	}
	seen := map[string]bool{}
	for i, w := range c.Workloads {
		switch {
		case w.Service == "" || w.Namespace == "" || w.Name == "":
			return bad("workloads", "[%d]: service, namespace and name are required, got %+v", i, w)
		case seen[w.Service]:
			return bad("workloads", "service %q given twice", w.Service)
		}
		seen[w.Service] = true
	}
	if c.Ingress != "" && !seen[c.Ingress] {
		return bad("ingress", "%q is not one of the services (%s)", c.Ingress, strings.Join(c.services(), ", "))
	}
	if _, err := c.callers(); err != nil {
		return err
	}
	if c.Queries.Replicas == "" || c.Queries.CPUUse == "" || c.Queries.Arrivals == "" && c.Queries.Completions == "" {
		return bad("queries", "replicas, cpu_use and arrivals or completions are required")
	}
	for i, q := range list(c.Queries) {
		if _, err := parse(queryNames[i], q); err != nil {
			return bad("queries", "%v", err)
		}
	}
	return nil
}

func (c *Config) services() []string {
	names := make([]string, len(c.Workloads))
	for i, w := range c.Workloads {
		names[i] = w.Service
	}
	return names
}

func (c *Config) ingress() string {
	if c.Ingress != "" {
		return c.Ingress
	}
	return c.Workloads[0].Service
}

// callers maps every service but the ingress to its caller, checking that
// the edges make a tree rooted at the ingress.
func (c *Config) callers() (map[string]string, error) {
	names := c.services()
	in := c.ingress()
	caller := map[string]string{}
	for _, e := range c.Calls {
		switch {
		case !slices.Contains(names, e.Caller):
			return nil, bad("calls", "%s calls %s: no service %q", e.Caller, e.Callee, e.Caller)
		case !slices.Contains(names, e.Callee):
			return nil, bad("calls", "%s calls %s: no service %q", e.Caller, e.Callee, e.Callee)
		case e.Callee == in:
			return nil, bad("calls", "%s calls %s: the ingress has no caller", e.Caller, e.Callee)
		case e.Caller == e.Callee:
			return nil, bad("calls", "%s calls itself", e.Caller)
		case caller[e.Callee] != "":
			return nil, bad("calls", "%s has two callers, %s and %s: the graph is a tree (give the one with most calls)", e.Callee, caller[e.Callee], e.Caller)
		}
		caller[e.Callee] = e.Caller
	}
	for _, n := range names {
		if n != in && caller[n] == "" {
			caller[n] = in
		}
	}
	for _, n := range names {
		at := n
		for range names {
			if at == in {
				break
			}
			at = caller[at]
		}
		if at != in {
			return nil, bad("calls", "%s is in a cycle, not below the ingress %s", n, in)
		}
	}
	return caller, nil
}

// Service is one service as recorded.
type Service struct {
	prom.Workload
	// Caller calls it ("" for the ingress); PerCall is how many times per
	// call of the caller (its Calls over the caller's).
	Caller  string
	PerCall float64
	// Replicas and the limits per instance (cores, MB; 0 when the cluster
	// exports none) at the start of the range; MaxReplicas the most
	// replicas over it.
	Replicas, MaxReplicas int
	CPULimit, MemoryLimit float64
	// Calls arrived and Completed over the range; CPUSeconds used; Demand,
	// CPU seconds per completed call.
	Calls, Completed float64
	CPUSeconds       float64
	Demand           float64
}

// Recording is what Record read.
type Recording struct {
	Name       string
	Prometheus string
	// Start, End and Step are the range and its steps (End - Start is a
	// whole number of steps).
	Start, End time.Time
	Step       time.Duration
	// Ingress is the entry service; Rates its requests per second in each
	// step, Rates[i] over [Start + i·Step, Start + (i+1)·Step).
	Ingress string
	Rates   []float64
	// Services, in the Config's order.
	Services []Service
	// Notes are what a user should know: missing data filled in, a limit
	// assumed.
	Notes []string
}

// MeanRate is the ingress's mean request rate over the range.
func (r *Recording) MeanRate() float64 {
	sum := 0.0
	for _, v := range r.Rates {
		sum += v
	}
	return sum / float64(max(1, len(r.Rates)))
}

// The fields of Queries that recording uses.
const (
	qReplicas = iota
	qCPULimit
	qMemoryLimit
	qCPUUse
	qArrivals
	qCompletions
	numQueries
)

var queryNames = [numQueries]string{"replicas", "cpu_limit", "memory_limit", "cpu_use", "arrivals", "completions"}

func list(q prom.Queries) [numQueries]string {
	return [numQueries]string{q.Replicas, q.CPULimit, q.MemoryLimit, q.CPUUse, q.Arrivals, q.Completions}
}

func parse(name, text string) (*template.Template, error) {
	if text == "" {
		return nil, nil
	}
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", name, err)
	}
	return t, nil
}

// queryTimeout bounds one query to Prometheus.
const queryTimeout = time.Minute

// maxPoints is the most points asked of one range query (Prometheus
// refuses more than 11,000).
const maxPoints = 10000

// Record reads the range from Prometheus. It fails when Prometheus cannot
// answer, when a service has no replica count at the start, no CPU use or
// no calls, or when the ingress has no requests.
func Record(ctx context.Context, cfg Config) (*Recording, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	client, err := api.NewClient(api.Config{Address: cfg.Prometheus})
	if err != nil {
		return nil, bad("prometheus", "%v", err)
	}
	r := &recorder{api: promv1.NewAPI(client)}
	for i, s := range list(cfg.Queries) {
		r.tmpl[i], _ = parse(queryNames[i], s)
	}
	n := int(cfg.End.Sub(cfg.Start) / cfg.Step)
	rec := &Recording{Name: cfg.Name, Prometheus: cfg.Prometheus, Start: cfg.Start, Step: cfg.Step, Ingress: cfg.ingress()}
	if rec.Name == "" {
		rec.Name = "recorded"
	}
	rec.End = cfg.Start.Add(time.Duration(n) * cfg.Step)
	if !rec.End.Equal(cfg.End) {
		rec.Notes = append(rec.Notes, fmt.Sprintf("the range is cut to %d whole steps of %v: it ends at %s", n, cfg.Step, rec.End.Format(time.RFC3339)))
	}
	span := rec.End.Sub(rec.Start)
	callers, _ := cfg.callers()
	for _, w := range cfg.Workloads {
		s := Service{Workload: w, Caller: callers[w.Service]}
		if err := r.service(ctx, &s, rec, span); err != nil {
			return nil, fmt.Errorf("record: %s: %w", w.Service, err)
		}
		rec.Services = append(rec.Services, s)
	}
	for i := range rec.Services {
		s := &rec.Services[i]
		if s.Caller == "" {
			continue
		}
		c := rec.service(s.Caller)
		if !(c.Calls > 0) {
			return nil, fmt.Errorf("record: %s: its caller %s had no calls", s.Service, c.Service)
		}
		s.PerCall = s.Calls / c.Calls
	}
	in := rec.service(rec.Ingress)
	if rec.Rates, err = r.rates(ctx, in.Workload, rec, n); err != nil {
		return nil, fmt.Errorf("record: %s: arrivals: %w", in.Service, err)
	}
	return rec, nil
}

func (r *Recording) service(name string) *Service {
	for i := range r.Services {
		if r.Services[i].Service == name {
			return &r.Services[i]
		}
	}
	return nil
}

type recorder struct {
	api  promv1.API
	tmpl [numQueries]*template.Template
}

func (r *recorder) render(f int, w prom.Workload, period time.Duration) (string, error) {
	var b bytes.Buffer
	err := r.tmpl[f].Execute(&b, struct {
		prom.Workload
		Period string
	}{w, model.Duration(period).String()})
	if err != nil {
		return "", fmt.Errorf("query %s: %w", queryNames[f], err)
	}
	return b.String(), nil
}

// service fills s's replicas, limits, calls and demand.
func (r *recorder) service(ctx context.Context, s *Service, rec *Recording, span time.Duration) error {
	w := s.Workload
	// At the start: replicas and limits.
	var at [numQueries]float64
	var has [numQueries]bool
	for _, f := range []int{qReplicas, qCPULimit, qMemoryLimit} {
		if r.tmpl[f] == nil {
			continue
		}
		q, err := r.render(f, w, rec.Step)
		if err != nil {
			return err
		}
		if at[f], has[f], err = r.instant(ctx, q, rec.Start); err != nil {
			return fmt.Errorf("%s: %w", queryNames[f], err)
		}
		if f == qReplicas {
			if !has[f] {
				return fmt.Errorf("no replica count at the range's start %s (did the workload exist then?): %s", rec.Start.Format(time.RFC3339), q)
			}
			// The most replicas over the range, sampled at each step.
			most, ok, err := r.instant(ctx, fmt.Sprintf("max_over_time((%s)[%s:%s])", q, model.Duration(span), model.Duration(rec.Step)), rec.End)
			if err != nil {
				return fmt.Errorf("replicas over the range: %w", err)
			}
			s.MaxReplicas = int(math.Round(most))
			if !ok {
				s.MaxReplicas = 0
			}
		}
	}
	s.Replicas = int(math.Round(at[qReplicas]))
	s.MaxReplicas = max(s.MaxReplicas, s.Replicas)
	if s.Replicas < 1 {
		return fmt.Errorf("%d replicas at the range's start: a replayed service needs at least one", s.Replicas)
	}
	s.CPULimit, s.MemoryLimit = at[qCPULimit], at[qMemoryLimit]
	if !has[qCPULimit] || !(s.CPULimit > 0) {
		s.CPULimit = 0
		rec.Notes = append(rec.Notes, fmt.Sprintf("%s: no CPU limit at the start: the scenario gives it 1 core per instance", w.Service))
	}
	if !(s.MemoryLimit > 0) {
		s.MemoryLimit = 0
	}
	// Over the whole range: calls and CPU seconds.
	for _, f := range []int{qCPUUse, qArrivals, qCompletions} {
		if r.tmpl[f] == nil {
			continue
		}
		q, err := r.render(f, w, span)
		if err != nil {
			return err
		}
		if at[f], has[f], err = r.instant(ctx, q, rec.End); err != nil {
			return fmt.Errorf("%s: %w", queryNames[f], err)
		}
		if f == qCPUUse && !has[f] {
			return fmt.Errorf("no CPU use over the range: %s", q)
		}
	}
	s.CPUSeconds = at[qCPUUse] * span.Seconds()
	s.Calls, s.Completed = at[qArrivals], at[qCompletions]
	if !has[qArrivals] {
		s.Calls = s.Completed
	}
	if !has[qCompletions] {
		s.Completed = s.Calls
	}
	if !(s.Completed > 0) {
		return errors.New("no calls completed over the range: its CPU demand per call cannot be calibrated (leave it out, or widen the range)")
	}
	s.Demand = s.CPUSeconds / s.Completed
	return nil
}

// rates are the ingress's requests per second in each of the n steps.
func (r *recorder) rates(ctx context.Context, w prom.Workload, rec *Recording, n int) ([]float64, error) {
	f := qArrivals
	if r.tmpl[f] == nil {
		f = qCompletions
	}
	q, err := r.render(f, w, rec.Step)
	if err != nil {
		return nil, err
	}
	// The point at Start + (i+1)·Step holds step i's requests.
	vals, err := r.series(ctx, q, rec.Start.Add(rec.Step), n, rec.Step)
	if err != nil {
		return nil, err
	}
	missing := 0
	total := 0.0
	for i, v := range vals {
		if math.IsNaN(v) || v < 0 {
			missing++
			v = 0
		}
		vals[i] = v / rec.Step.Seconds()
		total += v
	}
	if missing == n || !(total > 0) {
		return nil, fmt.Errorf("no requests in any step (each step of %v must hold two scrapes of the series; a longer step may): %s", rec.Step, q)
	}
	if missing > 0 {
		rec.Notes = append(rec.Notes, fmt.Sprintf("%s: %d of %d steps have no data and replay no arrivals (a longer step may help)", w.Service, missing, n))
	}
	return vals, nil
}

// instant runs q at t: the sum of its samples (NaN ones left out); ok is
// false when there is none.
func (r *recorder) instant(ctx context.Context, q string, t time.Time) (float64, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	res, _, _, err := r.api.Query(ctx, q, t)
	if err != nil {
		return 0, false, err
	}
	switch v := res.(type) {
	case model.Vector:
		sum, ok := 0.0, false
		for _, s := range v {
			if x := float64(s.Value); !math.IsNaN(x) {
				sum, ok = sum+x, true
			}
		}
		return sum, ok, nil
	case *model.Scalar:
		return float64(v.Value), !math.IsNaN(float64(v.Value)), nil
	}
	return 0, false, fmt.Errorf("result of type %s, want a vector", res.Type())
}

// series runs q at first, first + step, ... (n points): the sum of the
// series at each, NaN where none has a sample.
func (r *recorder) series(ctx context.Context, q string, first time.Time, n int, step time.Duration) ([]float64, error) {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	for lo := 0; lo < n; lo += maxPoints {
		hi := min(n, lo+maxPoints)
		rng := promv1.Range{Start: first.Add(time.Duration(lo) * step), End: first.Add(time.Duration(hi-1) * step), Step: step}
		qctx, cancel := context.WithTimeout(ctx, queryTimeout)
		res, _, _, err := r.api.QueryRange(qctx, q, rng)
		cancel()
		if err != nil {
			return nil, err
		}
		m, ok := res.(model.Matrix)
		if !ok {
			return nil, fmt.Errorf("result of type %s, want a matrix", res.Type())
		}
		for _, ss := range m {
			for _, p := range ss.Values {
				i := int(math.Round(float64(p.Timestamp.Time().Sub(first)) / float64(step)))
				x := float64(p.Value)
				if i < 0 || i >= n || math.IsNaN(x) {
					continue
				}
				if math.IsNaN(out[i]) {
					out[i] = 0
				}
				out[i] += x
			}
		}
	}
	return out, nil
}
