package lb

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/policy"
)

// TestParams: a selector's parameters reach its fields; unknown names,
// values out of range and settings upstream rejects are errors that name
// them.
func TestParams(t *testing.T) {
	reg := Classical()
	rng := rand.New(rand.NewPCG(1, 1))
	s, err := reg.New("prequal", Deps{Rand: rng, Params: Params{"qrif": 0.9, "pool_size": 8, "max_age": 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	if p := s.(*Prequal); p.QRIF != 0.9 || p.PoolSize != 8 || p.MaxAge != 500*time.Millisecond {
		t.Errorf("prequal built with %+v", p)
	}
	s, err = reg.New("least-request", Deps{Rand: rng, Params: Params{"active_request_bias": 0}})
	if lr := s.(*LeastRequest); err != nil || !lr.Biased || lr.ActiveRequestBias != 0 {
		t.Errorf("least-request built with %+v (%v)", lr, err)
	}
	for _, c := range []struct {
		name   string
		params Params
		want   string
	}{
		{"prequal", Params{"qrf": 0.9}, "policy prequal: unknown parameter qrf (parameters: qrif, pool_size, probe_rate, remove_rate, delta, max_age)"},
		{"c3", Params{"clients": 0}, "policy c3: parameter clients must be an integer >= 1, got 0"},
		{"prequal", Params{"qrif": 1.5}, "policy prequal: parameter qrif must be a number in [0, 1], got 1.5"},
		{"prequal", Params{"pool_size": 2.5}, "policy prequal: parameter pool_size must be an integer >= 1, got 2.5"},
		{"sed", Params{"x": 1}, "policy sed: unknown parameter x (it has none)"},
		{"maglev", Params{"table_size": 100}, "table_size: 100 is not a prime number"},
		{"ring-hash", Params{"minimum_ring_size": 20, "maximum_ring_size": 10}, "minimum_ring_size (20) > maximum_ring_size (10)"},
	} {
		if _, err := reg.New(c.name, Deps{Rand: rng, Params: c.params}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: error %v, want %q", c.name, c.params, err, c.want)
		}
	}
}

// Classical builds exactly the registry's selectors that need no file
// (control/policy), and the registry marks the oracle as a bound.
func TestClassicalIsTheRegistrysSelectors(t *testing.T) {
	var want []string
	for _, p := range policy.All() {
		if p.Kind == policy.Selector && p.File != policy.NeedsFile {
			want = append(want, p.Name)
		}
	}
	slices.Sort(want)
	if got := Classical().Names(); !slices.Equal(got, want) {
		t.Errorf("Classical builds %v; the registry's selectors without a file are %v", got, want)
	}
	if !IsBound("oracle") || IsBound("prequal") {
		t.Error("the oracle is a bound, prequal is not")
	}
}
