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
	sc, ok := u.conn.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var b [1]byte
	open := false
	err = raw.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = rerr == syscall.EAGAIN
		return true
	})
	return err == nil && open
}
