package lb

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Deps is what a selector factory may use: its own random stream, and an
// Estimator where the LB point can offer perfect knowledge (simulation only).
type Deps struct {
	Rand *rand.Rand
	Est  Estimator
}

// Factory builds a fresh selector for one LB point.
type Factory func(d Deps) (Selector, error)

// Registry maps policy names to factories. Build one with Classical and add
// to it; there is no global registry.
type Registry map[string]Factory

// Classical returns a new registry of the classical selectors: ecmp, wcmp,
// lsq, sed, p2c, rr, wrr, least-request (Envoy), peak-ewma (Linkerd),
// prequal (Google), c3 (Suresh et al.), ring-hash and maglev (Envoy) and
// oracle.
func Classical() Registry {
	return Registry{
		"ecmp": func(d Deps) (Selector, error) { return &ECMP{Rand: d.Rand}, nil },
		"wcmp": func(d Deps) (Selector, error) { return &WCMP{Rand: d.Rand}, nil },
		"lsq":  func(d Deps) (Selector, error) { return &LSQ{Rand: d.Rand}, nil },
		"sed":  func(d Deps) (Selector, error) { return &SED{Rand: d.Rand}, nil },
		"p2c":  func(d Deps) (Selector, error) { return &P2C{Rand: d.Rand}, nil },
		"rr":   func(d Deps) (Selector, error) { return &RoundRobin{}, nil },
		// Production balancers: Envoy's LEAST_REQUEST with its defaults,
		// and Linkerd's Peak-EWMA power of two choices.
		"least-request": func(d Deps) (Selector, error) { return &LeastRequest{Rand: d.Rand}, nil },
		"peak-ewma":     func(d Deps) (Selector, error) { return &PeakEWMA{Rand: d.Rand}, nil },
		// Google's Prequal: probes of requests in flight and latency.
		"prequal": func(d Deps) (Selector, error) { return &Prequal{Rand: d.Rand}, nil },
		// C3: replica ranking by a cubic of the reported queue, with
		// per-server rate control (absim's defaults).
		"c3": func(d Deps) (Selector, error) { return &C3{Rand: d.Rand}, nil },
		// Shoal's hybrid: Prequal's probes, SED's weights.
		"probing-sed": func(d Deps) (Selector, error) { return &ProbingSED{Rand: d.Rand}, nil },
		// Envoy's consistent hashing, for affinity.
		"ring-hash": func(d Deps) (Selector, error) { return &RingHash{}, nil },
		"maglev":    func(d Deps) (Selector, error) { return &Maglev{}, nil },
		"wrr":       func(d Deps) (Selector, error) { return &WeightedRoundRobin{}, nil },
		"oracle": func(d Deps) (Selector, error) {
			if d.Est == nil {
				return nil, fmt.Errorf("oracle needs perfect knowledge of the servers, which only the simulator has")
			}
			return &Oracle{Est: d.Est, Rand: d.Rand}, nil
		},
	}
}

// Hashing reports whether the selector called name routes on Request.Key.
func Hashing(name string) bool { return name == "ring-hash" || name == "maglev" }

// Names lists the registry's policy names, sorted.
func (r Registry) Names() []string {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// New builds the selector called name.
func (r Registry) New(name string, d Deps) (Selector, error) {
	f, ok := r[name]
	if !ok {
		return nil, fmt.Errorf("unknown selector %q (known: %s)", name, strings.Join(r.Names(), ", "))
	}
	return f(d)
}

// IsClassical reports whether name is one of the classical selectors that
// production load balancers use (every selector of Classical but the
// simulator-only Oracle).
func IsClassical(name string) bool {
	_, ok := Classical()[name]
	return ok && name != "oracle"
}
