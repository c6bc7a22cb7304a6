package cluster

import (
	"math"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/workload"
)

// goodCfg is a valid configuration that the cases below break one way each.
func goodCfg() *Config {
	return &Config{
		Locations: []Location{{Name: "x", RTT: map[string]time.Duration{"y": time.Millisecond}}, {Name: "y"}},
		Nodes:     []Node{{Name: "n", CPU: 4, MemoryMB: 4096, Count: 2}, {Name: "m", Location: "y", CPU: 2}},
		Services: []Service{
			{Name: "a", Replicas: 2, MinReplicas: 1, MaxReplicas: 4},
			{Name: "b", Location: "y", CPU: 2},
		},
		LBs: []LBPoint{{Name: "lb", Service: "a"}},
		Classes: []Class{{Name: "c", Call: Call{Service: "a", CPU: det(0.01), Stages: []Stage{
			{Calls: []Call{{Service: "b", CPU: det(0.01)}}}}}}},
		Sources: []Source{{Name: "s", Class: "c", LB: "lb", Arrivals: poisson(10)}},
	}
}

func TestValidate(t *testing.T) {
	if err := goodCfg().Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	if _, err := New(goodCfg(), Options{Horizon: time.Second}); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for _, tc := range []struct {
		name   string
		break_ func(c *Config)
		want   []string // substrings of the error, each naming the field path and the bad value
	}{
		{"unknown service in a call", func(c *Config) { c.Classes[0].Call.Stages[0].Calls[0].Service = "zz" },
			[]string{`classes[0].call.stages[0].calls[0].service: unknown service "zz"`}},
		{"cycle", func(c *Config) {
			c.Classes[0].Call.Stages[0].Calls[0].Stages = []Stage{{Calls: []Call{{Service: "a"}}}}
		}, []string{`classes[0].call.stages[0].calls[0].stages[0].calls[0].service: call graph has a cycle: a -> b -> a`}},
		{"self call", func(c *Config) { c.Classes[0].Call.Stages[0].Calls[0].Service = "a" },
			[]string{"cycle: a -> a"}},
		{"negative rate", func(c *Config) { c.Sources[0].Arrivals.Rate = -3 },
			[]string{"sources[0].arrivals.rate: must be > 0, got -3"}},
		{"negative replicas", func(c *Config) { c.Services[1].Replicas = -1 },
			[]string{"services[1].replicas: must be in [0, 100000], got -1"}},
		{"replicas below min", func(c *Config) { c.Services[0].MinReplicas = 3 },
			[]string{"services[0].replicas: must give at least min_replicas (3) instances, got 2"}},
		{"replicas above max", func(c *Config) { c.Services[0].Replicas = 5 },
			[]string{"services[0].replicas: must give at most max_replicas (4) instances, got 5"}},
		{"instances below min", func(c *Config) {
			c.Services[0].Instances = []InstanceSpec{{}}
			c.Services[0].MinReplicas = 2
		}, []string{"services[0].instances: must give at least min_replicas (2) instances, got 1"}},
		{"max below min", func(c *Config) { c.Services[0].MaxReplicas = 1; c.Services[0].MinReplicas = 2 },
			[]string{"services[0].max_replicas: must be 0 (no bound) or >= min_replicas (2), got 1"}},
		{"cpu above every node", func(c *Config) { c.Services[0].CPU = 8 },
			[]string{`services[0].cpu: limit 8 cores, memory 0 MB fits on no node of location "x"`}},
		{"cpu fits only elsewhere", func(c *Config) { c.Services[1].CPU = 3 },
			[]string{`services[1].cpu: limit 3 cores, memory 0 MB fits on no node of location "y"`}},
		{"memory above every node", func(c *Config) { c.Services[0].MemoryMB = 5000 },
			[]string{"services[0].cpu: limit 1 cores, memory 5000 MB fits on no node"}},
		{"duplicate service", func(c *Config) { c.Services[1].Name = "a" },
			[]string{`services[1].name: duplicate name "a"`}},
		{"duplicate source", func(c *Config) { c.Sources = append(c.Sources, c.Sources[0]) },
			[]string{`sources[1].name: duplicate name "s"`}},
		{"empty name", func(c *Config) { c.Classes[0].Name = "" },
			[]string{"classes[0].name: must not be empty"}},
		{"unknown lb", func(c *Config) { c.Sources[0].LB = "nolb" },
			[]string{`sources[0].lb: unknown lb "nolb"`}},
		{"lb of another service", func(c *Config) { c.LBs[0].Service = "b" },
			[]string{`sources[0].lb: lb "lb" is in front of service "b", but class "c" starts at service "a"`}},
		{"unknown class", func(c *Config) { c.Sources[0].Class = "nope" },
			[]string{`sources[0].class: unknown class "nope"`}},
		{"unknown location", func(c *Config) { c.Services[1].Location = "mars" },
			[]string{`services[1].location: unknown location "mars"`}},
		{"unknown rtt location", func(c *Config) { c.Locations[0].RTT["venus"] = 1 },
			[]string{`locations[0].rtt[venus]: unknown location "venus"`}},
		{"negative rtt", func(c *Config) { c.Locations[0].RTT["y"] = -1 },
			[]string{"locations[0].rtt[y]: must be >= 0, got -1ns"}},
		{"prob above 1", func(c *Config) { c.Classes[0].Call.Stages[0].Calls[0].Prob = 1.5 },
			[]string{"classes[0].call.stages[0].calls[0].prob: must be in [0, 1], got 1.5"}},
		{"empty stage", func(c *Config) { c.Classes[0].Call.Stages[0].Calls = nil },
			[]string{"classes[0].call.stages[0].calls: a stage needs at least one call"}},
		{"bad demand", func(c *Config) { c.Classes[0].Call.CPU = workload.DistSpec{Dist: "exp", Mean: -1} },
			[]string{"classes[0].call.cpu.mean: must be > 0, got -1"}},
		{"negative timeout", func(c *Config) { c.Classes[0].Timeout = -time.Second },
			[]string{"classes[0].timeout: must be >= 0, got -1s"}},
		{"NaN cpu", func(c *Config) { c.Services[0].CPU = math.NaN() },
			[]string{"services[0].cpu: must be a finite number >= 0, got NaN"}},
		{"base memory above limit", func(c *Config) { c.Services[0].MemoryMB = 100; c.Services[0].MemoryBaseMB = 200 },
			[]string{"services[0].memory_base_mb: must be below memory_mb (100), got 200"}},
		{"queue below -1", func(c *Config) { c.Services[0].Queue = -2 },
			[]string{"services[0].queue: must be >= -1 (-1 = unbounded), got -2"}},
		{"node without cpu", func(c *Config) { c.Nodes[1].CPU = 0 },
			[]string{"nodes[1].cpu: must be a finite number > 0, got 0"}},
		{"no sources", func(c *Config) { c.Sources = nil }, []string{"sources: at least one source is needed"}},
		{"negative price", func(c *Config) { c.Prices.GBSecond = -1 },
			[]string{"prices.gb_second: must be a finite number >= 0, got -1"}},
		{"admission cap below 0", func(c *Config) { c.LBs[0].Admission = &lb.Admission{MaxRequests: -1} },
			[]string{"lbs[0].admission.max_requests: must be >= 1 (0: the default, 32), got -1"}},
		{"admission queue below -1", func(c *Config) { c.LBs[0].Admission = &lb.Admission{MaxPending: -2} },
			[]string{"lbs[0].admission.max_pending: must be >= 0 (0: the default, 64; -1: no queue), got -2"}},
		{"admission queue timeout below 0", func(c *Config) { c.LBs[0].Admission = &lb.Admission{QueueTimeout: -time.Second} },
			[]string{"lbs[0].admission.queue_timeout: must be > 0 (0: the default, 1s), got -1s"}},
		{"shed is not a retry_on name as 503", func(c *Config) {
			c.Services[0].Route = Route{Retries: 1, RetryOn: []string{"shed", "503"}}
		}, []string{`services[0].retry_on[1]: must be one of timeout, 429, oom, no_capacity, shed, got "503"`}},
		{"two problems at once", func(c *Config) { c.Services[0].Concurrency = -1; c.Nodes[0].Count = -2 },
			[]string{"services[0].concurrency: must be >= 0, got -1", "nodes[0].count: must be in [0, 100000], got -2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := goodCfg()
			tc.break_(c)
			err := c.Validate()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
			if _, err2 := New(c, Options{Horizon: time.Second}); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("New: %v, want the validation error", err2)
			}
		})
	}
}

// TestNewOptionErrors checks run options that New rejects.
func TestNewOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{}, "horizon must be > 0"},
		{Options{Horizon: time.Second, Policy: "magic"}, `lbs[0]: policy "magic": unknown selector "magic"`},
		{Options{Horizon: time.Second, Series: "zz"}, `series: unknown service "zz"`},
		{Options{Horizon: time.Second, Rates: []float64{-1}}, "mean rate must be >= 0"},
	} {
		if _, err := New(goodCfg(), tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opt, err, tc.want)
		}
	}
	c := goodCfg()
	c.Services[0].Selector = "nope"
	if _, err := New(c, Options{Horizon: time.Second}); err == nil || !strings.Contains(err.Error(), "services[0].selector") {
		t.Errorf("unknown service selector: %v", err)
	}
}

// FuzzNew decodes small YAML configurations and builds, runs, observes and
// drains them briefly: errors are fine, panics are not.
func FuzzNew(f *testing.F) {
	for _, s := range []string{
		`{services: [{name: a}], classes: [{name: c, call: {service: a, cpu: {dist: exp, mean: 0.01}}}], sources: [{name: s, class: c, arrivals: {kind: poisson, rate: 50}}]}`,
		`{services: [{name: a, concurrency: 1, queue: 1, memory_mb: 100, memory_base_mb: 10, memory_per_call_mb: 40}, {name: b, io_parallelism: 1}],
		  classes: [{name: c, timeout: 50ms, call: {service: a, cpu: {dist: det, mean: 0.01}, io: {dist: det, mean: 0.01}, phases: 3,
		    stages: [{choice: true, calls: [{service: b, prob: 0.5, optional: true}, {service: b, cpu: {dist: exp, mean: 0.02}}]}]}}],
		  sources: [{name: s, class: c, arrivals: {kind: poisson, rate: 100}}]}`,
		`{locations: [{name: x, rtt: {y: 10ms}}, {name: y}], nodes: [{name: n, cpu: 2, count: 2}],
		  services: [{name: a, location: x, replicas: 2, cold_start: 1s}, {name: b, location: y, instances: [{speed: 2}, {cpu: 0.5}]}],
		  lbs: [{name: l, service: a}],
		  classes: [{name: c, call: {service: a, cpu: {dist: exp, mean: 0.01}, stages: [{calls: [{service: b, cpu: {dist: lognormal, mean: 0.01, cv: 2}}]}]}}],
		  sources: [{name: s, class: c, lb: l, arrivals: {kind: mmpp, states: [{rate: 10, dwell: 1s}, {rate: 100, dwell: 1s}]}}]}`,
		`{services: [{name: a}], classes: [{name: c, call: {service: a, stages: [{calls: [{service: a}]}]}}], sources: [{name: s, class: c, arrivals: {kind: poisson, rate: 1}}]}`,
	} {
		f.Add([]byte(s), uint64(1), uint8(0))
	}
	policies := []string{"rr", "lsq", "ecmp", "wcmp", "sed", "p2c", "wrr", "oracle"}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, pol uint8) {
		var cfg Config
		if err := yaml.Unmarshal(data, &cfg); err != nil || size(&cfg) > 2000 {
			return // big systems are valid but slow to build: not what this looks for
		}
		cl, err := New(&cfg, Options{Seed: seed, Horizon: 2 * time.Second, Policy: policies[int(pol)%len(policies)]})
		if err != nil {
			return
		}
		// Arrival rates can be huge: bound the work, not the simulated time.
		for i := 0; i < 5000 && cl.k.Step(); i++ {
		}
		var snap = observe(cl, cl.Now())
		_ = snap
		r := cl.Results()
		if r.Completed > r.Arrivals {
			t.Fatalf("completed %d of %d arrivals", r.Completed, r.Arrivals)
		}
	})
}

// size is the number of instances and nodes a configuration asks for.
func size(c *Config) int {
	n := 0
	for _, nd := range c.Nodes {
		n += max(nd.Count, 1)
	}
	for _, s := range c.Services {
		n += max(s.Replicas, s.MinReplicas, len(s.Instances), 1)
	}
	return n
}
