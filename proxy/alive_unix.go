//go:build unix

package proxy

import "syscall"

// alive reports whether an idle backend connection is still open: a
// non-blocking peek finds nothing to read and no end of stream. (A read
// deadline in the past does not tell: Go fails such a read before asking
// the kernel.)
func alive(u *upstreamConn) bool {
	if u.br.Buffered() > 0 {
		return false // bytes nobody asked for
	}
	if u.io.raw == nil {
		return true
	}
	if u.peekFn == nil {
		u.peekFn = u.peek
	}
	u.open = false
	err := u.io.raw.Read(u.peekFn)
	return err == nil && u.open
}

// peek is alive's RawConn.Read step (a method value made once per
// connection, so that the check allocates nothing).
func (u *upstreamConn) peek(fd uintptr) bool {
	_, _, err := syscall.Recvfrom(int(fd), u.peekBuf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	u.open = err == syscall.EAGAIN
	return true
}

// gone reports whether the client of a request being served has closed its
// connection (or reset it): a non-blocking peek finds the end of the
// stream. Bytes waiting (a pipelined request) say it is still there. It is
// read from the serving goroutine only: inside serveStep the socket is
// peeked directly (the poller's read lock is held), else through the
// RawConn.
func (c *clientConn) gone() bool {
	if c.rerr != nil {
		return true
	}
	if c.br.Buffered() > 0 {
		return false
	}
	if c.inStep {
		c.peekGone(uintptr(c.fd))
		return c.closed
	}
	if c.io.raw == nil {
		return false
	}
	if c.peekFn == nil {
		c.peekFn = c.peekGone
	}
	c.closed = false
	c.io.raw.Read(c.peekFn)
	return c.closed
}

// peekGone is gone's peek (a RawConn.Read step that never waits): closed
// is set on the end of the stream or a reset.
func (c *clientConn) peekGone(fd uintptr) bool {
	n, _, err := syscall.Recvfrom(int(fd), c.peekBuf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	c.closed = err == nil && n == 0 || err != nil && err != syscall.EAGAIN && err != syscall.EINTR
	return true
}
