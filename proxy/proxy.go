// Package proxy is Shoal's HTTP/1.1 load balancer: the real data plane for
// the request selectors of control/lb and the Distr-LB agent trained in the
// simulator. Several proxies in front of the same backends are independent
// agents; each sees only its own traffic, as in the Distr-LB paper.
//
// The usage loop:
//
//	cfg, err := proxy.LoadConfig("proxy.yaml", lb.Classical().Names())
//	p, err := proxy.New(cfg, proxy.Options{Logger: log, Selectors: lb.Classical()})
//	go p.Run(ctx)            // serves cfg.Listen and cfg.Admin; drains when ctx is done
//	p.Reload(newCfg)         // e.g. on SIGHUP: no request is dropped
//
// Per request the proxy picks a backend with the selector (its own in-flight
// counts, the configured or learned weights, health), forwards the request
// on a kept-alive connection (hop-by-hop fields removed and
// X-Forwarded-For/Host/Proto set as RFC 9110 section 7.6.1 and the de-facto
// fields say; bodies streamed), and measures the task duration (until the
// response headers) and completion time that the agent learns from. The
// wire format is package http1's: the client's goroutine reads and writes
// both connections, with no allocation per request once warm, which is
// what lets one core forward as many requests as nginx does.
//
// Retries: a request goes to another backend after a connection failure if
// nothing was sent (the connection could not be made), or if it has no
// body and its method is idempotent (RFC 9110 section 9.2.2), at most
// Config.Retries times. A kept-alive connection that the backend had
// closed is replaced without counting as a failure. Passive health: Config.Health.Failures connection
// failures in a row eject a backend for a backoff that doubles per repeated
// ejection; an optional active check polls every backend.
package proxy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-project/shoal/control/lb"
)

// Options are what a proxy is built with besides its configuration.
type Options struct {
	// Logger receives the proxy's log (default: discard).
	Logger *slog.Logger
	// Selectors builds the classical policies by name (lb.Classical()).
	Selectors lb.Registry
}

// Proxy is a running load balancer. Its configuration can be replaced at
// run time (Reload) without dropping requests.
type Proxy struct {
	log       *slog.Logger
	selectors lb.Registry
	metrics   *metrics
	base      time.Time // time zero of the agents' clocks

	mu       sync.Mutex // serialises Reload and Run's shutdown
	backends map[string]*backend
	gen      atomic.Pointer[generation]
	draining atomic.Bool
	reloads  int
	clients  atomic.Int64 // client connections open

}

// generation is one configuration in force: new requests use the newest;
// a request keeps the one it started with until it ends.
type generation struct {
	cfg    *Config
	id     int
	pool   *pool
	agent  *agentRunner    // nil unless policy distr-lb
	checks *http.Transport // of the active health checks, if any
	// hashing says the policy routes on an affinity key (HashHeader's).
	hashing    bool
	hashHeader []byte
	cancel     context.CancelFunc // stops the agent and the health checks
	done       sync.WaitGroup     // the agent and health-check goroutines
}

// New builds a proxy for cfg (validated, as by Decode). Nothing listens
// until Run.
func New(cfg *Config, opts Options) (*Proxy, error) {
	p := &Proxy{log: opts.Logger, selectors: opts.Selectors, base: time.Now(), backends: map[string]*backend{}}
	if p.log == nil {
		p.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if p.selectors == nil {
		p.selectors = lb.Classical()
	}
	p.metrics = newMetrics(p)
	if err := p.install(cfg); err != nil {
		return nil, err
	}
	return p, nil
}

// Config returns the configuration in force.
func (p *Proxy) Config() *Config { return p.gen.Load().cfg }

// Reload replaces the configuration: new requests use it at once, requests
// in progress finish under the old one, whose agent and health checks stop
// when they are done. The listen and admin addresses cannot change (a new
// socket is a restart). On error the old configuration stays.
func (p *Proxy) Reload(cfg *Config) error {
	old := p.gen.Load().cfg
	if cfg.Listen != old.Listen {
		return fmt.Errorf("listen: cannot change from %s to %s on reload; restart the proxy", old.Listen, cfg.Listen)
	}
	if cfg.Admin != old.Admin {
		return fmt.Errorf("admin: cannot change from %q to %q on reload; restart the proxy", old.Admin, cfg.Admin)
	}
	if cfg.MaxConnections != old.MaxConnections {
		return fmt.Errorf("max_connections: cannot change from %d to %d on reload; restart the proxy", old.MaxConnections, cfg.MaxConnections)
	}
	return p.install(cfg)
}

// install builds a generation for cfg and makes it current.
func (p *Proxy) install(cfg *Config) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := &generation{cfg: cfg, id: p.reloads}
	var backends []*backend
	var weights []float64
	keep := map[string]bool{}
	for i, bc := range cfg.Backends {
		b := p.backends[bc.URL]
		if b == nil {
			var err error
			if b, err = newBackend(bc.URL); err != nil {
				return fmt.Errorf("backends[%d].url: %w", i, err)
			}
		}
		keep[bc.URL] = true
		backends = append(backends, b)
		weights = append(weights, bc.Weight)
	}
	name := cfg.Policy
	if name == PolicyDistrLB {
		name = "sed" // the Distr-LB data plane: argmin (q+1)/a (paper Alg. 2, line 12)
	}
	deps := lb.Deps{Rand: rand.New(rand.NewPCG(cfg.Seed, uint64(p.reloads))), Params: cfg.Params}
	var sel lb.Selector
	var err error
	if cfg.Policy == PolicyDistrLBGeneral && cfg.Agent != nil {
		sel, err = generalSelector(cfg.Agent.File, deps)
	} else {
		sel, err = p.selectors.New(name, deps)
	}
	if err != nil {
		return fmt.Errorf("policy %s: %w", cfg.Policy, err)
	}
	g.hashing, g.hashHeader = lb.Hashing(name), []byte(cfg.HashHeader)
	g.pool = newPool(backends, weights, sel, cfg.Admission, g.hashing)
	if cfg.Policy == PolicyDistrLB {
		if g.agent, err = newAgentRunner(cfg.Agent, len(backends), g.pool, p.base, cfg.Seed, p.log); err != nil {
			return err
		}
		g.agent.onDecision = func(s float64) {
			p.metrics.decisions.Inc()
			p.metrics.decideTime.Observe(s)
		}
		g.agent.onLearn = func(s, reward float64, updates int) {
			p.metrics.learnTime.Observe(s)
			p.metrics.reward.Set(reward)
			p.metrics.updates.Set(float64(updates))
		}
	}
	if cfg.Health.Check != nil {
		g.checks = &http.Transport{DialContext: (&net.Dialer{Timeout: cfg.Timeouts.Connect}).DialContext,
			IdleConnTimeout: cfg.Timeouts.Idle, DisableCompression: true}
	}
	// Commit: from here nothing fails.
	for url := range p.backends {
		if b := p.backends[url]; !keep[url] {
			delete(p.backends, url)
			p.metrics.forget(url)
			b.conns.closeIdle() // requests still on it put theirs back and age out
		}
	}
	for _, b := range backends {
		p.backends[b.name] = b
		if b.metrics == nil {
			b.metrics = p.metrics.forBackend(b.name)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	if g.agent != nil {
		g.done.Add(1)
		go func() { defer g.done.Done(); g.agent.Run(ctx) }()
	}
	if cfg.Health.Check != nil {
		g.done.Add(1)
		go func() { defer g.done.Done(); p.checkHealth(ctx, g) }()
	}
	p.startProbes(ctx, g)
	old := p.gen.Swap(g)
	p.reloads++
	if old != nil {
		p.log.Info("configuration reloaded", "generation", g.id, "policy", cfg.Policy, "backends", len(backends))
		go p.retire(old)
	}
	return nil
}

// retire stops an old generation once no request uses it any more.
func (p *Proxy) retire(g *generation) {
	for g.pool.busy() {
		time.Sleep(50 * time.Millisecond)
	}
	g.cancel()
	g.done.Wait()
	if g.checks != nil {
		g.checks.CloseIdleConnections()
	}
}

// nowSince is the time now, read as t (which has a monotonic reading) plus
// the monotonic time since: one clock read where time.Now makes two (the
// wall clock and the monotonic one). Its wall clock is t's advanced by the
// elapsed time, which is what a reading would give unless the wall clock
// was set in between.
func nowSince(t time.Time) time.Time { return t.Add(time.Since(t)) }

// finish records a request's end at backend j, now, and returns the time.
func (p *Proxy) finish(g *generation, j int, start, headers time.Time, code int, sentAt time.Duration) (end time.Time) {
	end = nowSince(start)
	g.pool.release(j, end, headers.Sub(start))
	g.pool.backends[j].metrics.answered(code, headers.Sub(start), end.Sub(start))
	if g.agent != nil {
		g.agent.send(feedback{kind: answered, j: int32(j), at: end.Sub(p.base), sentAt: sentAt, headersAt: headers.Sub(p.base)})
	}
	return end
}

// Run serves the configured listen and admin addresses until ctx is done,
// then shuts down gracefully: the proxy stops accepting, reports not ready,
// and waits up to Timeouts.Shutdown for requests in progress.
func (p *Proxy) Run(ctx context.Context) error {
	cfg := p.Config()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	var admin net.Listener
	if cfg.Admin != "" {
		if admin, err = net.Listen("tcp", cfg.Admin); err != nil {
			ln.Close()
			return fmt.Errorf("admin: %w", err)
		}
	}
	return p.Serve(ctx, ln, admin)
}

// Serve is Run on listeners the caller opened (admin may be nil).
func (p *Proxy) Serve(ctx context.Context, ln, admin net.Listener) error {
	cfg := p.Config()
	srv := &server{p: p, conns: map[*clientConn]struct{}{}, slots: make(chan struct{}, cfg.MaxConnections)}
	errc := make(chan error, 2)
	go func() { errc <- srv.serve(ln) }()
	var adminSrv *http.Server
	if admin != nil {
		adminSrv = &http.Server{Handler: p.AdminHandler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { errc <- adminSrv.Serve(admin) }()
		p.log.Info("admin listening", "addr", admin.Addr().String())
	}
	p.log.Info("proxy listening", "addr", ln.Addr().String(), "policy", cfg.Policy, "backends", len(cfg.Backends))
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		err = fmt.Errorf("serve: %w", err)
	}
	p.draining.Store(true)
	p.log.Info("shutting down: draining requests in progress", "timeout", p.Config().Timeouts.Shutdown)
	sctx, cancel := context.WithTimeout(context.Background(), p.Config().Timeouts.Shutdown)
	defer cancel()
	ln.Close()
	if serr := srv.shutdown(sctx); serr != nil && err == nil {
		err = fmt.Errorf("drain: %w", serr)
	}
	if adminSrv != nil {
		adminSrv.Close()
	}
	g := p.gen.Load()
	g.cancel()
	g.done.Wait()
	if g.checks != nil {
		g.checks.CloseIdleConnections()
	}
	p.mu.Lock()
	for _, b := range p.backends {
		b.conns.closeIdle()
	}
	p.mu.Unlock()
	return err
}
