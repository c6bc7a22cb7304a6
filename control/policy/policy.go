// Package policy is Shoal's one registry of policies: every request
// selector, autoscaler, route, serverless configuration and edge scheduler
// registers here once, with its kind, its parameters (default, unit,
// range), where it runs and a line on what it is and where it comes from.
// A policy name is parsed here and nowhere else:
//
//	hpa                         a policy with its defaults
//	hpa:target=45               a parameter (several: hpa:target=45:tolerance=0.05)
//	hpa:target=30..90/15        a range, expanded to one policy per setting (Expand)
//	hpa+vpa                     autoscalers that run together
//	drpc:file=P, drpc:P         a learned policy and its file
//	spread:0.3                  a policy's shorthand for its one parameter
//
// The subsystems build what a Spec names (control/lb the selectors,
// scenario the autoscalers, control/multicloud the routes, ...): they read
// its parameters, already checked against their ranges.
package policy

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is what a policy decides.
type Kind string

// The kinds, in the order listings show them.
const (
	Selector   Kind = "request selector"
	Autoscaler Kind = "autoscaler"
	Route      Kind = "route"
	Serverless Kind = "serverless configuration"
	Edge       Kind = "edge scheduler"
)

// Kinds lists the kinds in order.
func Kinds() []Kind { return []Kind{Selector, Autoscaler, Route, Serverless, Edge} }

// Where says where a policy runs.
type Where uint8

// Places a policy runs.
const (
	Sim       Where = 1 << iota // shoal sim and the experiments
	Proxy                       // shoal proxy
	Operator                    // shoal operator
	EdgeWorld                   // shoal edge evaluate
)

func (w Where) String() string {
	var s []string
	for _, p := range []struct {
		w    Where
		name string
	}{{Sim, "sim"}, {Proxy, "proxy"}, {Operator, "operator"}, {EdgeWorld, "edge"}} {
		if w&p.w != 0 {
			s = append(s, p.name)
		}
	}
	return strings.Join(s, ", ")
}

// Param is one parameter of a policy. Values are numbers in Unit; a
// duration (Unit "s") may also be written as one ("300ms").
type Param struct {
	Name     string
	Default  string // as a user would write it; "" when the scenario's setting applies
	Unit     string // "s", "%", "req/s", ... ("" for a plain number)
	Min, Max float64
	Above    bool // Min itself is out of range
	Integer  bool
	Required bool // the policy cannot run without it
	Doc      string
}

// Range describes the values a parameter takes, for errors and listings.
func (p Param) Range() string {
	what := "a number"
	if p.Integer {
		what = "an integer"
	}
	unit := ""
	if p.Unit != "" {
		unit = " " + p.Unit
	}
	lo, op := "[", ">="
	if p.Above {
		lo, op = "(", ">"
	}
	if math.IsInf(p.Max, 1) {
		return fmt.Sprintf("%s %s %g%s", what, op, p.Min, unit)
	}
	return fmt.Sprintf("%s in %s%g, %g]%s", what, lo, p.Min, p.Max, unit)
}

// File says whether a policy runs a trained file.
type File uint8

// Whether a policy takes a file.
const (
	NoFile       File = iota
	NeedsFile         // drpc:FILE
	OptionalFile      // distr-lb-general: the policy Shoal ships, or a FILE
)

// Policy is one registered policy.
type Policy struct {
	Name   string
	Kind   Kind
	Params []Param
	// Short is the parameter that NAME:VALUE sets (spread:0.3).
	Short  string
	File   File
	Runs   Where
	Bound  bool   // not deployable: a bound for comparison (the oracle)
	Doc    string // one line: what it does
	Source string // where it comes from: a paper's section, an upstream file
}

// Param returns the policy's parameter of the given name.
func (p *Policy) Param(name string) (Param, bool) {
	i := slices.IndexFunc(p.Params, func(q Param) bool { return q.Name == name })
	if i < 0 {
		return Param{}, false
	}
	return p.Params[i], true
}

func (p *Policy) paramNames() string {
	names := make([]string, len(p.Params))
	for i, q := range p.Params {
		names[i] = q.Name
	}
	return strings.Join(names, ", ")
}

// All is every registered policy, by kind then in registration order.
func All() []Policy {
	out := slices.Clone(registry)
	slices.SortStableFunc(out, func(a, b Policy) int {
		return slices.Index(Kinds(), a.Kind) - slices.Index(Kinds(), b.Kind)
	})
	return out
}

// Lookup returns the registered policy of that name.
func Lookup(name string) (*Policy, bool) {
	i := slices.IndexFunc(registry, func(p Policy) bool { return p.Name == name })
	if i < 0 {
		return nil, false
	}
	return &registry[i], true
}

// Names are the registered policies of a kind (all kinds when none is given).
func Names(kinds ...Kind) []string {
	var out []string
	for _, p := range All() {
		if len(kinds) == 0 || slices.Contains(kinds, p.Kind) {
			out = append(out, p.Name)
		}
	}
	return out
}

// Value is one parameter's setting.
type Value struct {
	Name string
	Text string  // as given ("300ms")
	Num  float64 // in the parameter's unit (seconds for a duration)
}

// Spec is a parsed policy name: a registered policy with parameter
// settings and, for a learned one, its file; or autoscalers run together.
type Spec struct {
	Policy *Policy
	Values []Value // in the order given
	File   string
	// Parts are the autoscalers of hpa+vpa (Policy is then nil).
	Parts []Spec
}

// Get returns the setting of a parameter; ok is false when it is not set.
func (s Spec) Get(name string) (v float64, ok bool) {
	for _, x := range s.Values {
		if x.Name == name {
			return x.Num, true
		}
	}
	return 0, false
}

// Params are the settings by name, in the parameters' units.
func (s Spec) Params() map[string]float64 {
	m := make(map[string]float64, len(s.Values))
	for _, v := range s.Values {
		m[v.Name] = v.Num
	}
	return m
}

// Members are the policies that run together: the parts of hpa+vpa, or
// the spec itself.
func (s Spec) Members() []Spec {
	if s.Policy == nil {
		return s.Parts
	}
	return []Spec{s}
}

// Kind is what the spec's policy decides.
func (s Spec) Kind() Kind {
	if s.Policy == nil {
		return Autoscaler
	}
	return s.Policy.Kind
}

// Name is the registered name (hpa+vpa for a combination).
func (s Spec) Name() string { return s.joined(func(p Spec) string { return p.Policy.Name }) }

// String is the spec as a result's name: the policy and its settings,
// without the file, so two settings of one knob are two rows.
func (s Spec) String() string {
	return s.joined(func(p Spec) string {
		var b strings.Builder
		b.WriteString(p.Policy.Name)
		for _, v := range p.Values {
			b.WriteString(":" + v.Name + "=" + v.Text)
		}
		return b.String()
	})
}

// joined is f of each member, joined with +.
func (s Spec) joined(f func(Spec) string) string {
	var parts []string
	for _, p := range s.Members() {
		parts = append(parts, f(p))
	}
	return strings.Join(parts, "+")
}

// ErrUnknown is Parse's error for a name no policy registered.
var ErrUnknown = errors.New("policy: unknown policy")

// Parse reads a policy name (see the package comment).
func Parse(name string) (Spec, error) {
	if name == "" {
		return Spec{}, errors.New("policy: empty name")
	}
	if parts := splitCombination(name); len(parts) > 1 {
		s := Spec{}
		for _, part := range parts {
			p, err := parseOne(part)
			if err != nil {
				return Spec{}, err
			}
			if p.Policy.Kind != Autoscaler {
				return Spec{}, fmt.Errorf("policy %s: only autoscalers run together (%s is a %s)", name, p.Policy.Name, p.Policy.Kind)
			}
			s.Parts = append(s.Parts, p)
		}
		return s, nil
	}
	return parseOne(name)
}

// splitCombination cuts hpa:target=45+vpa at each + that a registered name
// follows; distr-lb+probing, one name, stays whole.
func splitCombination(name string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(name); i++ {
		if name[i] != '+' {
			continue
		}
		next := name[i+1:]
		if j := strings.IndexAny(next, ":+"); j >= 0 {
			next = next[:j]
		}
		if _, ok := Lookup(next); ok {
			parts = append(parts, name[start:i])
			start = i + 1
		}
	}
	return append(parts, name[start:])
}

func parseOne(name string) (Spec, error) {
	head, rest, hasRest := strings.Cut(name, ":")
	p, ok := Lookup(head)
	if !ok {
		return Spec{}, fmt.Errorf("%w %q (%s)", ErrUnknown, head, known())
	}
	s := Spec{Policy: p}
	if !hasRest {
		if p.File == NeedsFile {
			return Spec{}, fmt.Errorf("policy %s: needs a trained file (%s:FILE)", p.Name, p.Name)
		}
		return s, s.required()
	}
	// NAME:FILE and NAME:VALUE (the short parameter) have no '='.
	if !strings.Contains(rest, "=") {
		switch {
		case p.File != NoFile:
			s.File = rest
			return s, nil
		case p.Short != "":
			rest = p.Short + "=" + rest
		default:
			return Spec{}, fmt.Errorf("policy %s: %q is not NAME=VALUE (parameters: %s)", p.Name, rest, paramList(p))
		}
	}
	for _, kv := range strings.Split(rest, ":") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return Spec{}, fmt.Errorf("policy %s: %q is not NAME=VALUE", p.Name, kv)
		}
		if k == "file" && p.File != NoFile {
			s.File = v
			continue
		}
		if slices.ContainsFunc(s.Values, func(x Value) bool { return x.Name == k }) {
			return Spec{}, fmt.Errorf("policy %s: parameter %s set twice", p.Name, k)
		}
		val, err := p.value(k, v)
		if err != nil {
			return Spec{}, err
		}
		s.Values = append(s.Values, val)
	}
	if p.File == NeedsFile && s.File == "" {
		return Spec{}, fmt.Errorf("policy %s: needs a trained file (%s:file=FILE)", p.Name, p.Name)
	}
	return s, s.required()
}

// required names the first required parameter the spec leaves unset.
func (s Spec) required() error {
	for _, q := range s.Policy.Params {
		if _, set := s.Get(q.Name); q.Required && !set {
			return fmt.Errorf("policy %s: needs parameter %s, %s (%s:%s=VALUE)", s.Policy.Name, q.Name, q.Range(), s.Policy.Name, q.Name)
		}
	}
	return nil
}

// value checks one parameter's setting against its range.
func (p *Policy) value(name, text string) (Value, error) {
	q, ok := p.Param(name)
	if !ok {
		if len(p.Params) == 0 {
			return Value{}, fmt.Errorf("policy %s: unknown parameter %s (it has none)", p.Name, name)
		}
		return Value{}, fmt.Errorf("policy %s: unknown parameter %s (parameters: %s)", p.Name, name, p.paramNames())
	}
	x, err := strconv.ParseFloat(text, 64)
	if err != nil && q.Unit == "s" {
		var d time.Duration
		if d, err = time.ParseDuration(text); err == nil {
			x = d.Seconds()
		}
	}
	if err != nil || !q.holds(x) {
		return Value{}, fmt.Errorf("policy %s: parameter %s must be %s, got %q", p.Name, name, q.Range(), text)
	}
	return Value{Name: name, Text: text, Num: x}, nil
}

func (q Param) holds(x float64) bool {
	return !math.IsNaN(x) && x >= q.Min && x <= q.Max && !(q.Above && x == q.Min) && (!q.Integer || x == math.Trunc(x))
}

// Check checks parameter values given as numbers (a proxy file's params)
// against the policy's parameters: an error names each unknown one and
// each out of range.
func (p *Policy) Check(params map[string]float64) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(params)) {
		q, ok := p.Param(name)
		switch {
		case !ok && len(p.Params) == 0:
			errs = append(errs, fmt.Errorf("policy %s: unknown parameter %s (it has none)", p.Name, name))
		case !ok:
			errs = append(errs, fmt.Errorf("policy %s: unknown parameter %s (parameters: %s)", p.Name, name, p.paramNames()))
		case !q.holds(params[name]):
			errs = append(errs, fmt.Errorf("policy %s: parameter %s must be %s, got %g", p.Name, name, q.Range(), params[name]))
		}
	}
	return errors.Join(errs...)
}

func paramList(p *Policy) string {
	if len(p.Params) == 0 {
		return "none"
	}
	return p.paramNames()
}

func known() string {
	var s []string
	for _, k := range Kinds() {
		if n := Names(k); len(n) > 0 {
			s = append(s, string(k)+"s: "+strings.Join(n, ", "))
		}
	}
	return strings.Join(s, "; ")
}
