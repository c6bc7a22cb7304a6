package sweep

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/store"
	"github.com/shoal-project/shoal/store/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

// small is a sweep that runs in seconds: two scenarios, two loads, two
// built-in policies and a Distr-LB trained for one short episode and
// evaluated alone and over probing.
const small = `
name: small
scenarios: [lb-moderate-cpu, lb-drift]
loads: [0.7, 0.9]
policies: [sed, probing-sed]
seed: 11
seeds: 2
horizon: 20s
train: [{learner: distr-lb, episodes: 1, episode_steps: 20, as: [distr-lb, distr-lb+probing]}]
`

// smallRuns is how many runs small records: per scenario, the training,
// its two policies at two loads and two built-in policies at two loads.
const smallRuns = 2 * (1 + 2*2 + 2*2)

func openSQLite(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func openPostgres(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func decode(t *testing.T, y string) *Spec {
	t.Helper()
	s, err := Decode([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rows are a sweep's runs as comparable lines: everything but the id, the
// shard and the times.
func rows(t *testing.T, st *store.Store, sweep string) []string {
	t.Helper()
	runs, err := st.List(context.Background(), store.Filter{Sweep: sweep})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range runs {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s %s %s %s %d/%d load %g flags %v key %s code %q\n",
			r.Kind, r.Scenario, r.ScenarioHash, r.Policy, r.PolicyHash, r.RootSeed, r.Seeds, r.Load, r.Flags, r.Key, r.CodeVersion)
		writeStats(&b, "", r.Summary)
		for _, c := range r.Classes {
			writeStats(&b, c.Class, c.Stats)
		}
		out = append(out, b.String())
	}
	slices.Sort(out)
	return out
}

func writeStats(b *strings.Builder, class string, m map[string]store.Stat) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s := m[k]
		fmt.Fprintf(b, "  %s.%s %s %s\n", class, k, exact(s.Mean), exact(s.CI95))
	}
}

func exact(f float64) string {
	if math.IsNaN(f) {
		return "NaN"
	}
	return fmt.Sprintf("%x", f) // every bit
}

// TestShardUnionEqualsLocalRun: the shards of a sweep, on PostgreSQL,
// record exactly the runs of the whole sweep run locally on SQLite, row
// for row and bit for bit; and running the sweep again records nothing.
func TestShardUnionEqualsLocalRun(t *testing.T) {
	ctx := context.Background()
	spec := decode(t, small)
	local := openSQLite(t)
	out, err := (&Runner{Spec: spec, Store: local, Workers: 2, CodeVersion: "test"}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.Jobs != 10 || out.Runs != smallRuns || out.Skipped != 0 {
		t.Fatalf("local: %+v, want 10 jobs and %d runs", out, smallRuns)
	}
	shared := openPostgres(t)
	total := 0
	for i := range 3 {
		out, err := (&Runner{Spec: spec, Store: shared, Shard: i, Shards: 3, Workers: 1, CodeVersion: "test"}).Run(ctx)
		if err != nil {
			t.Fatalf("shard %d/3: %v", i, err)
		}
		total += out.Runs
	}
	if total != smallRuns {
		t.Fatalf("shards recorded %d runs, want %d", total, smallRuns)
	}
	want, got := rows(t, local, "small"), rows(t, shared, "small")
	if !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("row %d differs:\nshards: %s\nlocal:  %s", i, got[i], want[i])
			}
		}
		t.Fatalf("%d rows from the shards, %d locally", len(got), len(want))
	}
	// Again: everything is there.
	out, err = (&Runner{Spec: spec, Store: local, CodeVersion: "test"}).Run(ctx)
	if err != nil || out.Runs != 0 || out.Skipped != smallRuns {
		t.Fatalf("second run: %+v, %v; want %d skipped and none run", out, err, smallRuns)
	}
	status, err := (&Runner{Spec: spec, Store: shared, Shards: 3}).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range status {
		if s.Runs == 0 || s.Stored != s.Runs {
			t.Errorf("shard %d: %d of %d stored", s.Shard, s.Stored, s.Runs)
		}
	}
}

// TestResumesWhatIsMissing: a sweep whose store lost some runs (as if it
// had stopped before them) runs those again and only those.
func TestResumesWhatIsMissing(t *testing.T) {
	ctx := context.Background()
	spec := decode(t, strings.Replace(small, "train: [{learner: distr-lb, episodes: 1, episode_steps: 20, as: [distr-lb, distr-lb+probing]}]", "", 1))
	st := openSQLite(t)
	// Shard 0 of 2 stands for a sweep stopped half way.
	if _, err := (&Runner{Spec: spec, Store: st, Shard: 0, Shards: 2}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := (&Runner{Spec: spec, Store: st}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.Runs != 4 || out.Skipped != 4 {
		t.Fatalf("resumed: %+v, want 4 run and 4 skipped", out)
	}
	keys, err := st.Keys(ctx, "small")
	if err != nil || len(keys) != 8 {
		t.Fatalf("%d distinct keys (%v), want 8", len(keys), err)
	}
}
