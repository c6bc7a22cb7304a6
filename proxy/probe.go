package proxy

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/proxy/http1"
)

// Load probes (Prequal): after each decision the selector names backends to
// probe; the pool queues them and a generation's probe workers GET
// lb.ProbePath on each, off the request path, and hand the answers back.
// A full queue drops a probe rather than slow a request.

// probeWorkers is how many probes may be in flight at once.
const probeWorkers = 4

// startProbes starts g's probe workers if its selector probes.
func (p *Proxy) startProbes(ctx context.Context, g *generation) {
	if g.pool.prober == nil {
		return
	}
	client := &http.Client{Timeout: g.cfg.Timeouts.Probe, Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: g.cfg.Timeouts.Connect}).DialContext,
		MaxIdleConnsPerHost: probeWorkers, IdleConnTimeout: g.cfg.Timeouts.Idle, DisableCompression: true}}
	for range probeWorkers {
		g.done.Add(1)
		go func() {
			defer g.done.Done()
			for {
				select {
				case <-ctx.Done():
					client.CloseIdleConnections()
					return
				case j := <-g.pool.probes:
					p.probe(ctx, client, g, int(j))
				}
			}
		}()
	}
}

// probe asks backend j for its load and gives the answer to the selector.
func (p *Proxy) probe(ctx context.Context, client *http.Client, g *generation, j int) {
	b := g.pool.backends[j]
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url.Scheme+"://"+b.url.Host+lb.ProbePath, nil)
	if err != nil {
		return
	}
	resp, err := client.Do(req)
	if err != nil {
		b.metrics.probeFailed.Inc()
		return
	}
	resp.Body.Close()
	rif, err1 := strconv.Atoi(resp.Header.Get(lb.HeaderRIF))
	lat, err2 := strconv.ParseFloat(resp.Header.Get(lb.HeaderLatency), 64)
	if resp.StatusCode != http.StatusOK || err1 != nil || err2 != nil {
		b.metrics.probeFailed.Inc()
		return
	}
	b.metrics.probes.Inc()
	g.pool.probed(j, time.Now(), lb.Load{RIF: int32(rif), Latency: time.Duration(lat * float64(time.Second))})
}

// responseLoad reads the load a backend piggybacked on its response
// (lb.HeaderRIF, lb.HeaderServiceTime); ok is false if it sent none.
func responseLoad(h *http1.Head) (l lb.Load, ok bool) {
	var rif, svc bool
	for _, f := range h.Fields {
		switch {
		case bytes.EqualFold(f.Name, headerRIF):
			n, err := strconv.ParseInt(string(f.Value), 10, 32) // the conversion does not escape
			l.RIF, rif = int32(n), err == nil
		case bytes.EqualFold(f.Name, headerServiceTime):
			x, err := strconv.ParseFloat(string(f.Value), 64)
			l.Service, svc = time.Duration(x*float64(time.Second)), err == nil
		}
	}
	return l, rif && svc
}

var (
	headerRIF         = []byte(lb.HeaderRIF)
	headerServiceTime = []byte(lb.HeaderServiceTime)
)

// requestKey is a request's affinity key for hashing policies: the
// xxHash64 of HashHeader's value, or of the client's address when the
// header is absent or not configured (Envoy's hash_policy header and
// connection_properties.source_ip).
func requestKey(c *clientConn, header []byte) uint64 {
	if len(header) > 0 {
		for _, f := range c.req.Fields {
			if bytes.EqualFold(f.Name, header) {
				return xxhash.Sum64(f.Value)
			}
		}
	}
	return xxhash.Sum64(c.ip)
}
