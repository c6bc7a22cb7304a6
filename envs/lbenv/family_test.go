package lbenv

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/learn/rl"
)

// The family's worlds decode as scenarios inside its ranges, the same for a
// seed, varied across draws (each demand kind, equal speeds, drift,
// slowdowns and bursts all appear in 40), each holds about the requests
// asked for, and each is an environment the learners can step.
func TestFamilyDraws(t *testing.T) {
	f := DefaultFamily()
	draw := func(seed uint64) []string {
		rng := rand.New(rand.NewPCG(seed, 0))
		var out []string
		for i := range 40 {
			sc, err := f.Draw(rng, i)
			if err != nil {
				t.Fatalf("world %d: %v", i, err)
			}
			web := sc.Services[0]
			if n := len(web.Instances); n < f.Servers[0] || n > f.Servers[1] {
				t.Errorf("world %d: %d servers", i, n)
			}
			for _, in := range web.Instances {
				if in.CPU < float64(f.Cores[0]) || in.CPU > float64(f.Cores[1]) || in.Speed < f.Speed[0] || in.Speed > f.Speed[1] {
					t.Errorf("world %d: server %+v out of range", i, in)
				}
			}
			c, err := sc.Capacity()
			if err != nil {
				t.Fatalf("world %d: %v", i, err)
			}
			if n := sc.Load * c * sc.Horizon.Seconds(); n < 0.99*float64(f.Requests) || n > 1.01*float64(f.Requests) {
				t.Errorf("world %d: %.0f requests over the horizon, want %d", i, n, f.Requests)
			}
			if n := len(sc.LBs); n < f.LBs[0] || n > f.LBs[1] || sc.Load < f.Load[0] || sc.Load > f.Load[1] {
				t.Errorf("world %d: %d LBs, load %v", i, n, sc.Load)
			}
			kind := sc.Classes[0].Call.CPU.Dist
			if speeds := web.Instances; len(speeds) > 1 && speeds[0].Speed == speeds[1].Speed {
				kind += "+equal"
			}
			if sc.RandomChanges != nil {
				kind += "+drift"
			}
			if len(sc.Changes) > 0 {
				kind += "+slowdown"
			}
			kind += "+" + sc.Sources[0].Arrivals.Kind
			out = append(out, kind)
			if i < 3 {
				env, err := New(sc, Config{EpisodeSteps: 5})
				if err != nil {
					t.Fatalf("world %d: %v", i, err)
				}
				if err := rl.CheckMultiEnv(env, rl.CheckOptions{Seed: 1, Episodes: 1}); err != nil {
					t.Fatalf("world %d: %v", i, err)
				}
			}
		}
		return out
	}
	a := draw(7)
	if b := draw(7); !reflect.DeepEqual(a, b) {
		t.Fatal("two draws of seed 7 differ")
	}
	seen := map[string]bool{}
	for _, k := range a {
		for _, part := range []string{"exp", "lognormal", "empirical", "equal", "drift", "slowdown", "mmpp"} {
			if strings.Contains(k, part) {
				seen[part] = true
			}
		}
	}
	if len(seen) != 7 {
		t.Errorf("40 worlds show only %v: %v", seen, a)
	}
	// With an I/O share, worlds split their demand between CPU and I/O
	// phases, and their horizon still holds the requests asked for.
	io := DefaultFamily()
	io.IO = 1
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 10 {
		sc, err := io.Draw(rng, i)
		if err != nil {
			t.Fatal(err)
		}
		c, err := sc.Capacity()
		if err != nil {
			t.Fatal(err)
		}
		call := sc.Classes[0].Call
		if call.IO.Mean <= 0 || call.Phases != 2 || sc.Services[0].IOParallelism != 1 {
			t.Errorf("world %d: I/O %+v in %d phases, I/O parallelism %d", i, call.IO, call.Phases, sc.Services[0].IOParallelism)
		}
		if n := sc.Load * c * sc.Horizon.Seconds(); n < 0.99*float64(io.Requests) || n > 1.01*float64(io.Requests) {
			t.Errorf("I/O world %d: %.0f requests over the horizon, want %d", i, n, io.Requests)
		}
	}
	bad := DefaultFamily()
	bad.Load[1] = 1.2
	if _, err := bad.Draw(rand.New(rand.NewPCG(1, 1)), 0); err == nil {
		t.Error("a load range beyond 1 was accepted")
	}
}
