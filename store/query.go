package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNotFound and ErrAmbiguous are what Get's errors wrap when no run, or
// more than one, matches.
var (
	ErrNotFound  = errors.New("no such run")
	ErrAmbiguous = errors.New("ambiguous run id prefix")
)

// MinPrefix is the shortest id prefix Get accepts, as git's: a prefix
// that several ids share is refused as ambiguous, naming two of them.
const MinPrefix = 4

// Filter selects runs for List; zero fields select everything.
type Filter struct {
	Scenario, Policy, Kind, Sweep string
	Since                         time.Time // started at or after
	Limit                         int       // at most this many, the newest; 0: all
}

// Get returns the run with the id, or with the only id that starts with
// it (at least MinPrefix characters).
func (s *Store) Get(ctx context.Context, id string) (*Run, error) {
	full, err := s.resolve(ctx, id)
	if err != nil {
		return nil, s.fail("get run "+id, err)
	}
	runs, err := s.runs(ctx, "WHERE id = ?", []any{full})
	if err == nil && len(runs) == 0 {
		err = ErrNotFound // deleted since resolve
	}
	if err != nil {
		return nil, s.fail("get run "+id, err)
	}
	return runs[0], nil
}

// resolve turns a run id or a unique prefix of one into the id.
func (s *Store) resolve(ctx context.Context, id string) (string, error) {
	ids, err := s.strings(ctx, "SELECT id FROM runs WHERE id = ?", id)
	if err != nil || len(ids) == 1 {
		return id, err
	}
	if len(id) < MinPrefix {
		return "", fmt.Errorf("%w (a prefix needs %d characters)", ErrNotFound, MinPrefix)
	}
	ids, err = s.strings(ctx, `SELECT id FROM runs WHERE id LIKE ? ESCAPE '\' ORDER BY id LIMIT 2`, likePrefix(id))
	switch {
	case err != nil:
		return "", err
	case len(ids) == 0:
		return "", ErrNotFound
	case len(ids) > 1:
		return "", fmt.Errorf("%w: %s, %s, ...", ErrAmbiguous, ids[0], ids[1])
	}
	return ids[0], nil
}

// likePrefix is a LIKE pattern for strings that start with p.
func likePrefix(p string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(p) + "%"
}

// List returns the runs f selects, newest first.
func (s *Store) List(ctx context.Context, f Filter) ([]*Run, error) {
	where, args := f.where()
	q := where + " ORDER BY started DESC, id DESC"
	if f.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, f.Limit)
	}
	runs, err := s.runs(ctx, q, args)
	if err != nil {
		return nil, s.fail("list runs", err)
	}
	return runs, nil
}

// where is f as a WHERE clause and its arguments.
func (f Filter) where() (string, []any) {
	var conds []string
	var args []any
	for _, c := range []struct {
		col string
		val string
	}{{"scenario", f.Scenario}, {"policy", f.Policy}, {"kind", f.Kind}, {"sweep", f.Sweep}} {
		if c.val != "" {
			conds, args = append(conds, c.col+" = ?"), append(args, c.val)
		}
	}
	if !f.Since.IsZero() {
		conds, args = append(conds, "started >= ?"), append(args, f.Since.UnixNano())
	}
	if len(conds) == 0 {
		return "", nil
	}
	return "WHERE " + strings.Join(conds, " AND "), args
}

// HasKey reports whether a run with the key is stored.
func (s *Store) HasKey(ctx context.Context, key string) (bool, error) {
	keys, err := s.strings(ctx, "SELECT run_key FROM runs WHERE run_key = ? LIMIT 1", key)
	if err != nil {
		return false, s.fail("look up key", err)
	}
	return len(keys) > 0, nil
}

// Keys returns the keys of the sweep's stored runs (of all runs for ""),
// so a resumed sweep skips them.
func (s *Store) Keys(ctx context.Context, sweep string) (map[string]bool, error) {
	q, args := "SELECT DISTINCT run_key FROM runs", []any{}
	if sweep != "" {
		q, args = q+" WHERE sweep = ?", append(args, sweep)
	}
	keys, err := s.strings(ctx, q, args...)
	if err != nil {
		return nil, s.fail("read keys", err)
	}
	set := make(map[string]bool, len(keys))
	for _, k := range keys {
		set[k] = true
	}
	return set, nil
}

// strings runs a query of one text column.
func (s *Store) strings(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
