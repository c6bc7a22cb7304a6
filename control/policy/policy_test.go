package policy

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in, name, str, file string
		params              map[string]float64
	}{
		{in: "hpa", name: "hpa", str: "hpa"},
		{in: "hpa:target=45", name: "hpa", str: "hpa:target=45", params: map[string]float64{"target": 45}},
		{in: "hpa:target=45:tolerance=0.05", name: "hpa", str: "hpa:target=45:tolerance=0.05", params: map[string]float64{"target": 45, "tolerance": 0.05}},
		{in: "spread:0.3", name: "spread", str: "spread:away=0.3", params: map[string]float64{"away": 0.3}},
		{in: "spread:away=0.3", name: "spread", str: "spread:away=0.3", params: map[string]float64{"away": 0.3}},
		{in: "probing-sed:quiet=300ms", name: "probing-sed", str: "probing-sed:quiet=300ms", params: map[string]float64{"quiet": 0.3}},
		{in: "prequal:qrif=0.8", name: "prequal", str: "prequal:qrif=0.8", params: map[string]float64{"qrif": 0.8}},
		{in: "drpc:out/a.policy", name: "drpc", str: "drpc", file: "out/a.policy"},
		{in: "drpc:file=out/a.policy", name: "drpc", str: "drpc", file: "out/a.policy"},
		{in: "distr-lb+probing:x.slb", name: "distr-lb+probing", str: "distr-lb+probing", file: "x.slb"},
		{in: "distr-lb-general", name: "distr-lb-general", str: "distr-lb-general"},
		{in: "hpa+vpa", name: "hpa+vpa", str: "hpa+vpa"},
		{in: "hpa:target=45+vpa", name: "hpa+vpa", str: "hpa:target=45+vpa"},
	} {
		s, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if s.Name() != c.name || s.String() != c.str || s.File != c.file {
			t.Errorf("Parse(%q): name %q, string %q, file %q; want %q, %q, %q", c.in, s.Name(), s.String(), s.File, c.name, c.str, c.file)
		}
		for k, v := range c.params {
			if got, ok := s.Get(k); !ok || got != v {
				t.Errorf("Parse(%q): %s = %v (set %v), want %v", c.in, k, got, ok, v)
			}
		}
	}
}

// A wrong name or parameter is an error naming the policy, the parameter
// and what it accepts.
func TestParseErrorsNameTheParameter(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"hpaa", `unknown policy "hpaa"`},
		{"hpa:target=0", "policy hpa: parameter target must be a number in [1, 1000] %"},
		{"hpa:target=abc", "parameter target must be"},
		{"hpa:targte=45", "policy hpa: unknown parameter targte (parameters: target, tolerance)"},
		{"hpa:target=45:target=50", "parameter target set twice"},
		{"spread:1.5", "policy spread: parameter away must be a number in [0, 1]"},
		{"least-request:choice_count=2.5", "parameter choice_count must be an integer >= 2"},
		{"rr:x=1", "policy rr: unknown parameter x (it has none)"},
		{"drpc", "policy drpc: needs a trained file"},
		{"hpa:45", `policy hpa: "45" is not NAME=VALUE`},
		{"hpa+prequal", "only autoscalers run together"},
		{"spread", "policy spread: needs parameter away, a number in [0, 1] (spread:away=VALUE)"},
		{"hpa:tolerance=0", "parameter tolerance must be a number in (0, 1]"},
		{"prequal:probe_rate=0", "parameter probe_rate must be a number > 0"},
	} {
		_, err := Parse(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q): %v, want an error containing %q", c.in, err, c.want)
		}
	}
}

func TestExpand(t *testing.T) {
	got, err := Expand("hpa:target=30..90/15")
	want := []string{"hpa:target=30", "hpa:target=45", "hpa:target=60", "hpa:target=75", "hpa:target=90"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Expand: %v, %v; want %v", got, err, want)
	}
	got, _ = Expand("kpa:concurrency=1..2/0.5:utilization=0.6..0.7/0.1")
	want = []string{"kpa:concurrency=1:utilization=0.6", "kpa:concurrency=1:utilization=0.7", "kpa:concurrency=1.5:utilization=0.6",
		"kpa:concurrency=1.5:utilization=0.7", "kpa:concurrency=2:utilization=0.6", "kpa:concurrency=2:utilization=0.7"}
	if !slices.Equal(got, want) {
		t.Errorf("Expand of two ranges: %v, want %v", got, want)
	}
	if got, _ := Expand("drpc:../a..b/1.policy"); !slices.Equal(got, []string{"drpc:../a..b/1.policy"}) {
		t.Errorf("Expand of a file path: %v", got)
	}
	for _, bad := range []string{"hpa:target=90..30/15", "hpa:target=0..90/15", "hpa:target=1..1e9/1"} {
		if _, err := Expand(bad); err == nil {
			t.Errorf("Expand(%q): no error", bad)
		}
	}
}

func TestCheck(t *testing.T) {
	p, _ := Lookup("prequal")
	if err := p.Check(map[string]float64{"qrif": 0.9, "max_age": 2}); err != nil {
		t.Errorf("valid params: %v", err)
	}
	err := p.Check(map[string]float64{"qrif": 1.5, "foo": 1})
	if err == nil || !strings.Contains(err.Error(), "parameter qrif must be a number in [0, 1]") || !strings.Contains(err.Error(), "unknown parameter foo") {
		t.Errorf("bad params: %v", err)
	}
}

// Every policy is registered once, with a kind, a line on what it does,
// where it runs, and parameters whose defaults lie in their ranges.
func TestRegistryIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range All() {
		if seen[p.Name] {
			t.Errorf("%s registered twice", p.Name)
		}
		seen[p.Name] = true
		if p.Doc == "" || p.Runs == 0 || !slices.Contains(Kinds(), p.Kind) {
			t.Errorf("%s: doc %q, runs %v, kind %q", p.Name, p.Doc, p.Runs, p.Kind)
		}
		if strings.ContainsAny(p.Name, ":=,") {
			t.Errorf("%s: a name holds no ':', '=' or ','", p.Name)
		}
		for _, q := range p.Params {
			if q.Default == "" {
				continue
			}
			if _, err := p.value(q.Name, q.Default); err != nil {
				t.Errorf("%s: default: %v", p.Name, err)
			}
		}
		if p.Short != "" {
			if _, ok := p.Param(p.Short); !ok {
				t.Errorf("%s: short parameter %s is not one of its parameters", p.Name, p.Short)
			}
		}
	}
}
