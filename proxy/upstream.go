package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// upstreamConn is a kept-alive connection to a backend. The request's own
// goroutine writes and reads it (no per-connection goroutines).
type upstreamConn struct {
	conn net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
	fw   flushWaiter // writes a request, then waits for the answer
	rd   readDeadline
	io   sockIO
	// alive's peek (alive_unix.go)
	peekFn    func(uintptr) bool
	peekBuf   [1]byte
	open      bool
	idleSince time.Time
	// client is the client of the request waiting for this connection's
	// response head, checked whenever the wait's deadline comes early
	// (readDeadline.setChecked); nil: none.
	client *clientConn
}

// upstreamBuffer sizes the buffers of backend connections: a typical
// response head and body fit in one read.
const upstreamBuffer = 16 << 10

// maxIdlePerBackend bounds the kept-alive connections to one backend.
const maxIdlePerBackend = 512

// connPool holds a backend's idle connections, newest last.
type connPool struct {
	mu   sync.Mutex
	idle []*upstreamConn
}

// get returns an idle connection younger than maxIdle, or dials a new one
// within the connect timeout. reused says which.
func (cp *connPool) get(addr string, now time.Time, connect, maxIdle time.Duration) (u *upstreamConn, reused bool, err error) {
	cp.mu.Lock()
	for n := len(cp.idle); n > 0; n = len(cp.idle) {
		u = cp.idle[n-1]
		cp.idle[n-1] = nil
		cp.idle = cp.idle[:n-1]
		if now.Sub(u.idleSince) < maxIdle {
			cp.mu.Unlock()
			return u, true, nil
		}
		u.conn.Close()
	}
	cp.mu.Unlock()
	return dial(addr, connect)
}

func dial(addr string, connect time.Duration) (*upstreamConn, bool, error) {
	c, err := net.DialTimeout("tcp", addr, connect)
	if err != nil {
		return nil, false, err
	}
	u := &upstreamConn{conn: c, rd: readDeadline{conn: c}}
	u.io.init(c)
	u.br = bufio.NewReaderSize(u, upstreamBuffer)
	u.bw = bufio.NewWriterSize(&u.io, upstreamBuffer)
	u.fw.init(u.io.raw, u.bw)
	return u, false, nil
}

// Read reads from the connection, again if its deadline came early (see
// readDeadline).
func (u *upstreamConn) Read(p []byte) (int, error) {
	n, err := u.io.Read(p)
	for n == 0 && err != nil && u.rd.early(err) {
		if u.client != nil && u.client.gone() {
			return 0, errClientGone
		}
		n, err = u.io.Read(p)
	}
	return n, err
}

// errClientGone ends the wait for a response whose client went away: the
// backend connection is then closed, which stops the backend's work.
var errClientGone = errors.New("proxy: client went away while the backend worked")

// WriteTo copies the connection to w as the connection itself would (a
// tunnel, without a read deadline: splice where the system has it).
func (u *upstreamConn) WriteTo(w io.Writer) (int64, error) { return io.Copy(w, u.conn) }

// setDeadline sets the connection's read and write deadline (t zero: none).
func (u *upstreamConn) setDeadline(t time.Time) {
	u.conn.SetDeadline(t)
	u.rd.want, u.rd.armed = t, t
}

// freshIdle is how long a kept-alive connection may have been idle for a
// request on it to wait for the answer without first trying a read (see
// flushWaiter). A backend that closed the connection meanwhile answers
// the request with a reset, which ends the wait; only a peer that sent
// its FIN and then vanished without a trace, or kept reading with its
// side shut, could leave the request waiting out the response_header
// timeout instead of being retried at once, and the window for the first
// is this short.
const freshIdle = 100 * time.Millisecond

// put keeps u for reuse, or closes it if the pool is full. The oldest
// connection is closed once it has been idle for maxIdle, so a pool that
// never empties does not keep connections forever.
func (cp *connPool) put(u *upstreamConn, now time.Time, maxIdle time.Duration) {
	u.idleSince = now
	cp.mu.Lock()
	var stale *upstreamConn
	if len(cp.idle) > 0 && now.Sub(cp.idle[0].idleSince) >= maxIdle {
		stale = cp.idle[0]
		copy(cp.idle, cp.idle[1:])
		cp.idle = cp.idle[:len(cp.idle)-1]
	}
	full := len(cp.idle) >= maxIdlePerBackend
	if !full {
		cp.idle = append(cp.idle, u)
	}
	cp.mu.Unlock()
	if stale != nil {
		stale.conn.Close()
	}
	if full {
		u.conn.Close()
	}
}

// closeIdle closes every idle connection.
func (cp *connPool) closeIdle() {
	cp.mu.Lock()
	idle := cp.idle
	cp.idle = nil
	cp.mu.Unlock()
	for _, u := range idle {
		u.conn.Close()
	}
}
