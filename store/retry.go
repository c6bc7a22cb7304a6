package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// attempts bounds how often a transaction is tried while SQLite is busy.
const attempts = 6

// retry runs tx again while SQLite says another connection holds the
// database past the busy timeout, backing off with jitter so writers that
// collided do not collide again. Other errors, and PostgreSQL's, return at
// once: PostgreSQL's transactions wait for each other's locks themselves.
func (s *Store) retry(ctx context.Context, tx func() error) error {
	wait := 20 * time.Millisecond
	for try := 1; ; try++ {
		err := tx()
		if err == nil || try == attempts || s.backend != SQLite || !busy(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait/2 + rand.N(wait)):
		}
		wait *= 2
	}
}

// busy reports SQLITE_BUSY or SQLITE_LOCKED, with any extended code.
func busy(err error) bool {
	var e *sqlite.Error
	if errors.As(err, &e) {
		c := e.Code() & 0xff
		return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
	}
	return strings.Contains(err.Error(), "database is locked")
}
