package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
)

// runColumns are the runs table's columns in the order Record writes them
// and scanRun reads them.
const runColumns = "id, kind, scenario, scenario_hash, policy, policy_hash, root_seed, seeds, load, " +
	"code_version, flags, started, finished, run_key, sweep, shard"

// statColumns are run_stats' columns, likewise.
const statColumns = "run_id, class, class_pos, name, mean, ci95"

// statsPerInsert bounds the rows of one INSERT: 6 placeholders each stays
// far below both databases' limits on placeholders per statement.
const statsPerInsert = 200

// Record writes r and all its statistics in one transaction: either all of
// the run is stored or none of it. It sets r.ID (NewID) and r.Key
// (ComputeKey) when they are empty. A class listed twice is refused (by
// the database's primary key on run_stats).
func (s *Store) Record(ctx context.Context, r *Run) error {
	if err := r.validate(); err != nil {
		return s.fail("record run", err)
	}
	if r.ID == "" {
		r.ID = NewID()
	}
	if r.Key == "" {
		r.Key = r.ComputeKey()
	}
	run, stats := runRow(r), statRows(r)
	if err := s.retry(ctx, func() error { return s.insert(ctx, run, stats) }); err != nil {
		return s.fail("record run "+r.ID, err)
	}
	return nil
}

// insert writes a run's row and its statistics' rows in a transaction.
func (s *Store) insert(ctx context.Context, run []any, stats [][]any) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	q := "INSERT INTO runs (" + runColumns + ") VALUES " + placeholders(len(run))
	if _, err := tx.ExecContext(ctx, s.rebind(q), run...); err != nil {
		return fmt.Errorf("insert run: %w", err)
	}
	for chunk := range slices.Chunk(stats, statsPerInsert) {
		if err := s.insertStats(ctx, tx, chunk); err != nil {
			return fmt.Errorf("insert stats: %w", err)
		}
	}
	return tx.Commit()
}

// insertStats writes rows of run_stats with one statement.
func (s *Store) insertStats(ctx context.Context, tx *sql.Tx, rows [][]any) error {
	q := "INSERT INTO run_stats (" + statColumns + ") VALUES "
	var args []any
	for i, row := range rows {
		if i > 0 {
			q += ", "
		}
		q += placeholders(len(row))
		args = append(args, row...)
	}
	_, err := tx.ExecContext(ctx, s.rebind(q), args...)
	return err
}

// runRow is r as the runs table's row, in runColumns' order.
func runRow(r *Run) []any {
	flags := []byte("{}")
	if len(r.Flags) > 0 {
		flags, _ = json.Marshal(r.Flags) // a map of strings always encodes
	}
	return []any{r.ID, r.Kind, r.Scenario, r.ScenarioHash, r.Policy, r.PolicyHash,
		strconv.FormatUint(r.RootSeed, 10), int64(r.Seeds), r.Load, r.CodeVersion, string(flags),
		r.Started.UnixNano(), nanos(r.Finished), r.Key, r.Sweep, r.Shard}
}

// statRows are r's statistics as run_stats rows: the summary as class ""
// at position 0, then each class at its position from 1.
func statRows(r *Run) [][]any {
	rows := classRows(r.ID, "", 0, r.Summary)
	for i, c := range r.Classes {
		rows = append(rows, classRows(r.ID, c.Class, i+1, c.Stats)...)
	}
	return rows
}

// classRows are one class's rows, by name.
func classRows(id, class string, pos int, stats map[string]Stat) [][]any {
	var rows [][]any
	for _, name := range slices.Sorted(maps.Keys(stats)) {
		st := stats[name]
		rows = append(rows, []any{id, class, int64(pos), name, nullNaN(st.Mean), nullNaN(st.CI95)})
	}
	return rows
}

// nanos is t in nanoseconds since 1970, NULL when t is zero.
func nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// nullNaN is f, NULL for NaN: SQLite stores a NaN as NULL, so both back
// ends store it so and read NULL back as NaN.
func nullNaN(f float64) any {
	if math.IsNaN(f) {
		return nil
	}
	return f
}
