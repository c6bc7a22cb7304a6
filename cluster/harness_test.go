package cluster

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/workload"
)

// instants is a workload.Process that fires at the listed instants.
type instants struct {
	at []time.Duration
	i  int
}

func (p *instants) Next(time.Duration, *rand.Rand) (time.Duration, bool) {
	if p.i >= len(p.at) {
		return 0, false
	}
	p.i++
	return p.at[p.i-1], true
}

func (p *instants) MeanRate() float64 { return 1 }

// det is a deterministic demand of x (seconds or core-seconds).
func det(x float64) workload.DistSpec { return workload.DistSpec{Dist: "det", Mean: x} }

func poisson(rate float64) workload.ProcessSpec {
	return workload.ProcessSpec{Kind: "poisson", Rate: rate}
}

// sec turns seconds into a Duration.
func sec(x float64) time.Duration { return time.Duration(math.Round(x * 1e9)) }

// build makes a cluster with a long horizon unless opt sets one.
func build(t testing.TB, cfg *Config, opt Options) *Cluster {
	t.Helper()
	if opt.Horizon == 0 {
		opt.Horizon = time.Hour
	}
	cl, err := New(cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// feed replaces the arrivals of source i with requests at the given instants.
func feed(cl *Cluster, i int, at ...time.Duration) {
	s := cl.sources[i]
	s.proc = &instants{at: at}
	cl.k.Cancel(&s.ev)
	if t, ok := s.proc.Next(0, nil); ok && t < cl.opt.Horizon {
		cl.k.Schedule(&s.ev, t)
	}
}

// done is one finished request.
type done struct {
	start, end time.Duration
	fail       uint8
	timedOut   bool
	degraded   bool
}

func (d done) latency() time.Duration { return d.end - d.start }

// record collects the requests as they finish, in finishing order.
func record(cl *Cluster) *[]done {
	var out []done
	cl.onFinish = func(r *request, fail uint8, degraded bool) {
		out = append(out, done{start: r.start, end: cl.k.Now(), fail: fail, timedOut: r.timedOut, degraded: degraded})
	}
	return &out
}

// drain runs until every source is exhausted (or reaches the horizon) and
// every request has finished, or fails the test.
func drain(t testing.TB, cl *Cluster) *Results {
	t.Helper()
	for _, s := range cl.sources {
		for s.ev.Pending() {
			cl.k.Step()
		}
	}
	if !cl.Drain(100 * time.Hour) {
		t.Fatalf("%d requests left after draining", cl.InSystem())
	}
	r := cl.Results()
	if !r.Little.OK() {
		t.Errorf("little's law: %+v", r.Little)
	}
	return r
}

// observe takes a snapshot at t.
func observe(cl *Cluster, t time.Duration) *metrics.Snapshot {
	cl.RunUntil(t)
	var s metrics.Snapshot
	cl.Observe(&s)
	return &s
}

// svcStats finds a service's stats in a snapshot.
func svcStats(t testing.TB, s *metrics.Snapshot, name string) *metrics.ServiceStats {
	t.Helper()
	for i := range s.Services {
		if s.Services[i].Name == name {
			return &s.Services[i]
		}
	}
	t.Fatalf("no service %q in snapshot", name)
	return nil
}

// near reports whether two durations are within tol.
func near(a, b, tol time.Duration) bool { return a-b <= tol && b-a <= tol }

// binomialOK reports whether k successes of n are within z standard
// deviations of n*p.
func binomialOK(k, n int64, p, z float64) bool {
	sd := math.Sqrt(float64(n) * p * (1 - p))
	return math.Abs(float64(k)-float64(n)*p) <= z*sd
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
