package store

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoal-project/shoal/store/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

// backends are the databases every test runs on, each giving a new empty
// database: a SQLite file (in a folder Open must create) and a database on
// the test binary's PostgreSQL server.
var backends = []struct {
	name string
	dsn  func(t testing.TB) string
}{
	{SQLite, func(t testing.TB) string { return filepath.Join(t.TempDir(), "data", "shoal.db") }},
	{Postgres, pgtest.Start},
}

// eachBackend runs test on a new database of each back end.
func eachBackend(t *testing.T, test func(t *testing.T, dsn string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, b.dsn(t)) })
	}
}

// open opens the store, closed when the test ends.
func open(t testing.TB, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// t0 is a start time with nanoseconds, outside UTC.
var t0 = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.FixedZone("CET", 3600))

// sample is a run like `shoal sim` records, different for each i.
func sample(i int) *Run {
	return &Run{
		Kind: KindSim, Scenario: "lb-moderate-cpu", ScenarioHash: Hash([]byte("scenario")),
		Policy: "sed", PolicyHash: "", RootSeed: uint64(i) + 1, Seeds: 5, Load: 0.85,
		CodeVersion: "shoal (devel) revision abc", Flags: map[string]string{"seeds": "5", "load": "0.85"},
		Started: t0.Add(time.Duration(i) * time.Minute), Finished: t0.Add(time.Duration(i)*time.Minute + 42*time.Second),
		Summary: map[string]Stat{"mean": {1.351, 0.06}, "p99": {6.647, 0.38}, "throughput": {13.6, 0.051}},
		Classes: []ClassResult{
			{Class: "search", Stats: map[string]Stat{"mean": {0.9, 0.01}, "p99": {3.2, 0.2}}},
			{Class: "browse", Stats: map[string]Stat{"mean": {1.8, 0.02}}},
		},
	}
}

// show is r in a form equal runs print alike: times as nanoseconds (a time's
// zone is not stored), NaN as NaN (which DeepEqual would not match).
func show(r *Run) string {
	c := *r
	c.Started, c.Finished = time.Time{}, time.Time{}
	return fmt.Sprintf("%+v started %d finished %d (zero %v)", c, r.Started.UnixNano(), r.Finished.UnixNano(), r.Finished.IsZero())
}

// count counts rows with the store's own connection.
func count(t testing.TB, s *Store, q string, args ...any) int {
	t.Helper()
	var n int
	if err := s.db.QueryRowContext(context.Background(), s.rebind(q), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// statCount is how many run_stats rows r makes.
func statCount(r *Run) int {
	n := len(r.Summary)
	for _, c := range r.Classes {
		n += len(c.Stats)
	}
	return n
}

var nan, inf = math.NaN(), math.Inf(1)
