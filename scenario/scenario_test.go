package scenario

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/workload"
)

func TestBadFilesNameTheProblem(t *testing.T) {
	files, _ := filepath.Glob("testdata/bad/*.yaml")
	if len(files) < 10 {
		t.Fatalf("only %d bad files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, _ := os.ReadFile(f)
			want := "empty file"
			if first, _, _ := strings.Cut(string(data), "\n"); strings.HasPrefix(first, "# want: ") {
				want = strings.TrimPrefix(first, "# want: ")
			}
			_, err := Load(f)
			if err == nil {
				t.Fatalf("no error, want %q", want)
			}
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), f) {
				t.Fatalf("error %q does not name the file and %q", err, want)
			}
		})
	}
}

func TestGoodFileDefaults(t *testing.T) {
	sc, err := Load("testdata/good/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Seed != 1 || sc.Seeds != 5 || sc.Horizon != 10*time.Minute || sc.Warmup != 30*time.Second ||
		sc.Drain != sc.Horizon || sc.SamplePeriod != time.Second || sc.ControlPeriod != 500*time.Millisecond {
		t.Fatalf("defaults: %+v", sc)
	}
}

func TestEmbeddedScenariosDecodeAndDumpRoundTrips(t *testing.T) {
	list, err := List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) < 7 {
		t.Fatalf("%d embedded scenarios", len(list))
	}
	for _, info := range list {
		sc, err := Embedded(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		if info.Description == "" {
			t.Errorf("%s has no description", info.Name)
		}
		raw, _ := Raw(info.Name)
		path := filepath.Join(t.TempDir(), "dump.yaml")
		os.WriteFile(path, raw, 0o644)
		again, err := Lookup(path)
		if err != nil {
			t.Fatal(err)
		}
		sc.traces, again.traces = nil, nil // catalogs differ by base folder
		if !reflect.DeepEqual(sc, again) {
			t.Errorf("%s: dumped file decodes differently", info.Name)
		}
	}
	if _, err := Lookup("no-such-scenario"); err == nil || !strings.Contains(err.Error(), "lb-moderate-cpu") {
		t.Fatalf("unknown name: %v", err)
	}
}

// TestCapacityByHand checks the load-level arithmetic on hand-computed
// capacities (req/s = sum over servers of min(cores*speed/E[cpu], io/E[io])).
func TestCapacityByHand(t *testing.T) {
	for _, tc := range []struct {
		name string
		want float64
	}{
		{"lb-moderate-cpu", 16},                // 1+1+2+2+2+4+4 cores, 1 s per task
		{"lb-moderate-75cpu", 4.0/3*2 + 8 + 8}, // min(c/0.75, 1/0.25): 1.33, 1.33, 2.67 x3, 4 x2
		{"lb-moderate-50cpu", 14},              // min(c/0.5, 1/0.5) = 2 each
		{"lb-moderate-misconfigured", 1.5 + 0.5 + 2 + 1.2 + 2.8 + 2 + 4.8},
		// Fan-out: 8 leaf calls of 10 ms per request; the leaves' cores x
		// speed add up to 3.9 + 2x6 + 4x6; the frontend has no demand.
		{"lb-fanout", (3.9 + 12 + 24) / 0.08},
	} {
		sc, err := Embedded(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := sc.Capacity()
		if err != nil || math.Abs(c-tc.want) > 1e-9 {
			t.Errorf("%s: capacity %g (%v), want %g", tc.name, c, err, tc.want)
		}
		for i, src := range sc.Sources {
			if want := sc.Load * tc.want / float64(len(sc.Sources)); math.Abs(src.Arrivals.Rate-want) > 1e-9 {
				t.Errorf("%s: sources[%d] rate %g, want %g", tc.name, i, src.Arrivals.Rate, want)
			}
		}
	}
}

// TestGuideExampleDecodes keeps the scenario guide's example true.
func TestGuideExampleDecodes(t *testing.T) {
	const guide = "../docs/guide/scenarios.md"
	raw, err := os.ReadFile(guide)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(raw), "## An example with every part")
	_, rest, _ = strings.Cut(rest, "```yaml\n")
	example, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("no yaml example under 'An example with every part' in " + guide)
	}
	// The example shows both ways to declare instances; keep the explicit list.
	example = strings.Replace(example, "    replicas: 3 ", "    # replicas: 3 ", 1)
	example = strings.Replace(example, "policies: [ecmp, lsq, sed, oracle]", "policies: [ecmp, lsq, sed]", 1)
	example = strings.Replace(example, "load: 0.85 ", "# load: 0.85 ", 1)
	example = strings.Replace(example, "arrivals: {kind: poisson}", "arrivals: {kind: poisson, rate: 20}", 1)
	if _, err := Decode(strings.NewReader(example), guide); err != nil {
		t.Fatalf("the guide's example: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.yaml")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	raw, _ := Raw("lb-moderate-cpu")
	f.Add(raw)
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Decode(bytes.NewReader(data), "fuzz.yaml")
		if err == nil && sc.Name == "" {
			t.Fatal("accepted a scenario without a name")
		}
	})
}

func TestSetHorizon(t *testing.T) {
	sc, err := Embedded("lb-moderate-cpu")
	if err != nil {
		t.Fatal(err)
	}
	sc.SetHorizon(10 * time.Hour)
	if sc.Warmup != 30*time.Minute || sc.Drain != 10*time.Hour || sc.SamplePeriod != 18*time.Second {
		t.Fatalf("warmup %v drain %v sample %v", sc.Warmup, sc.Drain, sc.SamplePeriod)
	}
}

// TestClosedLoopFile decodes closed-loop users (a count and a series), a
// visit, a route and an optional service, and runs them: the visit sets the
// mix, and load and arrival overrides are refused.
func TestClosedLoopFile(t *testing.T) {
	sc, err := Load("testdata/good/closed-loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	shop, browse := sc.Sources[0], sc.Sources[1]
	if shop.Users.Count != 20 || shop.Users.Over != nil || browse.Users.Over == nil || browse.Users.Over.Rates[1] != 40 {
		t.Fatalf("users %+v and %+v", shop.Users, browse.Users)
	}
	if rt := sc.Services[1].Route; !reflect.DeepEqual(rt.RetryOn, []string{"timeout", "429", "no_capacity"}) || rt.PerTryTimeout != 500*time.Millisecond {
		t.Fatalf("route %+v", rt)
	}
	sc.SetHorizon(3 * time.Minute)
	cl, err := cluster.New(&sc.Config, cluster.Options{Seed: 1, Traces: sc.Traces(), Horizon: sc.Horizon})
	if err != nil {
		t.Fatal(err)
	}
	cl.RunUntil(sc.Horizon)
	cl.Drain(sc.Drain)
	r := cl.Results()
	query, buy := r.Classes[0].Arrivals, r.Classes[1].Arrivals
	// 20 shoppers make 2 queries per purchase (about 1200 in 3 min); 10, 40
	// then 10 browsers each query every 2 s for a minute (1800).
	if buy < 1000 || query < 2*buy+1500 || !r.Little.OK() {
		t.Errorf("%d queries, %d purchases; little %+v", query, buy, r.Little)
	}
	for _, err := range []error{sc.SetLoad(0.5), sc.SetArrivals(workload.ProcessSpec{Kind: "poisson", Rate: 10})} {
		if err == nil || !strings.Contains(err.Error(), "sources[0] (shoppers) has closed-loop users") {
			t.Errorf("override of closed-loop users: %v", err)
		}
	}
}

// TestBase checks a scenario built on another file: the file's top-level
// fields replace the base's, the others are the base's.
func TestBase(t *testing.T) {
	sc, err := Load("testdata/good/based.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base, err := Load("testdata/good/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "based" || sc.Base != "minimal.yaml" || !reflect.DeepEqual(sc.Services, base.Services) ||
		!reflect.DeepEqual(sc.Classes, base.Classes) || len(sc.Sources) != 1 || sc.Sources[0].Users.Count != 5 {
		t.Errorf("based on minimal: %+v", sc)
	}
}
