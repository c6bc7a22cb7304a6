package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/loadgen"
	"github.com/shoal-project/shoal/workload"
)

// testBackend is an HTTP server on 127.0.0.1 that names itself in the
// X-Backend header, sleeps ?sleep=D (and its delay), holds a request with
// ?hold=1 until release is called, answers load probes (lb.ProbePath)
// with RIF 0 and its delay as the latency, and can be killed and
// restarted on the same address.
type testBackend struct {
	t      testing.TB
	id     string
	addr   string
	served atomic.Int64
	probes atomic.Int64 // load probes answered
	delay  atomic.Int64 // nanoseconds every request waits
	// reportLoad makes responses piggyback the load, as 'shoal backend'
	// does: RIF 0 and the delay as the time at the server.
	reportLoad atomic.Bool
	held       chan struct{}
	release    func()
	mu         sync.Mutex
	srv        *http.Server
}

func newTestBackend(t testing.TB, id string) *testBackend {
	b := &testBackend{t: t, id: id, held: make(chan struct{})}
	b.release = sync.OnceFunc(func() { close(b.held) })
	t.Cleanup(b.release)
	b.start("127.0.0.1:0")
	t.Cleanup(b.kill)
	return b
}

func (b *testBackend) url() string { return "http://" + b.addr }

func (b *testBackend) start(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		b.t.Fatalf("backend %s: %v", b.id, err)
	}
	b.addr = ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(b.serve)}
	b.mu.Lock()
	b.srv = srv
	b.mu.Unlock()
	go srv.Serve(ln)
}

func (b *testBackend) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == lb.ProbePath { // a load probe: idle, its delay as the latency estimate
		b.probes.Add(1)
		w.Header().Set(lb.HeaderRIF, "0")
		w.Header().Set(lb.HeaderLatency, fmt.Sprint(time.Duration(b.delay.Load()).Seconds()))
		return
	}
	time.Sleep(time.Duration(b.delay.Load()))
	if d, err := time.ParseDuration(r.URL.Query().Get("sleep")); err == nil {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	if r.URL.Query().Get("hold") != "" {
		select {
		case <-b.held:
		case <-r.Context().Done():
			return
		}
	}
	io.Copy(io.Discard, r.Body)
	b.served.Add(1)
	if b.reportLoad.Load() {
		w.Header().Set(lb.HeaderRIF, "0")
		w.Header().Set(lb.HeaderServiceTime, fmt.Sprint(max(time.Duration(b.delay.Load()), time.Microsecond).Seconds()))
	}
	w.Header().Set("X-Backend", b.id)
	w.Header().Set("X-Seen-Forwarded-For", r.Header.Get("X-Forwarded-For"))
	w.Header().Set("X-Seen-Connection-Header", r.Header.Get("X-Hop"))
	w.Header().Set("X-Seen-Host", r.Host)
	fmt.Fprintf(w, "%s %s\n", b.id, r.URL.RequestURI())
}

// kill closes the listener and every connection at once (a crash).
func (b *testBackend) kill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv != nil {
		b.srv.Close()
		b.srv = nil
	}
}

// restart listens again on the old address.
func (b *testBackend) restart() { b.start(b.addr) }

// testConfig is a valid configuration for backends, with defaults.
func testConfig(t *testing.T, policy string, backends ...*testBackend) *Config {
	t.Helper()
	c := &Config{Policy: policy, Seed: 1}
	for _, b := range backends {
		c.Backends = append(c.Backends, BackendConfig{URL: b.url()})
	}
	c.ApplyDefaults()
	if err := c.Validate(lb.Classical().Names()); err != nil {
		t.Fatal(err)
	}
	return c
}

// runningProxy is a proxy serving on 127.0.0.1 for one test.
type runningProxy struct {
	*Proxy
	url, admin string
	stop       context.CancelFunc
	done       chan error
	once       sync.Once
}

func startProxy(t testing.TB, cfg *Config) *runningProxy {
	t.Helper()
	p, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	adm, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rp := &runningProxy{Proxy: p, url: "http://" + ln.Addr().String(), admin: "http://" + adm.Addr().String(),
		stop: cancel, done: make(chan error, 1)}
	go func() { rp.done <- p.Serve(ctx, ln, adm) }()
	t.Cleanup(func() { rp.shutdown(t) })
	return rp
}

// shutdown stops the proxy and waits for it; later calls do nothing.
func (rp *runningProxy) shutdown(t testing.TB) {
	rp.once.Do(func() {
		rp.stop()
		select {
		case err := <-rp.done:
			if err != nil {
				t.Errorf("proxy: %v", err)
			}
		case <-time.After(40 * time.Second):
			t.Error("proxy did not stop")
		}
	})
}

// load sends an open-loop Poisson load for d and returns the result.
func load(t *testing.T, url string, rate float64, d time.Duration) *loadgen.Result {
	t.Helper()
	p, err := workload.NewPoisson(rate)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	defer client.CloseIdleConnections()
	res, err := loadgen.Run(context.Background(), loadgen.Config{URLs: []string{url}, Arrivals: p, Duration: d, Seed: 1}, client)
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	return res
}

// requireNoLoss fails unless every scheduled request completed.
func requireNoLoss(t *testing.T, res *loadgen.Result) {
	t.Helper()
	if res.Failures() != 0 || res.Dropped != 0 || res.Completed != res.Scheduled || res.Completed == 0 {
		t.Fatalf("lost requests: scheduled %d, completed %d, dropped %d, failed %v", res.Scheduled, res.Completed, res.Dropped, res.Failed)
	}
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}
