package store

import (
	"context"
	"sync"
	"testing"
)

// TestConcurrentWriters: 8 writers with handles of their own, as separate
// processes would be, record 25 runs each at once and none is lost.
func TestConcurrentWriters(t *testing.T) {
	const writers, each = 8, 25
	eachBackend(t, func(t *testing.T, dsn string) {
		open(t, dsn) // migrated before the race
		var wg sync.WaitGroup
		errs := make(chan error, writers*each)
		for w := range writers {
			s := open(t, dsn)
			wg.Go(func() {
				for i := range each {
					errs <- s.Record(context.Background(), sample(w*each+i))
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		s := open(t, dsn)
		runs, err := s.List(context.Background(), Filter{})
		if err != nil {
			t.Fatal(err)
		}
		stats := 0
		for _, r := range runs {
			stats += statCount(r)
		}
		if want := writers * each; len(runs) != want || stats != want*statCount(sample(0)) {
			t.Errorf("%d runs with %d statistics, want %d with %d", len(runs), stats, want, want*statCount(sample(0)))
		}
		if n := count(t, s, "SELECT COUNT(*) FROM run_stats"); n != stats {
			t.Errorf("run_stats has %d rows, the runs %d statistics", n, stats)
		}
	})
}
