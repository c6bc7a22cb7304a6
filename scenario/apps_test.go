package scenario

import (
	"bytes"
	"cmp"
	"math"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/workload"
	"go.yaml.in/yaml/v3"
)

// appScenarios are the embedded scenarios of real applications (TrainTicket,
// Online Boutique, Bookinfo, FaaSConf's workflows): their size and request
// classes as their files document them.
var appScenarios = []struct {
	name string
	// services is the number of services in the file; apps is the number of
	// distinct application services (a multi-cloud file places each in every
	// cloud, and has an ingress gateway per cloud).
	services, apps int
	classes        []string
	// horizon is the file's horizon (default 5m): the multi-cloud files'
	// online test settings last 20m.
	horizon time.Duration
}{
	{name: "trainticket", services: 40, apps: 40, classes: []string{"query", "buy", "cancel", "admin"}},
	{name: "online-boutique", services: 3 + 11, apps: 11, classes: perCloud("index", "setCurrency", "browseProduct", "addToCart", "viewCart", "checkout"), horizon: 20 * time.Minute},
	{name: "bookinfo", services: 3 + 6, apps: 6, classes: perCloud("productpage"), horizon: 20 * time.Minute},
	// The workflows: the functions plus the orchestrator (wf5, wf6, wf7).
	{name: "faas-sequential", services: 5 + 1, apps: 5 + 1, classes: []string{"sequential"}},
	{name: "faas-parallel", services: 6 + 1, apps: 6 + 1, classes: []string{"parallel"}},
	{name: "faas-branch", services: 7 + 1, apps: 7 + 1, classes: []string{"branch-rgb", "branch-convert"}},
	{name: "faas-ticket-search", services: 12, apps: 12, classes: []string{"search"}},
}

func perCloud(requests ...string) []string {
	var out []string
	for _, r := range requests {
		for _, c := range []string{"c1", "c2", "c3"} {
			out = append(out, r+"@"+c)
		}
	}
	return out
}

var cloudSuffix = regexp.MustCompile(`-c[0-9]+$`)

// TestApplicationScenariosShape checks each application scenario's services
// and classes, and that every service is called by some class and every
// class has a source.
func TestApplicationScenariosShape(t *testing.T) {
	for _, tc := range appScenarios {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Embedded(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			horizon := cmp.Or(tc.horizon, 5*time.Minute)
			if sc.Description == "" || sc.Seeds != 3 || sc.Horizon != horizon {
				t.Errorf("description %q, seeds %d, horizon %v: want a description, 3 seeds, %v", sc.Description, sc.Seeds, sc.Horizon, horizon)
			}
			if len(sc.Services) != tc.services {
				t.Errorf("%d services, want %d", len(sc.Services), tc.services)
			}
			apps := map[string]bool{}
			for _, s := range sc.Services {
				name := cloudSuffix.ReplaceAllString(s.Name, "")
				if name != "istio-ingressgateway" {
					apps[name] = true
				}
			}
			if len(apps) != tc.apps {
				t.Errorf("%d application services, want %d: %v", len(apps), tc.apps, apps)
			}
			var classes []string
			called := map[string]bool{}
			for i := range sc.Classes {
				classes = append(classes, sc.Classes[i].Name)
				walkCalls(&sc.Classes[i].Call, func(c *cluster.Call) { called[c.Service] = true })
			}
			if !slices.Equal(classes, tc.classes) {
				t.Errorf("classes %v, want %v", classes, tc.classes)
			}
			for _, s := range sc.Services {
				if !called[s.Name] {
					t.Errorf("service %s is in no call graph", s.Name)
				}
			}
			fed := map[string]bool{}
			for _, src := range sc.Sources {
				fed[src.Class] = true
				if k := src.Arrivals.Kind; (k != "poisson" && k != "diurnal") || src.Arrivals.Rate <= 0 {
					t.Errorf("source %s: arrivals %+v, want Poisson or diurnal with a rate", src.Name, src.Arrivals)
				}
			}
			for _, c := range classes {
				if !fed[c] {
					t.Errorf("class %s has no source", c)
				}
			}
		})
	}
}

func walkCalls(c *cluster.Call, f func(*cluster.Call)) {
	f(c)
	for i := range c.Stages {
		for j := range c.Stages[i].Calls {
			walkCalls(&c.Stages[i].Calls[j], f)
		}
	}
}

// TestTrainTicketMix: DRPC's four user types at 60/25/10/5 % of 200 req/s.
func TestTrainTicketMix(t *testing.T) {
	sc, err := Embedded("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, src := range sc.Sources {
		total += src.Arrivals.Rate
	}
	if total != 200 {
		t.Errorf("total rate %g req/s, want 200", total)
	}
	for _, src := range sc.Sources {
		if got := src.Arrivals.Rate / total; got != src.Share {
			t.Errorf("source %s: %g of the rate, but share %g", src.Name, got, src.Share)
		}
	}
}

// TestApplicationScenariosRun simulates each application scenario for 20 s at
// half its default rates: every class completes requests, hardly any fail,
// and everything finishes.
func TestApplicationScenariosRun(t *testing.T) {
	for _, tc := range appScenarios {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc, err := Embedded(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			sc.SetHorizon(20 * time.Second)
			rates := make([]float64, len(sc.Sources))
			for i, src := range sc.Sources {
				rates[i] = src.Arrivals.Rate / 2
			}
			cl, err := cluster.New(&sc.Config, cluster.Options{
				Seed: sc.Seed, Selectors: lb.Classical(), Policy: "rr", Traces: sc.Traces(), Rates: rates,
				Horizon: sc.Horizon, Warmup: sc.Warmup, SamplePeriod: sc.SamplePeriod,
			})
			if err != nil {
				t.Fatal(err)
			}
			cl.RunUntil(sc.Horizon)
			cl.Drain(sc.Drain)
			r := cl.Results()
			if r.Completed == 0 || r.Unfinished != 0 || !r.Little.OK() {
				t.Fatalf("completed %d, unfinished %d, Little %+v", r.Completed, r.Unfinished, r.Little)
			}
			if f := r.Failures.Total(); float64(f) > 0.01*float64(r.Arrivals) {
				t.Errorf("%d of %d requests failed: %+v", f, r.Arrivals, r.Failures)
			}
			if r.OOMKills != 0 {
				t.Errorf("%d OOM kills", r.OOMKills)
			}
			for _, c := range r.Classes {
				if c.Latency.Count() == 0 {
					t.Errorf("class %s completed no request", c.Name)
				}
			}
			t.Logf("%d arrivals, %d completed, mean %.3f s, %d failures, %d events", r.Arrivals, r.Completed, r.Latency.Mean(), r.Failures.Total(), r.Events)
		})
	}
}

// trainTicketWorkloads are the DRPC workloads built on trainticket.
var trainTicketWorkloads = []string{"trainticket-surge", "trainticket-alibaba", "trainticket-mixchange"}

// TestTrainTicketWorkloadsShape checks that each DRPC workload is
// trainticket's application with its own sources, and the figures their
// comments give: the surge's rates, the Alibaba trace's map to rates and
// its halves, the mix change's users.
func TestTrainTicketWorkloadsShape(t *testing.T) {
	tt, err := Embedded("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	scs := map[string]*Scenario{}
	for _, name := range trainTicketWorkloads {
		sc, err := Embedded(name)
		if err != nil {
			t.Fatal(err)
		}
		// The overrides hold YAML nodes, whose line numbers differ: compare their text.
		a, _ := yaml.Marshal(sc.Autoscaling)
		b, _ := yaml.Marshal(tt.Autoscaling)
		if sc.Name != name || sc.Base != "trainticket" || !reflect.DeepEqual(sc.Services, tt.Services) ||
			!reflect.DeepEqual(sc.Classes, tt.Classes) || !bytes.Equal(a, b) || !slices.Equal(sc.Policies, tt.Policies) {
			t.Errorf("%s is not trainticket's application", name)
		}
		scs[name] = sc
	}
	// Summed over the sources, bucket i replays rate(i); the shares are 60/25/10/5 %.
	total := func(sc *Scenario, i int) float64 {
		sum := 0.0
		for _, src := range sc.Sources {
			p, err := src.Arrivals.BuildWith(0, sc.Traces())
			if err != nil {
				t.Fatal(err)
			}
			sum += p.(*workload.SeriesReplay).BucketRate(i)
		}
		return sum
	}

	surge := scs["trainticket-surge"]
	for i := range 60 { // bench/autoscale/traces.sh's drpc-surge
		want := 800.0
		switch {
		case i < 12:
			want = 200
		case i < 18:
			want = float64(100 * (i - 9))
		}
		if got := total(surge, i); math.Abs(got-want) > 1e-9 {
			t.Errorf("surge step %d: %g req/s, want %g", i, got, want)
		}
	}
	if surge.Horizon != 10*time.Minute {
		t.Errorf("surge horizon %v", surge.Horizon)
	}

	ali := scs["trainticket-alibaba"]
	tr, err := ali.Traces().Load("alibaba", "")
	if err != nil {
		t.Fatal(err)
	}
	util, err := tr.Series("cpu_util_percent", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1234, 9999} {
		if got, want := total(ali, i), 12*util.Values[i]; math.Abs(got-want) > 1e-9*want {
			t.Errorf("alibaba bucket %d: %g req/s, want 12 x %g %%", i, got, util.Values[i])
		}
	}
	for _, src := range ali.Sources {
		a := src.Arrivals
		if time.Duration(float64(ali.Horizon)*a.Speedup) != a.Window || a.Window != 5000*time.Minute {
			t.Errorf("%s: horizon %v x speedup %g is not the window %v of 5000 minutes", src.Name, ali.Horizon, a.Speedup, a.Window)
		}
	}
	// The second half starts 2500 trace minutes in: bucket 5000 of 30 s.
	for i := range ali.Sources {
		ali.Sources[i].Arrivals.Start, ali.Sources[i].Arrivals.Window = 2500*time.Minute, 2500*time.Minute
	}
	if got, want := total(ali, 0), 12*util.Values[5000]; math.Abs(got-want) > 1e-9*want {
		t.Errorf("second half: %g req/s at its start, want %g", got, want)
	}

	// Users x 1/(think + response time) make about 200 req/s in each half.
	mix := scs["trainticket-mixchange"]
	resp := map[string]float64{"query": 0.085, "buy": 0.348, "cancel": 0.122, "admin": 0.070}
	for half := range 2 {
		rate := map[string]float64{}
		for _, src := range mix.Sources {
			n := float64(src.Users.Count)
			if src.Users.Over != nil {
				n = src.Users.Over.Rates[half]
			}
			rate[src.Class] = n / (src.Think.Mean + resp[src.Class])
		}
		sum := rate["query"] + rate["buy"] + rate["cancel"] + rate["admin"]
		q, b := rate["query"]/sum, rate["buy"]/sum
		if math.Abs(sum-200) > 2 || (half == 0 && math.Abs(q-0.6)+math.Abs(b-0.25) > 0.01) || (half == 1 && math.Abs(q-0.25)+math.Abs(b-0.6) > 0.01) {
			t.Errorf("mixchange half %d: %.1f req/s, query %.3f, buy %.3f", half, sum, q, b)
		}
	}
}

// TestTrainTicketWorkloadsRun runs the first 20 s of each DRPC workload:
// requests of every class complete, hardly any fail.
func TestTrainTicketWorkloadsRun(t *testing.T) {
	for _, name := range trainTicketWorkloads {
		t.Run(name, func(t *testing.T) {
			sc, err := Embedded(name)
			if err != nil {
				t.Fatal(err)
			}
			sc.SetHorizon(20 * time.Second)
			cl, err := cluster.New(&sc.Config, cluster.Options{Seed: 1, Traces: sc.Traces(), Horizon: sc.Horizon, Warmup: sc.Warmup})
			if err != nil {
				t.Fatal(err)
			}
			cl.RunUntil(sc.Horizon)
			cl.Drain(sc.Drain)
			r := cl.Results()
			if r.Unfinished != 0 || !r.Little.OK() || float64(r.Failures.Total()) > 0.01*float64(r.Arrivals) {
				t.Errorf("unfinished %d, failures %+v of %d, little %+v", r.Unfinished, r.Failures, r.Arrivals, r.Little)
			}
			for _, c := range r.Classes {
				if c.Latency.Count() == 0 {
					t.Errorf("class %s completed no request", c.Name)
				}
			}
			t.Logf("%d arrivals in 20 s", r.ArrivedAll)
		})
	}
}
