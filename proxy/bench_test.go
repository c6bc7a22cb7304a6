package proxy

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/proxy/http1"
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
	p := newPool(backends, []float64{1, 1, 2, 2, 2, 4, 4}, &lb.SED{Rand: rand.New(rand.NewPCG(1, 2))}, lb.Admission{}, false)
	at := time.Now()
	now := at.UnixNano()
	b.ReportAllocs()
	for b.Loop() {
		p.release(pickOne(p, now), at, time.Millisecond)
	}
}

func TestPickAllocatesNothing(t *testing.T) {
	backends := []*backend{{name: "a"}, {name: "b"}}
	for _, sel := range []lb.Selector{&lb.SED{Rand: rand.New(rand.NewPCG(1, 2))}, &lb.LeastRequest{Rand: rand.New(rand.NewPCG(1, 2))},
		&lb.PeakEWMA{Rand: rand.New(rand.NewPCG(1, 2))}} {
		p := newPool(backends, []float64{1, 2}, sel, lb.Admission{}, false)
		p.setLearned([]float64{2, 1})
		at := time.Now()
		now := at.UnixNano()
		p.release(pickOne(p, now), at, time.Millisecond) // sized
		if n := testing.AllocsPerRun(100, func() { p.release(pickOne(p, now), at, time.Millisecond) }); n != 0 {
			t.Fatalf("%T: pick allocates %v times", sel, n)
		}
	}
}

// BenchmarkProxyRaw measures whole requests through the proxy with a raw
// HTTP/1.1 client and backend (fixed bytes, no net/http), conns
// connections in parallel, so what allocates and costs per request is the
// proxy's (-benchmem: 0 allocs/op once warm).
func BenchmarkProxyRaw(b *testing.B) {
	okResponse := []byte("HTTP/1.1 200 OK\r\nDate: Tue, 24 Nov 2026 00:00:00 GMT\r\nContent-Length: 3\r\n\r\nok\n")
	url := rawBackend(b, func(c net.Conn, br *bufio.Reader) {
		var h http1.Head
		for h.ReadRequest(br, 8192) == nil {
			c.Write(okResponse)
		}
	})
	cfg := &Config{Backends: []BackendConfig{{URL: url}}}
	cfg.ApplyDefaults()
	rp := startProxy(b, cfg)
	req := []byte("GET /x HTTP/1.1\r\nHost: x\r\nUser-Agent: bench\r\n\r\n")
	for _, conns := range []int{1, 4, 32} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, conns)
			b.ReportAllocs()
			b.ResetTimer()
			for range conns {
				c, err := net.Dial("tcp", strings.TrimPrefix(rp.url, "http://"))
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				wg.Add(1)
				go func() {
					defer wg.Done()
					br := bufio.NewReader(c)
					var h http1.Head
					discard := bufio.NewWriter(io.Discard)
					for next.Add(1) <= int64(b.N) {
						if _, err := c.Write(req); err != nil {
							errs <- err
							return
						}
						if err := h.ReadResponse(br, 8192); err != nil {
							errs <- err
							return
						}
						if _, err := http1.Copy(discard, br, h.ResponseFraming([]byte("GET")), false, false); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
		})
	}
}

// pickOne is pool.pick without a waiter: the backend, or a negative answer.
func pickOne(p *pool, now int64) int {
	j, _ := p.pick(now, 0, nil, nil)
	return j
}
