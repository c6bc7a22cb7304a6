package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDSN: the flag, else $SHOAL_DB, else the XDG data folder, else
// ~/.local/share.
func TestDSN(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("SHOAL_DB", "")
	t.Setenv("XDG_DATA_HOME", "relative/is/ignored")
	for _, c := range []struct{ flag, env, xdg, want string }{
		{"postgres://h/db", "other.db", "/xdg", "postgres://h/db"},
		{"", "env.db", "/xdg", "env.db"},
		{"", "", "/xdg", "/xdg/shoal/shoal.db"},
		{"", "", "", filepath.Join(home, ".local/share/shoal/shoal.db")},
		{"", "", "relative", filepath.Join(home, ".local/share/shoal/shoal.db")},
	} {
		t.Setenv("SHOAL_DB", c.env)
		t.Setenv("XDG_DATA_HOME", c.xdg)
		if got, err := DSN(c.flag); err != nil || got != c.want {
			t.Errorf("DSN(%q) with SHOAL_DB=%q XDG_DATA_HOME=%q: %q, %v; want %q", c.flag, c.env, c.xdg, got, err, c.want)
		}
	}
}

// TestOpenErrorsNameTheDatabase: a failed Open says which database and
// what failed, and not a PostgreSQL password.
func TestOpenErrorsNameTheDatabase(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	closed := "postgres://shoal:secret@127.0.0.1:1/runs?connect_timeout=5"
	for dsn, want := range map[string][]string{
		filepath.Join(file, "shoal.db"): {"sqlite " + filepath.Join(file, "shoal.db"), "open"},
		file + "?mode=ro":               {"sqlite", "without '?'"},
		closed:                          {"postgres postgres://shoal:xxxxx@127.0.0.1:1/runs", "connect"},
	} {
		s, err := Open(context.Background(), dsn)
		if err == nil {
			s.Close()
			t.Errorf("Open(%s) succeeded", dsn)
			continue
		}
		for _, w := range append(want, "store: ") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Open(%s): %v, want it to say %q", dsn, err, w)
			}
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%s): %v shows the password", dsn, err)
		}
	}
}

// TestBackend names each back end.
func TestBackend(t *testing.T) {
	for _, b := range backends {
		if s := open(t, b.dsn(t)); s.Backend() != b.name {
			t.Errorf("Backend() = %q, want %q", s.Backend(), b.name)
		}
	}
}

// TestRebind numbers PostgreSQL's placeholders and leaves SQLite's.
func TestRebind(t *testing.T) {
	q := "SELECT a FROM t WHERE b = ? AND c IN (?, ?)"
	if got := (&Store{backend: Postgres}).rebind(q); got != "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)" {
		t.Errorf("postgres: %s", got)
	}
	if got := (&Store{backend: SQLite}).rebind(q); got != q {
		t.Errorf("sqlite: %s", got)
	}
}
