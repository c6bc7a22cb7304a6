package proxy

import (
	"bufio"
	"syscall"
)

// flushWaiter writes what a connection's writer holds and then waits until
// the connection has something to read, without the read that would find
// nothing yet. A proxy writes and then reads the answer at once: a read
// straight after the write almost always fails with EAGAIN and parks the
// goroutine, so each request would pay a system call for nothing on each
// side (nginx, driven by epoll, does not make it). The wait is armed before
// the write (syscall.RawConn.Read resets the poller's readiness, then calls
// step), so an answer that comes back at once is not missed.
//
// The wait is only a hint: whatever ends it (bytes, the end of the stream,
// an error, the read deadline), the caller then reads as it would have,
// and that read reports the connection's state.
type flushWaiter struct {
	w       *bufio.Writer
	raw     syscall.RawConn // nil: not a socket; flush only
	step    func(uintptr) bool
	flushed bool
	werr    error
}

// init binds f to a connection (raw, nil if not a socket) and its writer
// w. The method value is made once here, so flushing and waiting allocate
// nothing.
func (f *flushWaiter) init(raw syscall.RawConn, w *bufio.Writer) {
	f.w, f.raw = w, raw
	if f.step == nil {
		f.step = f.flushOnce
	}
}

// flushOnce is called by RawConn.Read: the first time it flushes and asks
// to wait for readability (false), unless the write failed; the second
// time (readable) it ends the wait without reading.
func (f *flushWaiter) flushOnce(uintptr) bool {
	if f.flushed {
		return true
	}
	f.flushed = true
	f.werr = f.w.Flush()
	return f.werr != nil
}

// flushWait flushes the writer and, if buffered is 0 (nothing to read
// already in the reader's buffer), waits until the connection is
// readable. It returns the write's error.
func (f *flushWaiter) flushWait(buffered int) error {
	if f.raw == nil || buffered > 0 || f.w.Buffered() == 0 {
		return f.w.Flush()
	}
	f.flushed, f.werr = false, nil
	f.raw.Read(f.step) // its error (deadline, closed) is the next read's
	if !f.flushed {
		// The wait failed before step ran (a read deadline already
		// past, a closed connection): the bytes are still to write.
		return f.w.Flush()
	}
	return f.werr
}
