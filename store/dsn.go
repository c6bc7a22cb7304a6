package store

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// DefaultPath is the SQLite file used when no database is named:
// $XDG_DATA_HOME/shoal/shoal.db, else ~/.local/share/shoal/shoal.db.
func DefaultPath() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) { // the XDG spec ignores relative paths
		return filepath.Join(d, "shoal", "shoal.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("store: no default database: %w (set SHOAL_DB or XDG_DATA_HOME)", err)
	}
	return filepath.Join(home, ".local", "share", "shoal", "shoal.db"), nil
}

// DSN is the database a command uses: flag if set, else $SHOAL_DB, else
// DefaultPath().
func DSN(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if env := os.Getenv("SHOAL_DB"); env != "" {
		return env, nil
	}
	return DefaultPath()
}

// IsPostgres tells a PostgreSQL URL from a SQLite path.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// redact is a PostgreSQL URL fit for messages: without its password.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	return u.Redacted()
}
