package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/workload"
)

// richCfg uses most of the model: locations with RTT, fan-out, choice and
// probabilistic calls, optional calls, concurrency with queues and 429s,
// memory, timeouts, heterogeneous instances behind two LB points.
func richCfg() *Config {
	exp := func(m float64) workload.DistSpec { return workload.DistSpec{Dist: "exp", Mean: m} }
	return &Config{
		Locations: []Location{{Name: "east", RTT: map[string]time.Duration{"west": 20 * time.Millisecond}}, {Name: "west"}},
		Services: []Service{
			{Name: "front", Instances: []InstanceSpec{{Speed: 1}, {Speed: 2}, {Speed: 0.5}}, CPU: 2},
			{Name: "auth", Concurrency: 4, Queue: 8, Replicas: 2},
			{Name: "db", Location: "west", IOParallelism: 2, MemoryMB: 400, MemoryBaseMB: 100, MemoryPerCallMB: 30, OOMRestart: time.Second},
			{Name: "cache", Concurrency: 2, Queue: 0},
			{Name: "reco", Replicas: 2},
		},
		LBs: []LBPoint{{Name: "lb1", Service: "front"}, {Name: "lb2", Service: "front", Location: "west"}},
		Classes: []Class{{Name: "page", Timeout: 2 * time.Second, Call: Call{Service: "front", CPU: exp(0.01), Stages: []Stage{
			{Calls: []Call{{Service: "auth", CPU: exp(0.005)}, {Service: "reco", CPU: exp(0.02), Optional: true, Prob: 0.5}}},
			{Choice: true, Calls: []Call{
				{Service: "cache", CPU: exp(0.002), Prob: 0.7},
				{Service: "db", CPU: exp(0.005), IO: exp(0.02), Phases: 2, Prob: 0.3, Stages: []Stage{
					{Calls: []Call{{Service: "cache", CPU: exp(0.002), Optional: true}}}}},
			}},
		}}}},
		Sources: []Source{
			{Name: "east", Class: "page", LB: "lb1", Arrivals: poisson(60)},
			{Name: "west", Class: "page", LB: "lb2", Arrivals: workload.ProcessSpec{Kind: "mmpp", Rate: 40,
				States: []workload.MMPPState{{Rate: 10, Dwell: 5 * time.Second}, {Rate: 80, Dwell: 5 * time.Second}}}},
		},
	}
}

// runJSON runs a configuration with controller-like observations and
// returns the JSON encoding of its results and of every snapshot.
func runJSON(t *testing.T, cfg *Config, opt Options) []byte {
	t.Helper()
	cl := build(t, cfg, opt)
	var buf bytes.Buffer
	var snap metrics.Snapshot
	for at := time.Second; at <= opt.Horizon; at += time.Second {
		cl.RunUntil(at)
		cl.Observe(&snap)
		b, err := json.Marshal(&snap)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
	}
	cl.Drain(time.Hour)
	b, err := json.Marshal(cl.Results())
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(b)
	return buf.Bytes()
}

// TestDeterminism checks that a seed fixes every output byte and that
// another seed changes them.
func TestDeterminism(t *testing.T) {
	opt := Options{Seed: 42, Policy: "p2c", Horizon: 30 * time.Second, Warmup: 5 * time.Second}
	a := runJSON(t, richCfg(), opt)
	b := runJSON(t, richCfg(), opt)
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with the same seed differ")
	}
	opt.Seed = 43
	if c := runJSON(t, richCfg(), opt); bytes.Equal(a, c) {
		t.Fatal("two seeds give identical runs")
	}
	var r Results
	if err := json.Unmarshal(a[bytes.LastIndex(a, []byte(`{"Latency"`)):], &r); err != nil {
		t.Fatal(err)
	}
	if r.Completed == 0 || r.Failures.Rejected == 0 {
		t.Errorf("the rich scenario should complete requests and reject some: %+v", r.Failures)
	}
}

// lbFarm is the Distr-LB setting: 2 LB points in front of 7 servers of
// different speeds, processor sharing, exponential demands.
func lbFarm(load float64) *Config {
	speeds := []float64{1, 1, 2, 2, 3, 0.5, 0.5}
	var insts []InstanceSpec
	total := 0.0
	for _, s := range speeds {
		insts = append(insts, InstanceSpec{Speed: s})
		total += s
	}
	const demand = 0.01 // core-seconds
	rate := load * total / demand
	return &Config{
		Services: []Service{{Name: "srv", Instances: insts}},
		LBs:      []LBPoint{{Name: "lb1", Service: "srv"}, {Name: "lb2", Service: "srv"}},
		Classes:  []Class{{Name: "c", Call: Call{Service: "srv", CPU: workload.DistSpec{Dist: "exp", Mean: demand}}}},
		Sources: []Source{
			{Name: "s1", Class: "c", LB: "lb1", Arrivals: poisson(rate * 0.6)},
			{Name: "s2", Class: "c", LB: "lb2", Arrivals: poisson(rate * 0.4)},
		},
	}
}

// crnCfg is richCfg without failures (which cut call graphs short
// depending on timing) and with parallel calls that have stages of their
// own, so that their children's draws interleave differently per policy.
func crnCfg() *Config {
	cfg := richCfg()
	for i := range cfg.Services {
		cfg.Services[i].Concurrency, cfg.Services[i].MemoryMB = 0, 0
	}
	st := cfg.Classes[0].Call.Stages[0].Calls
	child := []Stage{{Calls: []Call{{Service: "cache", CPU: workload.DistSpec{Dist: "exp", Mean: 0.003}, Prob: 0.5}}}}
	st[0].Stages, st[1].Stages = child, child
	return cfg
}

// callRec is what a test sees of a call: the source's arrival instant of
// its request (roots only), its service and demand.
type callRec struct {
	root     bool
	at       time.Duration
	svc      string
	cpu, io  float64
	optional bool
}

func recordCalls(cl *Cluster) *[]callRec {
	var out []callRec
	cl.onStart = func(c *call) {
		out = append(out, callRec{root: c.parent == nil, at: c.start, svc: c.node.svc.name, cpu: c.cpu, io: c.io})
	}
	return &out
}

// TestCommonRandomNumbers checks that two policies see exactly the same
// requests: arrival instants, demands, and every call of every request's
// call graph, although the timing differs.
func TestCommonRandomNumbers(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  *Config
	}{
		{"2 LB x 7 servers", lbFarm(0.8)},
		{"call graph", crnCfg()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs [2][]callRec
			var results [2]*Results
			for i, pol := range []string{"lsq", "ecmp"} {
				cl := build(t, tc.cfg, Options{Seed: 9, Policy: pol, Horizon: 20 * time.Second})
				rec := recordCalls(cl)
				cl.RunUntil(20 * time.Second)
				results[i] = drain(t, cl)
				runs[i] = *rec
			}
			if results[0].Latency.Mean() == results[1].Latency.Mean() {
				t.Fatal("the two policies should differ in latency")
			}
			// Roots in arrival order, all calls as multisets.
			roots := func(rs []callRec) []callRec {
				return slices.DeleteFunc(slices.Clone(rs), func(r callRec) bool { return !r.root })
			}
			ra, rb := roots(runs[0]), roots(runs[1])
			if !slices.Equal(ra, rb) {
				t.Fatalf("root calls differ: %d vs %d", len(ra), len(rb))
			}
			key := func(r callRec) string { return fmt.Sprintf("%s %.17g %.17g", r.svc, r.cpu, r.io) }
			ka, kb := make([]string, len(runs[0])), make([]string, len(runs[1]))
			for i, r := range runs[0] {
				ka[i] = key(r)
			}
			for i, r := range runs[1] {
				kb[i] = key(r)
			}
			slices.Sort(ka)
			slices.Sort(kb)
			if !slices.Equal(ka, kb) {
				t.Errorf("the calls made differ: %d vs %d calls", len(ka), len(kb))
			}
			t.Logf("%d requests, %d calls; mean latency lsq %.4f s, ecmp %.4f s", len(ra), len(ka), results[0].Latency.Mean(), results[1].Latency.Mean())
		})
	}
}

// TestObservationDoesNotPerturb checks that observing a run (snapshots,
// a finer load series) leaves its results unchanged.
func TestObservationDoesNotPerturb(t *testing.T) {
	lat := func(observe bool) []done {
		opt := Options{Seed: 4, Policy: "lsq", Horizon: 20 * time.Second}
		if observe {
			opt.SamplePeriod = 37 * time.Millisecond
		}
		cl := build(t, crnCfg(), opt)
		fin := record(cl)
		var snap metrics.Snapshot
		for at := time.Duration(0); at < opt.Horizon; at += 13 * time.Millisecond {
			cl.RunUntil(at)
			if observe {
				cl.Observe(&snap)
			}
		}
		drain(t, cl)
		return *fin
	}
	a, b := lat(false), lat(true)
	if !slices.Equal(a, b) {
		t.Errorf("observing changed the run (%d vs %d requests)", len(a), len(b))
	}
}

// A run built Unobserved gives the same results as the same run built to
// be observed (and not observed), and Observe on it panics.
func TestUnobservedGivesTheSameResults(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func() *Config
	}{{"rich", richCfg}, {"farm", func() *Config { return lbFarm(0.9) }}} {
		var out [2][]byte
		var cl *Cluster
		for i, unobserved := range []bool{false, true} {
			opt := Options{Seed: 7, Policy: "p2c", Horizon: 20 * time.Second, Warmup: 2 * time.Second, Unobserved: unobserved}
			cl = build(t, tc.cfg(), opt)
			cl.RunUntil(opt.Horizon)
			cl.Drain(time.Hour)
			var err error
			if out[i], err = json.Marshal(cl.Results()); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(out[0], out[1]) {
			t.Errorf("%s: the unobserved run's results differ", tc.name)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Observe on an unobserved cluster did not panic", tc.name)
				}
			}()
			cl.Observe(&metrics.Snapshot{})
		}()
	}
}
