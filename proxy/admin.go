package proxy

import (
	"context"
	"encoding/json"
	"github.com/shoal-project/shoal/control/lb"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// AdminHandler serves the admin endpoints:
//
//	/metrics   Prometheus metrics (shoal_proxy_*, Go runtime, process)
//	/healthz   200 while the process serves
//	/readyz    200 when not draining and some backend is healthy, else 503
//	/status    JSON: policy, backends with weights, health and in-flight counts, agent
func (p *Proxy) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(p.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if reason := p.notReady(); reason != "" {
			http.Error(w, reason, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(p.Status())
	})
	return mux
}

func (p *Proxy) notReady() string {
	if p.draining.Load() {
		return "draining"
	}
	for _, s := range p.gen.Load().pool.state(time.Now()) {
		if s.Healthy {
			return ""
		}
	}
	return "no healthy backend"
}

// Status is the proxy's state, as the status page shows it.
type Status struct {
	Name       string         `json:"name"`
	Policy     string         `json:"policy"`
	Generation int            `json:"generation"` // configurations loaded before this one
	Draining   bool           `json:"draining"`
	Admission  lb.Admission   `json:"admission"`
	Queued     int            `json:"queued"` // requests waiting for a backend with room
	Backends   []backendState `json:"backends"`
	Agent      *agentStatus   `json:"agent,omitempty"`
}

// Status returns the proxy's current state.
func (p *Proxy) Status() Status {
	g := p.gen.Load()
	s := Status{Name: g.cfg.Name, Policy: g.cfg.Policy, Generation: g.id, Draining: p.draining.Load(),
		Admission: g.pool.adm, Queued: g.pool.queued(), Backends: g.pool.state(time.Now())}
	if g.agent != nil {
		a := g.agent.Status()
		s.Agent = &a
	}
	return s
}

// checkHealth polls every backend of g until ctx is done (active health
// checking): GET the check path; any 2xx or 3xx answer in time passes.
func (p *Proxy) checkHealth(ctx context.Context, g *generation) {
	k := g.cfg.Health.Check
	client := &http.Client{Transport: g.checks, Timeout: k.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tick := time.NewTicker(k.Interval)
	defer tick.Stop()
	for {
		for _, b := range g.pool.backends {
			ok := probe(ctx, client, b.url.Scheme+"://"+b.url.Host+k.Path)
			if ctx.Err() != nil {
				return
			}
			if b.checked(ok, k.Fall, k.Rise) {
				p.log.Warn("active health check changed state", "backend", b.name, "up", ok)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func probe(ctx context.Context, c *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}
