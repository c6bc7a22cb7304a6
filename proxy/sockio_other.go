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
