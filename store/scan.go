package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// idsPerQuery bounds the ids of one IN (...) list.
const idsPerQuery = 500

// runs reads the runs a clause ("WHERE ... ORDER BY ... LIMIT ?") selects,
// then their statistics. The statistics are read by id, not by the clause
// again: a run's statistics are committed with it and never change, so a
// run written in between cannot make the two reads disagree.
func (s *Store) runs(ctx context.Context, clause string, args []any) ([]*Run, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind("SELECT "+runColumns+" FROM runs "+clause), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var runs []*Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close() // one connection suffices for the statistics then
	return runs, s.addStats(ctx, runs)
}

// scanRun reads a row of runColumns.
func scanRun(rows *sql.Rows) (*Run, error) {
	var r Run
	var seed, flags string
	var seeds, started int64
	var finished sql.NullInt64
	err := rows.Scan(&r.ID, &r.Kind, &r.Scenario, &r.ScenarioHash, &r.Policy, &r.PolicyHash, &seed, &seeds,
		&r.Load, &r.CodeVersion, &flags, &started, &finished, &r.Key, &r.Sweep, &r.Shard)
	if err != nil {
		return nil, err
	}
	if r.RootSeed, err = strconv.ParseUint(seed, 10, 64); err != nil {
		return nil, fmt.Errorf("run %s: root seed: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(flags), &r.Flags); err != nil {
		return nil, fmt.Errorf("run %s: flags: %w", r.ID, err)
	}
	if len(r.Flags) == 0 {
		r.Flags = nil
	}
	r.Seeds, r.Started = int(seeds), time.Unix(0, started).UTC()
	if finished.Valid {
		r.Finished = time.Unix(0, finished.Int64).UTC()
	}
	return &r, nil
}

// addStats reads the runs' statistics into them.
func (s *Store) addStats(ctx context.Context, runs []*Run) error {
	byID := make(map[string]*Run, len(runs))
	var ids []any
	for _, r := range runs {
		byID[r.ID] = r
		ids = append(ids, r.ID)
	}
	for chunk := range slices.Chunk(ids, idsPerQuery) {
		q := "SELECT " + statColumns + " FROM run_stats WHERE run_id IN " + placeholders(len(chunk)) +
			" ORDER BY run_id, class_pos, name"
		if err := s.readStats(ctx, q, chunk, byID); err != nil {
			return fmt.Errorf("statistics: %w", err)
		}
	}
	return nil
}

// readStats reads rows of statColumns, in class order, into their runs.
func (s *Store) readStats(ctx context.Context, q string, args []any, byID map[string]*Run) error {
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, class, name string
		var pos int64
		var mean, ci sql.NullFloat64
		if err := rows.Scan(&id, &class, &pos, &name, &mean, &ci); err != nil {
			return err
		}
		byID[id].add(class, pos, name, Stat{orNaN(mean), orNaN(ci)})
	}
	return rows.Err()
}

// add puts a statistic read back into r; rows come in class_pos order, so
// a class starts where the last one read differs.
func (r *Run) add(class string, pos int64, name string, st Stat) {
	stats := &r.Summary
	if pos > 0 {
		if n := len(r.Classes); n == 0 || r.Classes[n-1].Class != class {
			r.Classes = append(r.Classes, ClassResult{Class: class})
		}
		stats = &r.Classes[len(r.Classes)-1].Stats
	}
	if *stats == nil {
		*stats = map[string]Stat{}
	}
	(*stats)[name] = st
}

// orNaN is a nullable column's value, NaN for NULL.
func orNaN(f sql.NullFloat64) float64 {
	if !f.Valid {
		return math.NaN()
	}
	return f.Float64
}
