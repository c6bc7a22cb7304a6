package proxy

import (
	"io"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/lb"
)

// BenchmarkProxyLoopback measures whole requests through the proxy to a Go
// backend on 127.0.0.1 (keep-alive on both sides), client, proxy and
// backend in one process; bench/proxy/overhead.sh compares the proxy with
// nginx and HAProxy as separate processes.
func BenchmarkProxyLoopback(b *testing.B) {
	be := newTestBackend(b, "a")
	cfg := &Config{Backends: []BackendConfig{{URL: be.url()}}}
	cfg.ApplyDefaults()
	rp := startProxy(b, cfg)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 10 * time.Second}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(rp.url + "/")
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}

// BenchmarkPick is the request path's selection: lock, health, selector.
func BenchmarkPick(b *testing.B) {
	var backends []*backend
	for i := 0; i < 7; i++ {
		backends = append(backends, &backend{name: "x"})
	}
	p := newPool(backends, []float64{1, 1, 2, 2, 2, 4, 4}, &lb.SED{Rand: rand.New(rand.NewPCG(1, 2))})
	at := time.Now()
	now := at.UnixNano()
	b.ReportAllocs()
	for b.Loop() {
		p.release(p.pick(now, 0, nil), at, time.Millisecond)
	}
}

func TestPickAllocatesNothing(t *testing.T) {
	backends := []*backend{{name: "a"}, {name: "b"}}
	for _, sel := range []lb.Selector{&lb.SED{Rand: rand.New(rand.NewPCG(1, 2))}, &lb.LeastRequest{Rand: rand.New(rand.NewPCG(1, 2))},
		&lb.PeakEWMA{Rand: rand.New(rand.NewPCG(1, 2))}} {
		p := newPool(backends, []float64{1, 2}, sel)
		p.setLearned([]float64{2, 1})
		at := time.Now()
		now := at.UnixNano()
		p.release(p.pick(now, 0, nil), at, time.Millisecond) // sized
		if n := testing.AllocsPerRun(100, func() { p.release(p.pick(now, 0, nil), at, time.Millisecond) }); n != 0 {
			t.Fatalf("%T: pick allocates %v times", sel, n)
		}
	}
}
