package lb

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/shoal-project/shoal/control/policy"
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

// params reads Params, already checked against the policy registry's
// ranges, into a selector's fields.
type params struct{ p Params }

// get stores the parameter name in dst if it is set.
func get[T int | uint64 | float64 | bool | time.Duration](r *params, name string, dst *T) {
	x, set := r.p[name]
	if !set {
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

// build returns sel once d's parameters, checked against the policy
// registry's entry for name (control/policy), are read into it by read.
func build[S Selector](name string, d Deps, sel S, read func(r *params)) (Selector, error) {
	p, ok := policy.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("selector %s is not in the policy registry", name)
	}
	if err := p.Check(d.Params); err != nil {
		return nil, err
	}
	if read != nil {
		read(&params{d.Params})
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
		"ecmp": func(d Deps) (Selector, error) { return build("ecmp", d, &ECMP{Rand: d.Rand}, nil) },
		"wcmp": func(d Deps) (Selector, error) { return build("wcmp", d, &WCMP{Rand: d.Rand}, nil) },
		"lsq":  func(d Deps) (Selector, error) { return build("lsq", d, &LSQ{Rand: d.Rand}, nil) },
		"sed":  func(d Deps) (Selector, error) { return build("sed", d, &SED{Rand: d.Rand}, nil) },
		"p2c":  func(d Deps) (Selector, error) { return build("p2c", d, &P2C{Rand: d.Rand}, nil) },
		"rr":   func(d Deps) (Selector, error) { return build("rr", d, &RoundRobin{}, nil) },
		"wrr":  func(d Deps) (Selector, error) { return build("wrr", d, &WeightedRoundRobin{}, nil) },
		// Production balancers: Envoy's LEAST_REQUEST with its defaults,
		// and Linkerd's Peak-EWMA power of two choices.
		"least-request": func(d Deps) (Selector, error) {
			s := &LeastRequest{Rand: d.Rand}
			return build("least-request", d, s, func(r *params) {
				get(r, "choice_count", &s.ChoiceCount)
				get(r, "active_request_bias", &s.ActiveRequestBias)
				_, s.Biased = d.Params["active_request_bias"]
			})
		},
		"peak-ewma": func(d Deps) (Selector, error) {
			s := &PeakEWMA{Rand: d.Rand}
			return build("peak-ewma", d, s, func(r *params) {
				get(r, "default_rtt", &s.DefaultRTT)
				get(r, "decay", &s.Decay)
			})
		},
		// Google's Prequal: probes of requests in flight and latency.
		"prequal": func(d Deps) (Selector, error) {
			s := &Prequal{Rand: d.Rand}
			return build("prequal", d, s, func(r *params) {
				get(r, "qrif", &s.QRIF)
				get(r, "pool_size", &s.PoolSize)
				get(r, "probe_rate", &s.ProbeRate)
				get(r, "remove_rate", &s.RemoveRate)
				get(r, "delta", &s.Delta)
				get(r, "max_age", &s.MaxAge)
			})
		},
		// C3: replica ranking by a cubic of the reported queue, with
		// per-server rate control (absim's defaults).
		"c3": func(d Deps) (Selector, error) {
			s := &C3{Rand: d.Rand}
			return build("c3", d, s, func(r *params) {
				get(r, "clients", &s.Clients)
				get(r, "rate_interval", &s.RateInterval)
				get(r, "max_tokens", &s.MaxTokens)
				get(r, "hysteresis", &s.Hysteresis)
				get(r, "no_rate_control", &s.NoRateControl)
			})
		},
		// Shoal's hybrid: Prequal's probes, SED's weights.
		"probing-sed": func(d Deps) (Selector, error) {
			s := &ProbingSED{Rand: d.Rand}
			return build("probing-sed", d, s, func(r *params) {
				get(r, "probe_rate", &s.ProbeRate)
				get(r, "max_age", &s.MaxAge)
				get(r, "quiet", &s.Quiet)
				if q, set := d.Params["quiet"]; set && q == 0 {
					s.Quiet = -1
				}
			})
		},
		// Envoy's consistent hashing, for affinity.
		"ring-hash": func(d Deps) (Selector, error) {
			s := &RingHash{}
			return build("ring-hash", d, s, func(r *params) {
				get(r, "minimum_ring_size", &s.MinRingSize)
				get(r, "maximum_ring_size", &s.MaxRingSize)
			})
		},
		"maglev": func(d Deps) (Selector, error) {
			s := &Maglev{}
			return build("maglev", d, s, func(r *params) {
				get(r, "table_size", &s.TableSize)
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
			return build("oracle", d, &Oracle{Est: d.Est, Rand: d.Rand}, nil)
		},
	}
}

// Runs is the registry's selectors that run at w (control/policy):
// policy.Proxy leaves out the oracle, which needs the simulator's
// knowledge.
func (r Registry) Runs(w policy.Where) Registry {
	out := Registry{}
	for name, f := range r {
		if p, ok := policy.Lookup(name); ok && p.Runs&w != 0 {
			out[name] = f
		}
	}
	return out
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
func IsBound(name string) bool {
	p, ok := policy.Lookup(name)
	return ok && p.Bound
}
