package proxy

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// A deadline asked for a little later than the armed one is not armed, and
// a read that times out at the armed one is made again until the one asked
// for: the timeout stays exact.
func TestLazyDeadlineStaysExact(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	d := readDeadline{conn: a}
	start := time.Now()
	d.set(start, 400*time.Millisecond)
	if !d.armed.Equal(d.want) {
		t.Fatalf("first deadline not armed: armed %v, want %v", d.armed, d.want)
	}
	first := d.armed
	d.set(start.Add(40*time.Millisecond), 400*time.Millisecond) // within 400/8 ms: kept
	if !d.armed.Equal(first) || !d.want.After(first) {
		t.Fatalf("lazy deadline re-armed: armed %v, want %v", d.armed, d.want)
	}
	var buf [1]byte
	_, err := a.Read(buf[:])
	for err != nil && d.early(err) {
		_, err = a.Read(buf[:])
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read: %v, want a timeout", err)
	}
	if took := time.Since(start); took < 440*time.Millisecond {
		t.Errorf("timed out after %v, before the deadline asked for (440 ms)", took)
	}
	d.set(time.Now(), time.Hour) // much later: armed
	if !d.armed.Equal(d.want) {
		t.Errorf("later deadline not armed")
	}
	d.set(time.Now(), time.Millisecond) // earlier: armed at once
	if !d.armed.Equal(d.want) {
		t.Errorf("earlier deadline not armed")
	}
	d.clear()
	if !d.armed.IsZero() || !d.want.IsZero() {
		t.Errorf("clear left armed %v, want %v", d.armed, d.want)
	}
}
