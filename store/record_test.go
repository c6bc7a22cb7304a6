package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestRecordThenGet: every field comes back as written, including NaN and
// infinite statistics, a root seed above BIGINT's range, nanoseconds, a
// missing finish time and the classes' order.
func TestRecordThenGet(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s, ctx := open(t, dsn), context.Background()
		a := sample(1)
		a.RootSeed, a.PolicyHash, a.Sweep, a.Shard = math.MaxUint64, Hash([]byte("policy")), "sweep1", "2/4"
		a.Summary["ci-less"] = Stat{Mean: 3, CI95: nan}
		a.Summary["unbounded"] = Stat{Mean: inf, CI95: -inf}
		b := sample(2)
		b.Finished, b.Flags, b.Classes, b.Kind, b.Load = time.Time{}, nil, nil, KindTrain, 0
		for _, r := range []*Run{a, b} {
			if err := s.Record(ctx, r); err != nil {
				t.Fatal(err)
			}
			if len(r.ID) != 32 || r.Key != r.ComputeKey() {
				t.Fatalf("Record set id %q and key %q, want 32 hex digits and ComputeKey's", r.ID, r.Key)
			}
			got, err := s.Get(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if show(got) != show(r) {
				t.Errorf("read back\n%s\nwant\n%s", show(got), show(r))
			}
			if got.Started.Location() != time.UTC {
				t.Errorf("started in %v, want UTC", got.Started.Location())
			}
		}
	})
}

// TestRecordIsAtomic: when the database refuses a statistic (a class
// recorded twice breaks run_stats' primary key) after it took the run's row
// and a first batch of statistics, none of the run remains.
func TestRecordIsAtomic(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s, ctx := open(t, dsn), context.Background()
		r := sample(1)
		for i := range statsPerInsert + 50 { // the duplicate lands in the second INSERT
			r.Summary[fmt.Sprintf("stat%03d", i)] = Stat{Mean: float64(i)}
		}
		r.Classes = append(r.Classes, r.Classes[0])
		err := s.Record(ctx, r)
		if err == nil || !strings.Contains(err.Error(), "insert stats") || !strings.Contains(err.Error(), r.ID) {
			t.Fatalf("Record with a class twice: %v, want the stats' insert to fail, naming the run", err)
		}
		if _, err := s.Get(ctx, r.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get after a failed Record: %v, want ErrNotFound", err)
		}
		if n := count(t, s, "SELECT COUNT(*) FROM run_stats WHERE run_id = ?", r.ID); n != 0 {
			t.Errorf("%d statistics of the failed run remain", n)
		}
		ok := sample(2)
		if err := s.Record(ctx, ok); err != nil {
			t.Fatalf("the store after a failed Record: %v", err)
		}
	})
}

// TestRecordRefuses what it could not read back, and a second run with an
// id already stored, without touching the first.
func TestRecordRefuses(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s, ctx := open(t, dsn), context.Background()
		for name, spoil := range map[string]func(r *Run){
			"kind":          func(r *Run) { r.Kind = "simulation" },
			"start":         func(r *Run) { r.Started = time.Time{} },
			"NaN load":      func(r *Run) { r.Load = math.NaN() },
			"year":          func(r *Run) { r.Finished = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC) },
			"seeds":         func(r *Run) { r.Seeds = -1 },
			"negative load": func(r *Run) { r.Load = -0.5 },
			"class":         func(r *Run) { r.Classes[1].Class = "" },
		} {
			r := sample(0)
			spoil(r)
			if err := s.Record(ctx, r); err == nil || !strings.Contains(err.Error(), s.Location()) {
				t.Errorf("%s: Record: %v, want an error naming the database", name, err)
			}
		}
		first := sample(1)
		if err := s.Record(ctx, first); err != nil {
			t.Fatal(err)
		}
		again := sample(2)
		again.ID = first.ID
		if err := s.Record(ctx, again); err == nil || !strings.Contains(err.Error(), "insert run") {
			t.Errorf("a second run with id %s: %v, want the run's insert to fail", first.ID, err)
		}
		if got, err := s.Get(ctx, first.ID); err != nil || show(got) != show(first) {
			t.Errorf("the first run after the second was refused: %v\n%v", err, got)
		}
		if n := count(t, s, "SELECT COUNT(*) FROM runs"); n != 1 {
			t.Errorf("%d runs, want 1", n)
		}
	})
}
