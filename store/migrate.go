package store

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// migrationFS holds the schema's versions, NNNN_what.sql, applied in order.
// A released file never changes: a change to the schema is a new file.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int64
	name    string
	sql     string
}

// migrations reads the embedded files in version order.
func migrations() ([]migration, error) {
	names, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range names {
		prefix, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.ParseInt(prefix, 10, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: the name does not start with a version, NNNN_", e.Name())
		}
		b, err := migrationFS.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{v, e.Name(), string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return cmp.Compare(a.version, b.version) })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share a version", ms[i-1].name, ms[i].name)
		}
	}
	return ms, nil
}

// migrate applies the migrations the database lacks, each in a transaction
// of its own, and refuses a database a newer Shoal has migrated further.
// What is applied is read first without a lock, so opening an up-to-date
// database (every command's case) neither takes nor waits for a lock.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return s.fail("read migrations", err)
	}
	applied := s.applied(ctx)
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if err := s.retry(ctx, func() error { return s.apply(ctx, m) }); err != nil {
			return s.fail("migration "+m.name, err)
		}
	}
	latest := ms[len(ms)-1].version
	for v := range applied {
		if v > latest {
			return s.fail("open", fmt.Errorf("schema version %d is newer than this Shoal's %d: use a newer shoal", v, latest))
		}
	}
	return nil
}

// applied is the set of versions schema_migrations lists. An error, as
// before the table exists, leaves it empty: apply, which checks again
// under the lock, then reports any error that persists.
func (s *Store) applied(ctx context.Context) map[int64]bool {
	set := map[int64]bool{}
	rows, err := s.db.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return set
	}
	defer rows.Close()
	for rows.Next() {
		var v int64
		if rows.Scan(&v) == nil {
			set[v] = true
		}
	}
	return set
}

// pgMigrationLock is the PostgreSQL advisory lock's key that serialises
// migrations; any constant the database's other users do not take.
const pgMigrationLock = 0x73686f616c6d6967 // "shoalmig"

// apply applies m unless it is recorded. The lock makes two processes that
// open a fresh database at once apply it once: PostgreSQL's advisory lock
// held to the transaction's end, SQLite's write lock, which its
// transactions take as they begin (BEGIN IMMEDIATE).
func (s *Store) apply(ctx context.Context, m migration) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.backend == Postgres {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", pgMigrationLock)); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return err
	}
	var n int
	err = tx.QueryRowContext(ctx, s.rebind("SELECT COUNT(*) FROM schema_migrations WHERE version = ?"), m.version).Scan(&n)
	if err != nil || n > 0 {
		return err
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if err := s.noteApplied(ctx, tx, m.version); err != nil {
		return err
	}
	return tx.Commit()
}

// noteApplied notes the version as applied now (nanoseconds since 1970, UTC).
func (s *Store) noteApplied(ctx context.Context, tx *sql.Tx, version int64) error {
	_, err := tx.ExecContext(ctx, s.rebind("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)"),
		version, time.Now().UnixNano())
	return err
}
