package scenario

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control/lb"
)

// appScenarios are the embedded scenarios of real applications (TrainTicket,
// Online Boutique, Bookinfo, FaaSConf's workflows): their size and request
// classes as their files document them.
var appScenarios = []struct {
	name string
	// services is the number of services in the file; apps is the number of
	// distinct application services (a multi-cloud file has one copy per
	// cloud, name-cN, and an ingress gateway per cloud).
	services, apps int
	classes        []string
}{
	{name: "trainticket", services: 40, apps: 40, classes: []string{"query", "buy", "cancel", "admin"}},
	{name: "online-boutique", services: 34, apps: 11, classes: perCloud("index", "setCurrency", "browseProduct", "addToCart", "viewCart", "checkout")},
	{name: "bookinfo", services: 21, apps: 6, classes: perCloud("productpage")},
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
			if sc.Description == "" || sc.Seeds != 3 || sc.Horizon != 5*time.Minute {
				t.Errorf("description %q, seeds %d, horizon %v: want a description, 3 seeds, 5m", sc.Description, sc.Seeds, sc.Horizon)
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
				if src.Arrivals.Kind != "poisson" || src.Arrivals.Rate <= 0 {
					t.Errorf("source %s: arrivals %+v, want Poisson with a rate", src.Name, src.Arrivals)
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
