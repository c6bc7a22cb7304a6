package store

import (
	"context"
	"strings"
	"sync"
	"testing"
)

// TestMigrationsAreNumbered: the embedded files are versions 1, 2, ... n.
func TestMigrationsAreNumbered(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if m.version != int64(i+1) {
			t.Errorf("migration %d is %s, want version %d", i, m.name, i+1)
		}
	}
}

// TestReopen: opening a migrated database again applies nothing and keeps
// its runs.
func TestReopen(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := open(t, dsn)
		r := sample(1)
		if err := s.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
		s.Close()
		s = open(t, dsn)
		if _, err := s.Get(ctx, r.ID); err != nil {
			t.Errorf("the run after reopening: %v", err)
		}
		wantVersions(t, s)
	})
}

// TestConcurrentOpen: processes that open a fresh database at once (here
// handles of their own) all succeed, and each migration is applied once.
func TestConcurrentOpen(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		var wg sync.WaitGroup
		stores := make([]*Store, 8)
		errs := make([]error, len(stores))
		for i := range stores {
			wg.Go(func() { stores[i], errs[i] = Open(context.Background(), dsn) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("Open %d: %v", i, err)
			}
			defer stores[i].Close()
		}
		wantVersions(t, stores[0])
	})
}

// TestNewerSchemaRefused: a database migrated by a newer Shoal is refused,
// saying so.
func TestNewerSchemaRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		if _, err := s.db.Exec(s.rebind("INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)"), 9999); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if s, err := Open(context.Background(), dsn); err == nil || !strings.Contains(err.Error(), "newer") {
			t.Errorf("Open of a schema at version 9999: %v, want it refused", err)
			if err == nil {
				s.Close()
			}
		}
	})
}

// wantVersions checks schema_migrations holds each migration once.
func wantVersions(t *testing.T, s *Store) {
	t.Helper()
	ms, _ := migrations()
	if n := count(t, s, "SELECT COUNT(*) FROM schema_migrations"); n != len(ms) {
		t.Errorf("schema_migrations has %d rows, want %d", n, len(ms))
	}
	for _, m := range ms {
		if n := count(t, s, "SELECT COUNT(*) FROM schema_migrations WHERE version = ?", m.version); n != 1 {
			t.Errorf("version %d recorded %d times", m.version, n)
		}
	}
}
