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

// gone reports whether the client of a request being served has closed or
// reset its connection: a non-blocking peek finds the end of the stream
// after whatever the buffer holds (a body not yet read, a pipelined
// request), so a client that shut its sending side counts as gone, as
// nginx counts it (ngx_http_upstream_check_broken_connection). Only the
// serving goroutine calls it: inside serveStep it peeks the socket
// directly (the poller's read lock is held), else through RawConn.Control,
// which, unlike Read, ignores a read deadline already past (read_header's,
// while a request waits long).
func (c *clientConn) gone() bool {
	if c.rerr != nil {
		return true
	}
	c.closed = false
	switch {
	case c.inStep:
		c.peekGone(uintptr(c.fd))
	case c.io.raw != nil:
		if c.peekFn == nil {
			c.peekFn = c.peekGone
		}
		c.io.raw.Control(c.peekFn)
	}
	return c.closed
}

// peekGone is gone's peek: closed is set on the end of the stream or a
// reset.
func (c *clientConn) peekGone(fd uintptr) {
	n, _, err := syscall.Recvfrom(int(fd), c.peekBuf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	c.closed = err == nil && n == 0 || err != nil && err != syscall.EAGAIN && err != syscall.EINTR
}
