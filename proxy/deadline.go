package proxy

import (
	"errors"
	"net"
	"os"
	"time"
)

// lazySlack bounds how much earlier than asked a read deadline may be
// armed (an eighth of the timeout, at most this).
const lazySlack = time.Second

// readDeadline keeps a connection's read deadline as nginx keeps its
// timers: a deadline asked for only a little later than the one armed is
// not armed (SetReadDeadline updates a runtime timer and reads the clock
// twice, per request and side). A read that then times out before the
// deadline asked for is retried with that deadline armed (early), so the
// timeouts stay exact.
//
// Its owner's goroutine uses it; another goroutine may still set the
// connection's deadline directly (the drain's wake-up of idle
// connections): the read that times out then is retried at most once.
type readDeadline struct {
	conn  net.Conn
	want  time.Time     // asked for; zero: none
	armed time.Time     // the connection's; zero: none
	every time.Duration // setChecked's interval; 0: none
}

// set asks for the deadline now+timeout, where now is a recent reading of
// the clock. It is not armed if the armed one comes at most min(timeout/8,
// lazySlack) before it.
func (d *readDeadline) set(now time.Time, timeout time.Duration) {
	d.want, d.every = now.Add(timeout), 0
	d.armLazily(d.want, min(timeout/8, lazySlack))
}

// setCapped is set, but the deadline armed comes at most limit after now:
// a wait ends then, early, and the read made again (see early) waits on
// with the deadline asked for.
func (d *readDeadline) setCapped(now time.Time, timeout, limit time.Duration) {
	if timeout <= limit {
		d.set(now, timeout)
		return
	}
	d.want, d.every = now.Add(timeout), 0
	d.armLazily(now.Add(limit), limit/8)
}

// setChecked is setCapped, but every wait ends at most every after it
// began, not only the first, until the deadline asked for: the reader
// checks something each time (see upstreamConn.Read).
func (d *readDeadline) setChecked(now time.Time, timeout, every time.Duration) {
	d.setCapped(now, timeout, every)
	d.every = every
}

// armLazily arms t, unless the armed deadline comes at most slack before it.
func (d *readDeadline) armLazily(t time.Time, slack time.Duration) {
	if !d.armed.IsZero() && !d.armed.After(t) && t.Sub(d.armed) <= slack {
		return
	}
	d.arm(t)
}

// clear asks for no deadline.
func (d *readDeadline) clear() {
	d.want, d.every = time.Time{}, 0
	if !d.armed.IsZero() {
		d.arm(time.Time{})
	}
}

// arm sets the connection's read deadline to t (zero: none).
func (d *readDeadline) arm(t time.Time) {
	d.conn.SetReadDeadline(t)
	d.armed = t
}

// early reports whether a read's error err is a timeout that came before
// the deadline asked for, after arming that deadline: the read is then to
// be made again.
func (d *readDeadline) early(err error) bool {
	if d.armed.IsZero() || !d.armed.Before(d.want) || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	if d.every > 0 {
		if next := time.Now().Add(d.every); next.Before(d.want) {
			d.arm(next)
			return true
		}
	}
	d.arm(d.want)
	return true
}
