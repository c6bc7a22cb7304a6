package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-project/shoal/proxy/http1"
)

// maxHead bounds a request or response head (nginx's large header buffers
// are 4 x 8 KiB; net/http's default is 1 MiB).
const maxHead = 64 << 10

// clientBuffer sizes the buffers of client connections.
const clientBuffer = 8 << 10

// clientConn is one client connection and what its requests reuse.
type clientConn struct {
	conn net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
	ip   []byte // the client's address, for X-Forwarded-For
	req  http1.Head
	resp http1.Head
	rd   readDeadline
	io   sockIO
	idle atomic.Bool // waiting for the next request
	rerr error       // the last read error
	werr error       // the last write error
	// doneAt is when the last response was complete (zero if none was
	// relayed): the idle timeout runs from it, without another clock read.
	doneAt time.Time

	// serveLoop's state (serveloop.go).
	srv         *server
	t           Timeouts
	stepFn      func(uintptr) bool // serveStep, made once per clientConn
	fd          int                // the socket, inside serveStep
	inStep      bool               // reads are stepRead's
	drained     bool               // the last read emptied the socket
	first       bool               // no request read yet
	headStarted bool               // read_header runs for the head coming
	rechecked   bool               // the wait ended early once (finCheck) since the last head
	exit        int

	// Admission and cancellation (admission.go, alive_unix.go).
	wait    waiter
	peekFn  func(uintptr)
	peekBuf [1]byte
	closed  bool
}

func (c *clientConn) Read(p []byte) (int, error) {
	if c.inStep {
		return c.stepRead(p)
	}
	n, err := c.io.Read(p)
	for n == 0 && err != nil && c.rd.early(err) {
		n, err = c.io.Read(p)
	}
	if err != nil {
		c.rerr = err
	}
	return n, err
}

func (c *clientConn) Write(p []byte) (int, error) {
	n, err := c.io.Write(p)
	if err != nil {
		c.werr = err
	}
	return n, err
}

var clientConns = sync.Pool{New: func() any {
	c := &clientConn{}
	c.br = bufio.NewReaderSize(c, clientBuffer)
	c.bw = bufio.NewWriterSize(c, clientBuffer)
	c.stepFn = c.serveStep
	c.wait = newWaiter()
	return c
}}

func newClientConn(nc net.Conn) *clientConn {
	c := clientConns.Get().(*clientConn)
	c.conn, c.rerr, c.werr, c.doneAt = nc, nil, nil, time.Time{}
	c.rd = readDeadline{conn: nc}
	c.io.init(nc)
	c.br.Reset(c)
	c.bw.Reset(c)
	c.ip = c.ip[:0]
	if host, _, err := net.SplitHostPort(nc.RemoteAddr().String()); err == nil {
		c.ip = append(c.ip, host...)
	}
	return c
}

func (c *clientConn) release() {
	c.conn, c.rd, c.srv = nil, readDeadline{}, nil
	c.io.init(nil)
	c.idle.Store(false)
	clientConns.Put(c)
}

// server accepts client connections and serves each in its own goroutine.
type server struct {
	p     *Proxy
	mu    sync.Mutex
	conns map[*clientConn]struct{}
	wg    sync.WaitGroup
	// slots holds a token per open connection (Config.MaxConnections): a
	// full channel stops the accepts, and the kernel's backlog holds the
	// clients that come meanwhile.
	slots chan struct{}
}

// serve accepts on ln until it is closed.
func (s *server) serve(ln net.Listener) error {
	var delay time.Duration
	for {
		s.slots <- struct{}{}
		nc, err := ln.Accept()
		if err != nil {
			<-s.slots
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				// Out of file descriptors and the like: wait and try
				// again, as net/http does (5 ms doubling to 1 s).
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.p.log.Warn("accept failed; retrying", "error", err, "delay", delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.p.clients.Add(1)
		c := newClientConn(nc)
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(c)
	}
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// serveConn serves the requests of one connection in order until the
// client closes it, asks to close, breaks a rule, or the proxy drains.
func (s *server) serveConn(c *clientConn) {
	defer func() {
		c.bw.Flush()
		c.conn.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.release()
		s.p.clients.Add(-1)
		<-s.slots
		s.wg.Done()
	}()
	if canLoop && c.io.raw != nil {
		s.serveLoop(c)
		return
	}
	t := s.p.Config().Timeouts
	for first := true; ; first = false {
		if !first {
			// Between requests the idle timeout applies; the head of the
			// next one must then arrive within read_header.
			c.idle.Store(true)
			if s.p.draining.Load() {
				return
			}
			now := c.doneAt
			if now.IsZero() {
				now = time.Now()
			}
			c.doneAt = time.Time{}
			c.rd.set(now, t.Idle)
			_, err := c.br.Peek(1)
			c.idle.Store(false)
			if err != nil {
				return
			}
		}
		if first || !headBuffered(c.br) {
			// A head already in the buffer is read without the
			// connection: it needs no deadline (one timer and two clock
			// reads less per request).
			c.rd.set(time.Now(), t.ReadHeader)
		}
		if err := c.req.ReadRequest(c.br, maxHead); err != nil {
			var he *http1.Error
			if errors.As(err, &he) {
				s.p.log.Debug("bad request", "client", string(c.ip), "error", err)
				writeStatus(c, he.Status, false)
			}
			return
		}
		if !s.p.serveRequest(c) {
			return
		}
	}
}

// headBuffered reports whether r's buffer holds a whole request head: a
// request line, then lines up to the first empty one, all ending in CRLF.
// (Empty lines before the request line, or bare LFs, answer false: the
// caller then sets the deadline as for a head still to come.)
func headBuffered(r *bufio.Reader) bool {
	b, _ := r.Peek(r.Buffered())
	return len(b) > 0 && b[0] != '\r' && b[0] != '\n' && bytes.Index(b, crlfCRLF) > 0
}

var crlfCRLF = []byte("\r\n\r\n")

// wakeIdle makes connections waiting for a request see the drain now.
func (s *server) wakeIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.idle.Load() {
			c.conn.SetReadDeadline(time.Now())
		}
	}
}

// closeAll cuts every connection (the drain ran out of time). Each is
// closed in a goroutine of its own: Close waits for a read in progress to
// end, and serveLoop's lasts while its request is served.
func (s *server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		go c.conn.Close()
	}
}

// shutdown stops serving: the listener is closed by the caller; idle
// connections close at once and busy ones after their response. It waits
// until all are gone or ctx is done, then cuts the rest.
func (s *server) shutdown(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		s.wakeIdle()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			s.closeAll()
			<-done
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// writeStatus answers with an empty response of the given status.
func writeStatus(c *clientConn, status int, keep bool) { writeStatusRetry(c, status, keep, "") }

// writeStatusRetry is writeStatus with a Retry-After of retry seconds
// (empty: none).
func writeStatusRetry(c *clientConn, status int, keep bool, retry string) {
	bw := c.bw
	bw.WriteString("HTTP/1.1 ")
	writeInt(bw, int64(status))
	bw.WriteByte(' ')
	bw.WriteString(http.StatusText(status))
	bw.WriteString("\r\nContent-Length: 0\r\n")
	if retry != "" {
		bw.WriteString("Retry-After: ")
		bw.WriteString(retry)
		bw.WriteString("\r\n")
	}
	if !keep {
		bw.WriteString("Connection: close\r\n")
	}
	bw.WriteString("Date: ")
	bw.Write(httpDate.now())
	bw.WriteString("\r\n\r\n")
	bw.Flush()
}
