package proxy

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// sockIO reads and writes a TCP connection with raw system calls inside
// the runtime poller's syscall.RawConn.Read and Write: the same wait for
// readiness, deadlines and locking as net.Conn's Read and Write, without
// the scheduler's entersyscall/exitsyscall around each call (the socket is
// non-blocking: its reads and writes return at once) and net's layers of
// wrappers. Reads and writes keep separate state, so one goroutine may
// read while another writes.
type sockIO struct {
	conn net.Conn
	raw  syscall.RawConn // nil: not a TCP connection; conn's methods serve

	rp, wp         []byte
	rn, wn         int
	rerrno, werrno syscall.Errno
	readFn         func(uintptr) bool
	writeFn        func(uintptr) bool
}

// init binds s to conn (the method values are made once per sockIO).
func (s *sockIO) init(conn net.Conn) {
	s.conn, s.raw = conn, nil
	if tc, ok := conn.(*net.TCPConn); ok {
		if raw, err := tc.SyscallConn(); err == nil {
			s.raw = raw
		}
	}
	if s.readFn == nil {
		s.readFn, s.writeFn = s.readStep, s.writeStep
	}
}

func (s *sockIO) readStep(fd uintptr) bool {
	n, e := rawRead(int(fd), s.rp)
	switch e {
	case syscall.EAGAIN:
		return false // wait until readable
	case 0:
		s.rn = n
	}
	s.rerrno = e
	return true
}

// Read is net.Conn's Read.
func (s *sockIO) Read(p []byte) (int, error) {
	if s.raw == nil {
		return s.conn.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	s.rp, s.rn, s.rerrno = p, 0, 0
	err := s.raw.Read(s.readFn)
	s.rp = nil
	switch {
	case err != nil:
		return 0, err // the deadline, or a closed connection
	case s.rerrno != 0:
		return 0, s.opError("read", s.rerrno)
	case s.rn == 0:
		return 0, io.EOF
	}
	return s.rn, nil
}

func (s *sockIO) writeStep(fd uintptr) bool {
	for len(s.wp) > 0 {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(s.wp))), uintptr(len(s.wp)))
		switch e {
		case 0:
			if n == 0 || int(n) > len(s.wp) {
				s.werrno = syscall.EIO
				return true
			}
			s.wn += int(n)
			s.wp = s.wp[n:]
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false // wait until writable
		default:
			s.werrno = e
			return true
		}
	}
	return true
}

// Write is net.Conn's Write.
func (s *sockIO) Write(p []byte) (int, error) {
	if s.raw == nil {
		return s.conn.Write(p)
	}
	s.wp, s.wn, s.werrno = p, 0, 0
	err := s.raw.Write(s.writeFn)
	s.wp = nil
	switch {
	case err != nil:
		return s.wn, err
	case s.werrno != 0:
		return s.wn, s.opError("write", s.werrno)
	}
	return s.wn, nil
}

// opError is the error net.Conn would give for errno.
func (s *sockIO) opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Source: s.conn.LocalAddr(), Addr: s.conn.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
}

// canLoop says serveLoop can run here: a read inside a RawConn.Read step
// is a raw system call (rawRead).
const canLoop = true

// rawRead reads from the non-blocking socket fd once (again on EINTR).
func rawRead(fd int, p []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
		if e != syscall.EINTR {
			return int(n), e
		}
	}
}
