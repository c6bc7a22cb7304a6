package proxy

import (
	"bytes"
	"context"
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
	for range probeWorkers {
		g.done.Add(1)
		go func() {
			defer g.done.Done()
			var head http1.Head // reused: a probe allocates little
			for {
				select {
				case <-ctx.Done():
					return
				case j := <-g.pool.probes:
					p.probe(g, int(j), &head)
				}
			}
		}()
	}
}

// probeRequest is the probe on the wire; the Host field is not checked
// by the backends.
var probeRequest = []byte("GET " + lb.ProbePath + " HTTP/1.1\r\nHost: shoal-probe\r\n\r\n")

// probe asks backend j for its load, on one of its kept-alive connections
// (the requests' own pool), and gives the answer to the selector.
func (p *Proxy) probe(g *generation, j int, head *http1.Head) {
	b := g.pool.backends[j]
	t := g.cfg.Timeouts
	now := time.Now()
	u, reused, err := b.conns.get(b.addr, now, t.Connect, t.Idle)
	if err != nil {
		b.metrics.probeFailed.Inc()
		return
	}
	u.setDeadline(now.Add(t.Probe))
	l, ok := exchangeProbe(u, head)
	if !ok && reused { // the backend may have closed the kept-alive connection: once more, on a new one
		u.conn.Close()
		if u, _, err = dial(b.addr, t.Connect); err == nil {
			u.setDeadline(time.Now().Add(t.Probe))
			l, ok = exchangeProbe(u, head)
		}
	}
	if !ok {
		if u != nil {
			u.conn.Close()
		}
		b.metrics.probeFailed.Inc()
		return
	}
	u.setDeadline(time.Time{})
	b.conns.put(u, time.Now(), t.Idle)
	b.metrics.probes.Inc()
	g.pool.probed(j, time.Now(), l)
}

// exchangeProbe writes a probe on u and reads the answer: 200 with
// lb.HeaderRIF and lb.HeaderLatency, and a body of a known length, so
// the connection can be reused.
func exchangeProbe(u *upstreamConn, head *http1.Head) (l lb.Load, ok bool) {
	if _, err := u.bw.Write(probeRequest); err != nil || u.bw.Flush() != nil {
		return l, false
	}
	if err := head.ReadResponse(u.br, maxHead); err != nil || head.Status != http.StatusOK {
		return l, false
	}
	f := head.ResponseFraming([]byte(http.MethodGet))
	if f.Chunked || f.UntilClose || head.Close {
		return l, false
	}
	if _, err := u.br.Discard(int(f.Length)); err != nil {
		return l, false
	}
	var rif, lat bool
	for _, f := range head.Fields {
		switch {
		case bytes.EqualFold(f.Name, headerRIF):
			n, err := strconv.ParseInt(string(f.Value), 10, 32)
			l.RIF, rif = int32(n), err == nil
		case bytes.EqualFold(f.Name, headerLatency):
			x, err := strconv.ParseFloat(string(f.Value), 64)
			l.Latency, lat = time.Duration(x*float64(time.Second)), err == nil
		}
	}
	return l, rif && lat
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
	headerLatency     = []byte(lb.HeaderLatency)
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
