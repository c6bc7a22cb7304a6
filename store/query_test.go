package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestGetByPrefix: a unique prefix finds its run; a shared one, a short
// one, an unknown one and LIKE's wildcards do not, and the error names it.
func TestGetByPrefix(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s, ctx := open(t, dsn), context.Background()
		for i, id := range []string{"abcdef00000000000000000000000000", "abcdef11111111111111111111111111",
			"12345600000000000000000000000000", "abcd"} {
			r := sample(i)
			r.ID = id
			if err := s.Record(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		for prefix, want := range map[string]string{"1234": "12345600000000000000000000000000",
			"abcdef1": "abcdef11111111111111111111111111", "abcd": "abcd"} {
			if r, err := s.Get(ctx, prefix); err != nil || r.ID != want {
				t.Errorf("Get(%q): %v, %v; want run %s", prefix, r, err, want)
			}
		}
		for prefix, want := range map[string]error{"abcdef": ErrAmbiguous, "123": ErrNotFound,
			"ffffff": ErrNotFound, "abcde_": ErrNotFound, "abcd%": ErrNotFound} {
			_, err := s.Get(ctx, prefix)
			if !errors.Is(err, want) || !strings.Contains(err.Error(), `run `+prefix+`:`) {
				t.Errorf("Get(%q): %v, want %v naming it", prefix, err, want)
			}
		}
	})
}

// TestListFiltersNewestFirst: each filter selects its runs, newest first,
// with their statistics; Limit keeps the newest.
func TestListFiltersNewestFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s, ctx := open(t, dsn), context.Background()
		var runs []*Run // runs[i] started i minutes after t0
		for i := range 6 {
			r := sample(i)
			r.Policy = []string{"sed", "lsq"}[i%2]
			r.Scenario = []string{"lb-moderate-cpu", "lb-fanout", "lb-fanout"}[i%3]
			if i >= 4 {
				r.Kind, r.Sweep = KindSweep, "sw1"
			}
			runs = append(runs, r)
		}
		for _, i := range []int{3, 0, 5, 1, 4, 2} { // not in time order
			if err := s.Record(ctx, runs[i]); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			f    Filter
			want []int
		}{
			{Filter{}, []int{5, 4, 3, 2, 1, 0}},
			{Filter{Policy: "sed"}, []int{4, 2, 0}},
			{Filter{Scenario: "lb-fanout", Policy: "lsq"}, []int{5, 1}},
			{Filter{Kind: KindSweep}, []int{5, 4}},
			{Filter{Sweep: "sw1", Limit: 1}, []int{5}},
			{Filter{Since: t0.Add(3 * time.Minute)}, []int{5, 4, 3}},
			{Filter{Limit: 2}, []int{5, 4}},
			{Filter{Policy: "none"}, nil},
		} {
			got, err := s.List(ctx, c.f)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Errorf("List(%+v): %d runs, want %d", c.f, len(got), len(c.want))
				continue
			}
			for j, i := range c.want {
				if show(got[j]) != show(runs[i]) {
					t.Errorf("List(%+v)[%d]:\n%s\nwant\n%s", c.f, j, show(got[j]), show(runs[i]))
				}
			}
		}
	})
}

// TestKeys: a sweep finds the keys of the runs it stored, and of all runs.
func TestKeys(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s, ctx := open(t, dsn), context.Background()
		a, b, c := sample(1), sample(2), sample(3)
		a.Sweep, b.Sweep = "sw1", "sw1"
		b.Key = a.ComputeKey() // a rerun of a
		for _, r := range []*Run{a, b, c} {
			if err := s.Record(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		for key, want := range map[string]bool{a.Key: true, c.Key: true, sample(4).ComputeKey(): false} {
			if got, err := s.HasKey(ctx, key); err != nil || got != want {
				t.Errorf("HasKey(%s) = %v, %v; want %v", key, got, err, want)
			}
		}
		for sweep, want := range map[string]map[string]bool{
			"sw1": {a.Key: true}, "": {a.Key: true, c.Key: true}, "none": {},
		} {
			got, err := s.Keys(ctx, sweep)
			if err != nil || len(got) != len(want) {
				t.Errorf("Keys(%q) = %v, %v; want %v", sweep, got, err, want)
			}
			for k := range want {
				if !got[k] {
					t.Errorf("Keys(%q) lacks %s", sweep, k)
				}
			}
		}
	})
}
