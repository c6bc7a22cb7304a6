package lb

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Deps is what a selector factory may use: its own random stream, an
// Estimator where the LB point can offer perfect knowledge (simulation
// only), and the selector's parameters.
type Deps struct {
	Rand   *rand.Rand
	Est    Estimator
	Params Params
}

// Params are a selector's parameters by name, durations in seconds (e.g.
// prequal's qrif and max_age). A factory rejects a name it does not know
// and a value out of range, naming it.
type Params map[string]float64

// params reads Params into a selector's fields and remembers what it read.
type params struct {
	p    Params
	used map[string]bool
	errs []string
}

// get stores the parameter name in dst if it is set, checking ok(value).
func get[T int | uint64 | float64 | bool | time.Duration](r *params, name string, dst *T, ok func(float64) bool, want string) {
	x, set := r.p[name]
	if r.used == nil {
		r.used = map[string]bool{}
	}
	r.used[name] = true
	if !set {
		return
	}
	if !ok(x) {
		r.errs = append(r.errs, fmt.Sprintf("%s: must be %s, got %g", name, want, x))
		return
	}
	switch d := any(dst).(type) {
	case *int:
		*d = int(x)
	case *uint64:
		*d = uint64(x)
	case *float64:
		*d = x
	case *bool:
		*d = x != 0
	case *time.Duration:
		*d = time.Duration(x * float64(time.Second))
	}
}

// done reports the values out of range and the names nothing read.
func (r *params) done() error {
	for _, name := range slices.Sorted(maps.Keys(r.p)) {
		if !r.used[name] {
			known := slices.Sorted(maps.Keys(r.used))
			if len(known) == 0 {
				r.errs = append(r.errs, fmt.Sprintf("%s: unknown parameter (this selector has none)", name))
			} else {
				r.errs = append(r.errs, fmt.Sprintf("%s: unknown parameter (known: %s)", name, strings.Join(known, ", ")))
			}
		}
	}
	if len(r.errs) > 0 {
		return errors.New(strings.Join(r.errs, "; "))
	}
	return nil
}

func positive(x float64) bool    { return x > 0 }
func nonNegative(x float64) bool { return x >= 0 }
func fraction(x float64) bool    { return x >= 0 && x <= 1 }
func atLeast(n float64) func(float64) bool {
	return func(x float64) bool { return x >= n && x == math.Trunc(x) }
}

// build returns sel once d's parameters are read into it by read.
func build[S Selector](d Deps, sel S, read func(r *params)) (Selector, error) {
	r := &params{p: d.Params}
	if read != nil {
		read(r)
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	if v, ok := any(sel).(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return nil, err
		}
	}
	return sel, nil
}

// Factory builds a fresh selector for one LB point.
type Factory func(d Deps) (Selector, error)

// Registry maps policy names to factories. Build one with Classical and add
// to it; there is no global registry.
type Registry map[string]Factory

// Classical returns a new registry of the built-in selectors: ecmp, wcmp,
// lsq, sed, p2c, rr, wrr, least-request (Envoy), peak-ewma (Linkerd),
// prequal (Google), c3 (Suresh et al.), ring-hash and maglev (Envoy),
// Shoal's probing-sed and the general Distr-LB policy it ships, and the
// oracle.
func Classical() Registry {
	return Registry{
		"ecmp": func(d Deps) (Selector, error) { return build(d, &ECMP{Rand: d.Rand}, nil) },
		"wcmp": func(d Deps) (Selector, error) { return build(d, &WCMP{Rand: d.Rand}, nil) },
		"lsq":  func(d Deps) (Selector, error) { return build(d, &LSQ{Rand: d.Rand}, nil) },
		"sed":  func(d Deps) (Selector, error) { return build(d, &SED{Rand: d.Rand}, nil) },
		"p2c":  func(d Deps) (Selector, error) { return build(d, &P2C{Rand: d.Rand}, nil) },
		"rr":   func(d Deps) (Selector, error) { return build(d, &RoundRobin{}, nil) },
		"wrr":  func(d Deps) (Selector, error) { return build(d, &WeightedRoundRobin{}, nil) },
		// Production balancers: Envoy's LEAST_REQUEST with its defaults,
		// and Linkerd's Peak-EWMA power of two choices.
		"least-request": func(d Deps) (Selector, error) {
			s := &LeastRequest{Rand: d.Rand}
			return build(d, s, func(r *params) {
				get(r, "choice_count", &s.ChoiceCount, atLeast(2), "an integer >= 2")
				get(r, "active_request_bias", &s.ActiveRequestBias, nonNegative, ">= 0")
				_, s.Biased = d.Params["active_request_bias"]
			})
		},
		"peak-ewma": func(d Deps) (Selector, error) {
			s := &PeakEWMA{Rand: d.Rand}
			return build(d, s, func(r *params) {
				get(r, "default_rtt", &s.DefaultRTT, positive, "> 0 (seconds)")
				get(r, "decay", &s.Decay, positive, "> 0 (seconds)")
			})
		},
		// Google's Prequal: probes of requests in flight and latency.
		"prequal": func(d Deps) (Selector, error) {
			s := &Prequal{Rand: d.Rand}
			return build(d, s, func(r *params) {
				get(r, "qrif", &s.QRIF, fraction, "in [0, 1]")
				get(r, "pool_size", &s.PoolSize, atLeast(1), "an integer >= 1")
				get(r, "probe_rate", &s.ProbeRate, positive, "> 0")
				get(r, "remove_rate", &s.RemoveRate, positive, "> 0")
				get(r, "delta", &s.Delta, positive, "> 0")
				get(r, "max_age", &s.MaxAge, positive, "> 0 (seconds)")
			})
		},
		// C3: replica ranking by a cubic of the reported queue, with
		// per-server rate control (absim's defaults).
		"c3": func(d Deps) (Selector, error) {
			s := &C3{Rand: d.Rand}
			return build(d, s, func(r *params) {
				get(r, "clients", &s.Clients, atLeast(1), "an integer >= 1")
				get(r, "rate_interval", &s.RateInterval, positive, "> 0 (seconds)")
				get(r, "max_tokens", &s.MaxTokens, positive, "> 0")
				get(r, "hysteresis", &s.Hysteresis, positive, "> 0")
				get(r, "no_rate_control", &s.NoRateControl, fraction, "0 or 1")
			})
		},
		// Shoal's hybrid: Prequal's probes, SED's weights.
		"probing-sed": func(d Deps) (Selector, error) {
			s := &ProbingSED{Rand: d.Rand}
			return build(d, s, func(r *params) {
				get(r, "probe_rate", &s.ProbeRate, positive, "> 0")
				get(r, "max_age", &s.MaxAge, positive, "> 0 (seconds)")
				get(r, "quiet", &s.Quiet, func(x float64) bool { return x >= 0 }, ">= 0 (seconds; 0: probe every draw)")
				if q, set := d.Params["quiet"]; set && q == 0 {
					s.Quiet = -1
				}
			})
		},
		// Envoy's consistent hashing, for affinity.
		"ring-hash": func(d Deps) (Selector, error) {
			s := &RingHash{}
			return build(d, s, func(r *params) {
				get(r, "minimum_ring_size", &s.MinRingSize, atLeast(1), "an integer >= 1")
				get(r, "maximum_ring_size", &s.MaxRingSize, atLeast(1), "an integer >= 1")
			})
		},
		"maglev": func(d Deps) (Selector, error) {
			s := &Maglev{}
			return build(d, s, func(r *params) {
				get(r, "table_size", &s.TableSize, atLeast(2), "a prime")
			})
		},
		// The general Distr-LB policy Shoal ships: probing-sed with learned
		// corrections of its weights (GeneralPolicy).
		GeneralName: func(d Deps) (Selector, error) {
			p, err := DefaultGeneral()
			if err != nil {
				return nil, err
			}
			return p.Selector(d)
		},
		"oracle": func(d Deps) (Selector, error) {
			if d.Est == nil {
				return nil, fmt.Errorf("oracle needs perfect knowledge of the servers, which only the simulator has")
			}
			return build(d, &Oracle{Est: d.Est, Rand: d.Rand}, nil)
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

// IsClassical reports whether name is one of the hand-written selectors
// (every selector of Classical but the learned general policy and the
// simulator-only Oracle).
func IsClassical(name string) bool {
	_, ok := Classical()[name]
	return ok && name != GeneralName && !IsBound(name)
}

// IsBound reports whether name is a bound rather than a policy: a selector
// that needs knowledge no data plane has (the Oracle's remaining work of
// every server), so it shows how far a deployable policy is from the best
// possible, and cannot be deployed itself.
func IsBound(name string) bool { return name == "oracle" }
