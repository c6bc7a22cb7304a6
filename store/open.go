package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"
)

// Back ends, as Backend names them.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// sqliteParams set up each SQLite connection: wait up to 10 s for another
// writer's lock; WAL, so readers and one writer proceed together; NORMAL
// sync, which in WAL mode keeps the file consistent through a crash and
// skips an fsync per commit; foreign keys on; and transactions that take
// the write lock when they begin (BEGIN IMMEDIATE), so two of them cannot
// both read and then both try to write.
const sqliteParams = "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)" +
	"&_pragma=foreign_keys(1)&_txlock=immediate"

// Store is a run store. Its methods are safe for concurrent use.
type Store struct {
	db      *sql.DB
	backend string // SQLite or Postgres
	where   string // the file, or the URL without password, for messages
}

// Open opens the run store at dsn, a postgres:// or postgresql:// URL or
// else a SQLite file (created with its folders when missing), and brings
// its schema up to date.
func Open(ctx context.Context, dsn string) (*Store, error) {
	s, err := connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

// connect opens and pings the database, again while SQLite is busy.
func connect(ctx context.Context, dsn string) (*Store, error) {
	s := &Store{backend: Postgres, where: redact(dsn)}
	driver, source := "pgx", dsn
	if !IsPostgres(dsn) {
		s.backend, s.where, driver, source = SQLite, dsn, "sqlite", dsn+sqliteParams
		if err := sqliteDir(dsn); err != nil {
			return nil, s.fail("open", err)
		}
	}
	db, err := sql.Open(driver, source)
	if err != nil {
		return nil, s.fail("open", err)
	}
	s.db = db
	// A new SQLite connection sets WAL mode, which can find the database
	// busy without waiting (several processes opening a fresh file at once).
	if err := s.retry(ctx, func() error { return db.PingContext(ctx) }); err != nil {
		db.Close()
		return nil, s.fail("connect", err)
	}
	return s, nil
}

// sqliteDir checks a SQLite path and creates its folder.
func sqliteDir(path string) error {
	if path == "" || strings.ContainsRune(path, '?') || strings.HasPrefix(path, "file:") {
		return fmt.Errorf("want a file path, without '?' or file:")
	}
	return os.MkdirAll(filepath.Dir(path), 0o755)
}

// Backend is "sqlite" or "postgres".
func (s *Store) Backend() string { return s.backend }

// Location is the database's file, or its URL without the password.
func (s *Store) Location() string { return s.where }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// fail names the database and what failed.
func (s *Store) fail(op string, err error) error {
	return fmt.Errorf("store: %s %s: %s: %w", s.backend, s.where, op, err)
}
