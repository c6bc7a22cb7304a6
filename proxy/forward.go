package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shoal-project/shoal/proxy/http1"
)

// failure is an attempt that wrote nothing to the client, so the request
// may still go to another backend.
type failure struct {
	kind   string // of shoal_proxy_errors_total; "" for the client's own fault
	err    error
	sent   bool // the backend may have seen (part of) the request
	status int  // the answer if the request is not retried; 0: none
}

// serveRequest forwards the request in c.req to a backend, retrying
// elsewhere on connection failure, and relays the response. It reports
// whether the connection may carry another request.
func (p *Proxy) serveRequest(c *clientConn) bool {
	req := &c.req
	in := req.RequestFraming()
	if string(req.Method) == http.MethodConnect {
		writeStatus(c, http.StatusMethodNotAllowed, false) // a gateway does not tunnel
		return false
	}
	if in.HasBody() {
		c.rd.clear() // read_header bounded the head only
	}
	g := p.gen.Load()
	var skip []bool
	for attempt := 0; ; attempt++ {
		start := time.Now()
		var key uint64
		if g.hashing {
			key = requestKey(c, g.hashHeader)
		}
		var w *waiter
		if skip == nil {
			w = &c.wait // a retry is not queued: it has waited once
		}
		j, queued := g.pool.pick(start.UnixNano(), key, skip, w)
		if queued {
			p.metrics.queued.Inc()
			j = g.pool.await(c, start)
			now := time.Now()
			p.metrics.queueWait.Observe(now.Sub(start).Seconds())
			start = now // the backend's part starts now
		}
		if j < 0 {
			return p.refuse(c, j)
		}
		var sentAt time.Duration
		if g.agent != nil {
			sentAt = start.Sub(p.base)
			g.agent.send(feedback{kind: sent, j: int32(j), at: sentAt})
		}
		keep, f := p.exchange(c, g, j, start, sentAt, in)
		if f == nil {
			return keep
		}
		g.pool.release(j, time.Now(), time.Since(start))
		if g.agent != nil {
			g.agent.send(feedback{kind: abandoned, j: int32(j), at: time.Since(p.base), sentAt: sentAt})
		}
		b := g.pool.backends[j]
		switch f.kind {
		case "", kindClientGone:
			if f.kind == kindClientGone {
				b.metrics.gone.Inc()
			}
			if f.status != 0 {
				writeStatus(c, f.status, false)
			}
			return false
		case kindConnect:
			b.metrics.connect.Inc()
		case kindTimeout:
			b.metrics.timeout.Inc()
		default:
			b.metrics.transport.Inc()
		}
		if ejected, until := b.failed(time.Now(), g.cfg.Health); ejected {
			b.metrics.ejections.Inc()
			p.log.Warn("backend ejected", "backend", b.name, "until", until.Format(time.RFC3339Nano), "error", f.err)
		}
		if attempt >= *g.cfg.Retries || f.sent && !(replayable(req, in)) {
			p.log.Debug("no answer", "method", string(req.Method), "target", string(req.Target), "backend", b.name, "status", f.status, "error", f.err)
			keep := !f.sent && !in.HasBody() && !req.Close && !p.draining.Load()
			writeStatus(c, f.status, keep)
			return keep
		}
		b.metrics.retries.Inc()
		if skip == nil {
			skip = make([]bool, len(g.pool.backends))
		}
		skip[j] = true
	}
}

// refuse answers a request that got no backend (pick's or await's
// outcome j < 0) and reports whether the connection may carry another.
// Shed requests are answered 503 with Retry-After; a client that went
// away gets nothing.
func (p *Proxy) refuse(c *clientConn, j int) bool {
	in := c.req.RequestFraming()
	keep := !in.HasBody() && !c.req.Close && !p.draining.Load()
	switch j {
	case awaitGone:
		p.metrics.errors.WithLabelValues("", kindClientGone).Inc()
		return false
	case busy:
		p.metrics.shedFull.Inc()
	case awaitTimeout:
		p.metrics.shedTimeout.Inc()
	default:
		p.metrics.errors.WithLabelValues("", kindNoBackend).Inc()
		writeStatus(c, http.StatusServiceUnavailable, keep)
		return keep
	}
	writeStatusRetry(c, http.StatusServiceUnavailable, keep, retryAfter)
	return keep
}

// retryAfter is the Retry-After of a shed request's 503 (RFC 9110 section
// 10.2.3), in seconds: an overload is asked to ease for a second.
const retryAfter = "1"

// replayable reports whether a request that may have reached a backend
// can be sent again: only without a body, and only if its method is
// idempotent (RFC 9110 section 9.2.2) or it carries an Idempotency-Key.
func replayable(req *http1.Head, in http1.Framing) bool {
	if in.HasBody() {
		return false
	}
	switch string(req.Method) {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	for _, f := range req.Fields {
		if bytes.EqualFold(f.Name, []byte("Idempotency-Key")) {
			return true
		}
	}
	return false
}

// exchange sends the request to backend j and relays its response. A
// non-nil failure means nothing reached the client; otherwise the
// request's accounting is done.
func (p *Proxy) exchange(c *clientConn, g *generation, j int, start time.Time, sentAt time.Duration, in http1.Framing) (keep bool, f *failure) {
	b := g.pool.backends[j]
	t := &g.cfg.Timeouts
	req, resp := &c.req, &c.resp
	u, reused, err := b.conns.get(b.addr, start, t.Connect, t.Idle)
	if err != nil {
		return false, &failure{kind: kindConnect, err: err, status: http.StatusBadGateway}
	}
	retryStale := replayable(req, in)
	if reused && !retryStale && !alive(u) {
		// The request could not be sent again if the connection turned
		// out to be closed: check it first (one extra read).
		u.conn.Close()
		if u, reused, err = dial(b.addr, t.Connect); err != nil {
			return false, &failure{kind: kindConnect, err: err, status: http.StatusBadGateway}
		}
	}
	for {
		// While it waits for the response head, the request checks that
		// its client is still there; if not, closing the connection stops
		// the backend's work on it.
		u.client = c
		// The deadline is set before the request goes, so that the wait
		// for the answer (sendRequest's last flush) has it.
		u.rd.setChecked(start, t.ResponseHeader, clientCheck) // start was microseconds ago: no clock read
		wait := !reused || start.Sub(u.idleSince) < freshIdle
		if err = p.sendRequest(c, u, b, in, wait); err != nil {
			u.conn.Close()
			var he *http1.Error
			switch {
			case errors.As(err, &he):
				return false, &failure{err: err, sent: true, status: he.Status} // the client's body is malformed
			case c.rerr != nil || errors.Is(err, http1.ErrShortBody):
				return false, &failure{kind: kindClientGone, err: err, sent: true}
			case reused && retryStale && stale(err):
			default:
				return false, &failure{kind: kindTransport, err: err, sent: true, status: http.StatusBadGateway}
			}
		} else {
			if err = p.readResponseHead(c, u); err == nil {
				break
			}
			u.conn.Close()
			if c.werr != nil || err == errClientGone {
				return false, &failure{kind: kindClientGone, err: err, sent: true}
			}
			if !reused || !retryStale || !stale(err) {
				return false, responseFailure(err)
			}
		}
		// The backend had closed the kept-alive connection: a new one.
		if u, reused, err = dial(b.addr, t.Connect); err != nil {
			return false, &failure{kind: kindConnect, err: err, status: http.StatusBadGateway}
		}
	}
	u.client = nil
	headers := nowSince(start)
	b.succeeded()
	if g.pool.lf != nil {
		if l, ok := responseLoad(&c.resp); ok {
			g.pool.reported(j, headers, l)
		}
	}
	if resp.Status == http.StatusSwitchingProtocols {
		if !req.Upgrade {
			u.conn.Close()
			return false, &failure{kind: kindTransport, err: errors.New("101 response to a request without Upgrade"), sent: true, status: http.StatusBadGateway}
		}
		writeResponseHead(c.bw, req, resp, http1.Framing{}, false, false)
		p.finish(g, j, start, headers, resp.Status, sentAt)
		tunnel(c, u)
		return false, nil
	}
	out := resp.ResponseFraming(req.Method)
	keep = !req.Close && !p.draining.Load()
	chunked := false
	if out.Chunked || out.UntilClose {
		if req.Minor == 1 {
			chunked = true
		} else {
			keep = false // an HTTP/1.0 client learns the end from the close
		}
	}
	writeResponseHead(c.bw, req, resp, out, chunked, keep)
	if out.Chunked || out.UntilClose || out.Length > int64(u.br.Buffered()) {
		u.rd.clear() // the body may take its time
	}
	_, err = http1.Copy(c.bw, u.br, out, chunked, true)
	if err == nil {
		err = c.bw.Flush()
	}
	c.doneAt = p.finish(g, j, start, headers, resp.Status, sentAt)
	if err != nil {
		u.conn.Close()
		if c.werr != nil {
			b.metrics.gone.Inc()
		} else {
			b.metrics.transport.Inc() // the backend broke off its response: the client sees a cut
			p.log.Debug("response cut", "backend", b.name, "error", err)
		}
		return false, nil
	}
	if resp.Close || out.UntilClose {
		u.conn.Close()
	} else {
		b.conns.put(u, headers, t.Idle)
	}
	return keep, nil
}

// responseFailure classifies a failure to read a response head.
func responseFailure(err error) *failure {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &failure{kind: kindTimeout, err: err, sent: true, status: http.StatusGatewayTimeout}
	}
	return &failure{kind: kindTransport, err: err, sent: true, status: http.StatusBadGateway}
}

// stale reports whether err is what a kept-alive connection that the
// backend had closed gives: a reset, or the end before any byte.
func stale(err error) bool {
	return err == io.EOF || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// sendRequest writes the request head and streams its body to u; if
// wait is true it then waits until u has something to read (flushWaiter).
func (p *Proxy) sendRequest(c *clientConn, u *upstreamConn, b *backend, in http1.Framing, wait bool) error {
	writeRequestHead(u.bw, c, b.addr)
	if in.HasBody() {
		if c.req.Expect100 && c.req.Minor == 1 {
			// The proxy asks for the body itself (Expect is not forwarded).
			c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
			if err := c.bw.Flush(); err != nil {
				return err
			}
		}
		if _, err := http1.Copy(u.bw, c.br, in, in.Chunked, true); err != nil {
			return err
		}
	}
	if wait {
		return u.fw.flushWait(u.br.Buffered())
	}
	return u.bw.Flush()
}

// readResponseHead reads the final response head into c.resp; interim
// responses other than 100 Continue (which answered our own Expect, or
// none) are passed to an HTTP/1.1 client.
func (p *Proxy) readResponseHead(c *clientConn, u *upstreamConn) error {
	for {
		if err := c.resp.ReadResponse(u.br, maxHead); err != nil {
			return err
		}
		s := c.resp.Status
		if s >= 200 || s == http.StatusSwitchingProtocols {
			return nil
		}
		if s != http.StatusContinue && c.req.Minor == 1 {
			writeResponseHead(c.bw, &c.req, &c.resp, http1.Framing{}, false, true)
			if err := c.bw.Flush(); err != nil {
				return err
			}
		}
	}
}

// Field rules: what the proxy does with a field instead of passing it on.
const (
	pass = iota
	drop
	date
	contentLength
	forwardedFor
)

// fieldRule says what to do with a field. Hop-by-hop fields are dropped
// (RFC 9110 section 7.6.1: Connection and what it lists, Proxy-Connection,
// Keep-Alive, TE, Transfer-Encoding, Upgrade), as are the proxy
// authentication fields meant for this hop, Expect (the proxy answers
// it) and the X-Forwarded-Host/Proto it sets itself; the framing is
// written anew.
func fieldRule(name []byte) int {
	eq := func(s string) bool { return len(name) == len(s) && bytes.EqualFold(name, []byte(s)) }
	switch len(name) {
	case 2:
		if eq("TE") {
			return drop
		}
	case 4:
		if eq("Date") {
			return date
		}
	case 6:
		if eq("Expect") {
			return drop
		}
	case 7:
		if eq("Upgrade") {
			return drop
		}
	case 10:
		if eq("Connection") || eq("Keep-Alive") {
			return drop
		}
	case 14:
		if eq("Content-Length") {
			return contentLength
		}
	case 15:
		if eq("X-Forwarded-For") {
			return forwardedFor
		}
	case 16:
		if eq("Proxy-Connection") || eq("X-Forwarded-Host") {
			return drop
		}
	case 17:
		if eq("Transfer-Encoding") || eq("X-Forwarded-Proto") {
			return drop
		}
	case 18:
		if eq("Proxy-Authenticate") {
			return drop
		}
	case 19:
		if eq("Proxy-Authorization") {
			return drop
		}
	}
	return pass
}

// writeRequestHead writes the request in c.req as the proxy forwards it:
// HTTP/1.1, the client's Host (the backend's address for an HTTP/1.0
// client without one), hop-by-hop fields removed, the client appended to
// X-Forwarded-For (as nginx's $proxy_add_x_forwarded_for),
// X-Forwarded-Host and X-Forwarded-Proto set, and the framing stated.
func writeRequestHead(w *bufio.Writer, c *clientConn, addr string) {
	req := &c.req
	w.Write(req.Method)
	w.WriteByte(' ')
	w.Write(req.Target)
	w.WriteString(" HTTP/1.1\r\n")
	var prior bool
	for _, f := range req.Fields {
		switch rule := fieldRule(f.Name); {
		case rule == forwardedFor:
			prior = true
		case req.Upgrade && bytes.EqualFold(f.Name, []byte("Upgrade")):
			writeField(w, f.Name, f.Value) // the protocols asked for, with Connection: Upgrade below
		case rule == pass && !req.IsConnectionOption(f.Name):
			writeField(w, f.Name, f.Value)
		}
	}
	if req.Hosts == 0 {
		w.WriteString("Host: ")
		w.WriteString(addr)
		w.WriteString("\r\n")
	}
	w.WriteString("X-Forwarded-For: ")
	if prior {
		for _, f := range req.Fields {
			if fieldRule(f.Name) == forwardedFor {
				w.Write(f.Value)
				w.WriteString(", ")
			}
		}
	}
	w.Write(c.ip)
	w.WriteString("\r\n")
	if req.Hosts > 0 {
		w.WriteString("X-Forwarded-Host: ")
		w.Write(req.Host)
		w.WriteString("\r\n")
	}
	w.WriteString("X-Forwarded-Proto: http\r\n")
	if req.Upgrade {
		w.WriteString("Connection: Upgrade\r\n")
	}
	switch {
	case req.Chunked:
		w.WriteString("Transfer-Encoding: chunked\r\n")
	case req.ContentLength >= 0:
		w.WriteString("Content-Length: ")
		writeInt(w, req.ContentLength)
		w.WriteString("\r\n")
	}
	w.WriteString("\r\n")
}

// writeResponseHead writes resp as the proxy relays it to the client:
// hop-by-hop fields removed, a Date added if the backend sent none (RFC
// 9110 section 6.6.1), the framing out re-stated (chunked if so), and the
// connection's fate. An interim (1xx) head gets its fields only.
func writeResponseHead(w *bufio.Writer, req, resp *http1.Head, out http1.Framing, chunked, keep bool) {
	interim := resp.Status < 200 && resp.Status != http.StatusSwitchingProtocols
	w.WriteString("HTTP/1.1 ")
	writeInt(w, int64(resp.Status))
	w.WriteByte(' ')
	if len(resp.Reason) > 0 {
		w.Write(resp.Reason)
	} else {
		w.WriteString(http.StatusText(resp.Status))
	}
	w.WriteString("\r\n")
	hasDate := false
	for _, f := range resp.Fields {
		switch rule := fieldRule(f.Name); {
		case resp.Status == http.StatusSwitchingProtocols && bytes.EqualFold(f.Name, []byte("Upgrade")):
			writeField(w, f.Name, f.Value)
		case rule == date:
			hasDate = true
			writeField(w, f.Name, f.Value)
		case rule == pass && !resp.IsConnectionOption(f.Name):
			writeField(w, f.Name, f.Value)
		}
	}
	if interim {
		w.WriteString("\r\n")
		return
	}
	if !hasDate {
		w.WriteString("Date: ")
		w.Write(httpDate.now())
		w.WriteString("\r\n")
	}
	switch {
	case resp.Status == http.StatusSwitchingProtocols:
		w.WriteString("Connection: Upgrade\r\n\r\n")
		return
	case out.Chunked || out.UntilClose:
		if chunked {
			w.WriteString("Transfer-Encoding: chunked\r\n")
		}
	case out.HasBody():
		w.WriteString("Content-Length: ")
		writeInt(w, out.Length)
		w.WriteString("\r\n")
	case resp.ContentLength >= 0 && resp.Status != http.StatusNoContent:
		// HEAD and 304: the length of the representation, passed on.
		w.WriteString("Content-Length: ")
		writeInt(w, resp.ContentLength)
		w.WriteString("\r\n")
	}
	switch {
	case !keep:
		w.WriteString("Connection: close\r\n")
	case req.Minor == 0:
		w.WriteString("Connection: keep-alive\r\n")
	}
	w.WriteString("\r\n")
}

func writeField(w *bufio.Writer, name, value []byte) {
	w.Write(name)
	w.WriteString(": ")
	w.Write(value)
	w.WriteString("\r\n")
}

func writeInt(w *bufio.Writer, n int64) {
	w.Write(strconv.AppendInt(w.AvailableBuffer(), n, 10))
}

// tunnel relays bytes both ways between the client and the backend after
// a 101 (Switching Protocols) until either side ends, then closes both.
func tunnel(c *clientConn, u *upstreamConn) {
	c.rd.clear()
	u.rd.clear()
	if c.bw.Flush() != nil {
		u.conn.Close()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.br.WriteTo(u.conn)
		u.conn.Close()
		c.conn.Close()
	}()
	u.br.WriteTo(c.conn)
	u.conn.Close()
	c.conn.Close()
	<-done
}

// dateCache formats the Date field once a second.
type dateCache struct {
	sec atomic.Int64
	val atomic.Pointer[[]byte]
}

var httpDate dateCache

func (d *dateCache) now() []byte {
	t := time.Now()
	if s := t.Unix(); d.sec.Load() != s || d.val.Load() == nil {
		b := t.UTC().AppendFormat(nil, http.TimeFormat)
		d.val.Store(&b)
		d.sec.Store(s)
	}
	return *d.val.Load()
}
