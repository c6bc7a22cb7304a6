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
// with net/http/httputil.ReverseProxy (hop-by-hop headers removed and
// X-Forwarded-For/Host/Proto set as RFC 9110 section 7.6.1 and the de-facto
// headers say; bodies streamed), and measures the task duration (until the
// response headers) and completion time that the agent learns from.
//
// Retries: a request without a body is retried on another backend after a
// connection failure if its method is idempotent (RFC 9110 section 9.2.2),
// or if the connection could not be made at all (nothing was sent), at most
// Config.Retries times. Passive health: Config.Health.Failures connection
// failures in a row eject a backend for a backoff that doubles per repeated
// ejection; an optional active check polls every backend.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
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
	rp        *httputil.ReverseProxy
	base      time.Time // time zero of the agents' clocks

	mu       sync.Mutex // serialises Reload and Run's shutdown
	backends map[string]*backend
	gen      atomic.Pointer[generation]
	draining atomic.Bool
	reloads  int
}

// generation is one configuration in force: new requests use the newest;
// a request keeps the one it started with until it ends.
type generation struct {
	cfg       *Config
	id        int
	pool      *pool
	agent     *agentRunner // nil unless policy distr-lb
	transport *http.Transport
	cancel    context.CancelFunc // stops the agent and the health checks
	done      sync.WaitGroup     // the agent and health-check goroutines
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
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			// Append the client to the inbound X-Forwarded-For, as nginx's
			// $proxy_add_x_forwarded_for does.
			r.Out.Header["X-Forwarded-For"] = r.In.Header["X-Forwarded-For"]
			r.SetXForwarded()
			r.Out.Host = r.In.Host // the client's Host, as nginx's proxy_set_header Host $host
		},
		Transport:    p,
		ErrorHandler: p.proxyError,
		BufferPool:   newBufferPool(),
		ErrorLog:     slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
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
	sel, err := p.selectors.New(name, lb.Deps{Rand: rand.New(rand.NewPCG(cfg.Seed, uint64(p.reloads)))})
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	g.pool = newPool(backends, weights, sel)
	if cfg.Policy == PolicyDistrLB {
		if g.agent, err = newAgentRunner(cfg.Agent, len(backends), g.pool, p.base); err != nil {
			return err
		}
		g.agent.onDecision = func(s float64) {
			p.metrics.decisions.Inc()
			p.metrics.decideTime.Observe(s)
		}
	}
	g.transport = newTransport(cfg.Timeouts)
	// Commit: from here nothing fails.
	for url := range p.backends {
		if !keep[url] {
			delete(p.backends, url)
			p.metrics.forget(url)
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
	g.transport.CloseIdleConnections()
}

func newTransport(t Timeouts) *http.Transport {
	d := &net.Dialer{Timeout: t.Connect, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext:           d.DialContext,
		ResponseHeaderTimeout: t.ResponseHeader,
		IdleConnTimeout:       t.Idle,
		MaxIdleConns:          0, // no global bound: the per-host one applies
		MaxIdleConnsPerHost:   1024,
		DisableCompression:    true, // pass Accept-Encoding through untouched
		ForceAttemptHTTP2:     false,
	}
}

// ServeHTTP implements http.Handler: the data plane.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.rp.ServeHTTP(w, r) }

// errNoBackend: every backend was tried or none is configured.
var errNoBackend = errors.New("no backend available")

// RoundTrip implements http.RoundTripper for the ReverseProxy: it picks a
// backend, forwards, and retries elsewhere on connection failure.
func (p *Proxy) RoundTrip(req *http.Request) (*http.Response, error) {
	g := p.gen.Load()
	retries := *g.cfg.Retries
	var skip []bool
	for attempt := 0; ; attempt++ {
		start := time.Now()
		j := g.pool.pick(start.UnixNano(), skip)
		if j < 0 {
			p.metrics.errors.WithLabelValues("", kindNoBackend).Inc()
			return nil, errNoBackend
		}
		b := g.pool.backends[j]
		bm := b.metrics
		req.URL.Scheme, req.URL.Host = b.url.Scheme, b.url.Host
		var sentAt time.Duration
		if g.agent != nil {
			sentAt = start.Sub(p.base)
			g.agent.send(feedback{kind: sent, j: int32(j), at: sentAt})
		}
		resp, err := g.transport.RoundTrip(req)
		if err == nil {
			b.succeeded()
			if resp.StatusCode == http.StatusSwitchingProtocols {
				// The upgraded connection is the client's now.
				p.finish(g, j, start, time.Now(), resp.StatusCode, sentAt)
				return resp, nil
			}
			resp.Body = &trackedBody{ReadCloser: resp.Body, p: p, g: g, j: j, start: start, headers: time.Now(),
				code: resp.StatusCode, sentAt: sentAt}
			return resp, nil
		}
		g.pool.release(j)
		if g.agent != nil {
			g.agent.send(feedback{kind: abandoned, j: int32(j), at: time.Since(p.base), sentAt: sentAt})
		}
		kind := classify(req, err)
		switch kind {
		case kindClientGone:
			bm.gone.Inc()
			return nil, err
		case kindConnect:
			bm.connect.Inc()
		case kindTimeout:
			bm.timeout.Inc()
		default:
			bm.transport.Inc()
		}
		if ejected, until := b.failed(time.Now(), g.cfg.Health); ejected {
			bm.ejections.Inc()
			p.log.Warn("backend ejected", "backend", b.name, "until", until.Format(time.RFC3339Nano), "error", err)
		}
		if attempt >= retries || !retryable(req, kind) {
			return nil, err
		}
		bm.retries.Inc()
		if skip == nil {
			skip = make([]bool, len(g.pool.backends))
		}
		skip[j] = true
	}
}

// finish records a request's end at backend j.
func (p *Proxy) finish(g *generation, j int, start, headers time.Time, code int, sentAt time.Duration) {
	end := time.Now()
	g.pool.release(j)
	g.pool.backends[j].metrics.answered(code, headers.Sub(start), end.Sub(start))
	if g.agent != nil {
		g.agent.send(feedback{kind: answered, j: int32(j), at: end.Sub(p.base), sentAt: sentAt, headersAt: headers.Sub(p.base)})
	}
}

// trackedBody ends a request's accounting when the ReverseProxy closes the
// response body (after copying it to the client, or on failure).
type trackedBody struct {
	io.ReadCloser
	p       *Proxy
	g       *generation
	j       int
	start   time.Time
	headers time.Time
	code    int
	sentAt  time.Duration
	closed  bool
}

// Close implements io.Closer.
func (t *trackedBody) Close() error {
	err := t.ReadCloser.Close()
	if !t.closed {
		t.closed = true
		t.p.finish(t.g, t.j, t.start, t.headers, t.code, t.sentAt)
	}
	return err
}

// classify names why an attempt failed.
func classify(req *http.Request, err error) string {
	if req.Context().Err() != nil {
		return kindClientGone
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return kindConnect
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return kindTimeout
	}
	return kindTransport
}

// retryable reports whether a request that failed with kind may go to
// another backend: only without a body (it cannot be replayed), and only if
// nothing reached the backend or the method is idempotent.
func retryable(req *http.Request, kind string) bool {
	if req.Body != nil && req.Body != http.NoBody {
		return false
	}
	if kind == kindConnect {
		return true
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return req.Header.Get("Idempotency-Key") != ""
}

// proxyError answers a request that got no response: 503 if no backend
// was available, 504 on a timeout, 502 otherwise; nothing if the client
// went away.
func (p *Proxy) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusBadGateway
	switch {
	case r.Context().Err() != nil:
		return
	case errors.Is(err, errNoBackend):
		code = http.StatusServiceUnavailable
	case classify(r, err) == kindTimeout:
		code = http.StatusGatewayTimeout
	}
	p.log.Debug("proxy error", "method", r.Method, "path", r.URL.Path, "status", code, "error", err)
	w.WriteHeader(code)
}

// bufferPool lends the ReverseProxy its copy buffers.
type bufferPool struct{ sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}
}

func (b *bufferPool) Get() []byte  { return *b.Pool.Get().(*[]byte) }
func (b *bufferPool) Put(x []byte) { b.Pool.Put(&x) }

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
	srv := &http.Server{Handler: p, ReadHeaderTimeout: cfg.Timeouts.ReadHeader, IdleTimeout: cfg.Timeouts.Idle,
		ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
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
	if serr := srv.Shutdown(sctx); serr != nil && err == nil {
		err = fmt.Errorf("drain: %w", serr)
	}
	if adminSrv != nil {
		adminSrv.Close()
	}
	g := p.gen.Load()
	g.cancel()
	g.done.Wait()
	g.transport.CloseIdleConnections()
	return err
}
