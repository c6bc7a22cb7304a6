package proxy

import (
	"errors"
	"io"
	"syscall"
	"time"

	"github.com/shoal-project/shoal/proxy/http1"
)

// serveLoop serves a client connection from inside the poller: one
// syscall.RawConn.Read lasts while requests come, and its step (serveStep)
// reads the socket with raw system calls, serves each request whose head
// is in, and returns false to wait for the next, as an epoll loop waits
// (nginx's). net.Conn's Read would first try a read that finds nothing
// (the client sends its next request only after the response), get
// EAGAIN and then wait: a system call per request for nothing. The wait
// is safe without it because the poller's readiness, reset when the
// RawConn.Read began, has not been reset since the step's last read, so
// whatever arrived after that read has woken the wait or will.
//
// One thing a read tells that readiness may not: the client's FIN, if it
// came with the request's last bytes, before the poller saw them (one
// readiness for both), shows only as the end of stream of the next read.
// So the first wait of each idle period (or for the rest of a head) ends
// after finCheck, and the read made then finds the end of stream if
// there is one; under load the next request comes sooner.
//
// Requests with a body, upgrades and heads longer than the buffer are
// served outside (they read the client while they are served, which a
// step cannot wait for): the step returns, the request is served as by
// serveConn, and a new RawConn.Read begins with a read.
func (s *server) serveLoop(c *clientConn) {
	c.srv, c.t = s, s.p.Config().Timeouts
	c.first, c.headStarted, c.rechecked = true, true, false
	c.rd.setCapped(time.Now(), c.t.ReadHeader, finCheck) // the first head, from the accept
	for {
		c.exit = exitNone
		err := c.io.raw.Read(c.stepFn)
		c.inStep = false
		if err != nil {
			if c.rd.early(err) {
				c.rechecked = true
				continue
			}
			return // the idle or read_header timeout, the drain, or closed
		}
		switch c.exit {
		case exitServe:
		case exitLongHead:
			if !s.readRequest(c) {
				return
			}
		default:
			return
		}
		if !s.p.serveRequest(c) {
			return
		}
		// A deadline in the future for the next RawConn.Read to begin
		// with (the step sets the one it waits with).
		now := c.doneAt
		if now.IsZero() {
			now = time.Now()
			c.doneAt = now
		}
		c.rd.set(now, c.t.Idle)
	}
}

// finCheck bounds the first wait of an idle period: a client's FIN that
// came with its request's last bytes is found at most this late.
const finCheck = 10 * time.Millisecond

// Why serveStep returned true.
const (
	exitNone     = iota
	exitClose    // the connection ends
	exitServe    // c.req is to be served outside the step
	exitLongHead // a head longer than the buffer is to be read outside
)

// errWouldBlock is a client read's error inside serveStep when the socket
// has nothing: the step then waits.
var errWouldBlock = errors.New("proxy: read would block")

// stepRead is clientConn.Read inside serveStep: one raw read, never a wait.
func (c *clientConn) stepRead(p []byte) (int, error) {
	n, errno := rawRead(c.fd, p)
	switch {
	case errno == syscall.EAGAIN:
		c.drained = true
		return 0, errWouldBlock
	case errno != 0:
		c.rerr = c.io.opError("read", errno)
		return 0, c.rerr
	case n == 0:
		c.rerr = io.EOF
		return 0, io.EOF
	}
	c.drained = n < len(p) // the socket had no more
	return n, nil
}

// serveStep is serveLoop's RawConn.Read step: called once the wait is
// armed and again whenever the connection is readable.
func (c *clientConn) serveStep(fd uintptr) bool {
	s := c.srv
	c.fd, c.inStep = int(fd), true
	c.idle.Store(false)
	c.drained = false // just armed, or readable: the socket may hold bytes
	for {
		if !headBuffered(c.br) {
			if c.br.Buffered() == c.br.Size() {
				if !c.headStarted {
					c.headStarted = true
					c.rd.set(time.Now(), c.t.ReadHeader)
				}
				c.exit = exitLongHead
				return true
			}
			if !c.drained {
				if _, err := c.br.Peek(c.br.Buffered() + 1); err != nil && err != errWouldBlock {
					c.exit = exitClose // closed, reset
					return true
				}
				continue
			}
			// Wait for more: for the next request within the idle
			// timeout, or for the rest of a head within read_header
			// from its first byte (as serveConn).
			switch {
			case c.br.Buffered() > 0 && !c.headStarted:
				c.headStarted = true
				c.rd.setCapped(time.Now(), c.t.ReadHeader, finCheck)
			case c.br.Buffered() == 0 && !c.first:
				if s.p.draining.Load() {
					c.exit = exitClose
					return true
				}
				if c.doneAt.IsZero() {
					c.doneAt = time.Now()
				}
				if c.rechecked {
					c.rd.set(c.doneAt, c.t.Idle)
				} else {
					c.rd.setCapped(c.doneAt, c.t.Idle, finCheck)
				}
				c.idle.Store(true)
			}
			c.inStep = false
			return false
		}
		if !s.readRequest(c) {
			c.exit = exitClose
			return true
		}
		if c.req.RequestFraming().HasBody() || c.req.Upgrade {
			c.exit = exitServe
			return true
		}
		if !s.p.serveRequest(c) {
			c.exit = exitClose
			return true
		}
	}
}

// readRequest reads the next request's head into c.req, answering a
// malformed one; it reports whether the request is to be served.
func (s *server) readRequest(c *clientConn) bool {
	err := c.req.ReadRequest(c.br, maxHead)
	c.first, c.headStarted, c.rechecked, c.doneAt = false, false, false, time.Time{}
	if err != nil {
		var he *http1.Error
		if errors.As(err, &he) {
			s.p.log.Debug("bad request", "client", string(c.ip), "error", err)
			writeStatus(c, he.Status, false)
		}
		return false
	}
	return true
}
