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
