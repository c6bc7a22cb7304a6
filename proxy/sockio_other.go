//go:build !linux

package proxy

import (
	"net"
	"syscall"
)

// sockIO is net.Conn's Read and Write here (the raw system calls of
// sockio_linux.go are Linux's).
type sockIO struct {
	conn net.Conn
	raw  syscall.RawConn
}

func (s *sockIO) init(conn net.Conn) {
	s.conn, s.raw = conn, nil
	if sc, ok := conn.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			s.raw = raw
		}
	}
}

func (s *sockIO) Read(p []byte) (int, error)  { return s.conn.Read(p) }
func (s *sockIO) Write(p []byte) (int, error) { return s.conn.Write(p) }

// canLoop says serveLoop cannot run here (see sockio_linux.go).
const canLoop = false

func rawRead(int, []byte) (int, syscall.Errno) { return 0, syscall.ENOSYS }

// opError is the error net.Conn would give for errno.
func (s *sockIO) opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Source: s.conn.LocalAddr(), Addr: s.conn.RemoteAddr(), Err: errno}
}
