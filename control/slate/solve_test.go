package slate

import (
	"math"
	"testing"
)

// One service in two locations, every call made at the first, no RTT and
// no egress: the optimum splits the load L where the marginal costs are
// equal, 3·a1·x² + b1 = 3·a2·(L − x)² + b2 (the system optimum of two
// parallel links; Beckmann, McGuire and Winsten), found here by bisection.
func TestSolveEqualisesMarginalCosts(t *testing.T) {
	a1, b1, a2, b2, load := 2e-4, 0.01, 5e-4, 0.004, 20.0
	p := &Problem{
		Services: []Service{{Name: "s", Latency: []Latency{{A: a1, B: b1, Capacity: 100}, {A: a2, B: b2, Capacity: 100}}}},
		Arrivals: [][]float64{{load, 0}},
		RTT:      [][]float64{{0, 0}, {0, 0}},
		Bytes:    []float64{0},
	}
	routes, _, err := p.Solve(nil, 200)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := 0.0, load
	for range 100 {
		x := (lo + hi) / 2
		if 3*a1*x*x+b1 < 3*a2*(load-x)*(load-x)+b2 {
			lo = x
		} else {
			hi = x
		}
	}
	want := lo / load
	if got := routes[0][0][0]; math.Abs(got-want) > 0.005 {
		t.Errorf("kept %.4f of the calls at home, want %.4f", got, want)
	}
}

// With egress priced high enough, every call stays where it is made;
// with it free, the faster location takes a share.
func TestSolveWeighsEgress(t *testing.T) {
	p := &Problem{
		Services: []Service{{Name: "s", Latency: []Latency{{A: 1e-3, B: 0.05, Capacity: 100}, {A: 1e-4, B: 0.01, Capacity: 100}}}},
		Arrivals: [][]float64{{10, 0}},
		RTT:      [][]float64{{0, 0.01}, {0.01, 0}},
		Bytes:    []float64{1e6},
	}
	free, _, err := p.Solve(nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	if free[0][0][1] < 0.5 {
		t.Errorf("free egress: %.3f of the calls to the faster location", free[0][0][1])
	}
	p.EgressWeight = 1e3 // a GB costs 1000 s of latency: a 1 MB call, 1 s
	dear, _, _ := p.Solve(nil, 100)
	if dear[0][0][1] > 1e-6 {
		t.Errorf("dear egress: %.3f of the calls still sent away", dear[0][0][1])
	}
}

// A child's calls start where its parent was served: with the parent
// placed only at the second location, all of the child's 20 calls/s are
// made there, and the child keeps x of them where the marginal costs meet,
// 3·a·x² = RTT + 3·a·(20 − x)²: x = (RTT/(3a) + 400)/40.
func TestSolveFollowsTheCallTree(t *testing.T) {
	p := &Problem{
		Services: []Service{
			{Name: "parent", Latency: []Latency{{}, {A: 1e-4, B: 0.01, Capacity: 100}}, Children: []Child{{Service: 1, PerCall: 2}}},
			{Name: "child", Latency: []Latency{{A: 1e-4, B: 0.01, Capacity: 100}, {A: 1e-4, B: 0.01, Capacity: 100}}},
		},
		Arrivals: [][]float64{{5, 5}, nil},
		RTT:      [][]float64{{0, 0.05}, {0.05, 0}},
		Bytes:    []float64{0, 0},
	}
	routes, _, err := p.Solve(nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	st := p.newState()
	p.propagate(st, routes)
	if got := st.load[1][0] + st.load[1][1]; math.Abs(got-20) > 1e-9 {
		t.Errorf("the child serves %.3f calls/s, want 2 for each of the parent's 10", got)
	}
	if got, want := routes[1][1][1], (0.05/3e-4+400)/40/20; math.Abs(got-want) > 0.005 {
		t.Errorf("the child's calls from the parent's location stay there %.4f of the time, want %.4f", got, want)
	}
}

// Capacity binds: a location takes no more than it can serve, however
// much faster it is.
func TestSolveRespectsCapacity(t *testing.T) {
	p := &Problem{
		Services: []Service{{Name: "s", Latency: []Latency{{A: 1e-5, B: 0.5, Capacity: 100}, {A: 1e-5, B: 0.001, Capacity: 8}}}},
		Arrivals: [][]float64{{10, 0}},
		RTT:      [][]float64{{0, 0}, {0, 0}},
		Bytes:    []float64{0},
	}
	_, c, err := p.Solve(nil, 200)
	if err != nil || math.IsInf(c, 1) {
		t.Fatalf("cost %v, %v", c, err)
	}
	routes, _, _ := p.Solve(nil, 200)
	if got := 10 * routes[0][0][1]; got > 8.01 || got < 7 {
		t.Errorf("sent %.3f calls/s to a location that serves at most 8 (and is far faster)", got)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	p := &Problem{Services: []Service{{Name: "s", Latency: []Latency{{}, {}}}}, Arrivals: [][]float64{nil}, RTT: [][]float64{{0, 0}, {0, 0}}, Bytes: []float64{0}}
	if err := p.Validate(); err == nil {
		t.Error("a service placed nowhere passed")
	}
}

// BenchmarkSolve is a re-solve of a ten-service call tree over three
// locations (Online Boutique's size), 50 Frank-Wolfe steps.
func BenchmarkSolve(b *testing.B) {
	n, services := 3, 10
	p := &Problem{EgressWeight: 1}
	for s := range services {
		sv := Service{Name: "s"}
		for l := range n {
			sv.Latency = append(sv.Latency, Latency{A: 1e-4 * float64(1+l), B: 0.01 * float64(1+s%3), Capacity: 200})
		}
		if c := 2*s + 1; c < services {
			sv.Children = append(sv.Children, Child{Service: c, PerCall: 1.5})
		}
		if c := 2*s + 2; c < services {
			sv.Children = append(sv.Children, Child{Service: c, PerCall: 0.5})
		}
		p.Services = append(p.Services, sv)
		p.Bytes = append(p.Bytes, 2e4)
		p.Arrivals = append(p.Arrivals, nil)
	}
	p.Arrivals[0] = []float64{30, 10, 20}
	p.RTT = [][]float64{{0, 0.02, 0.05}, {0.02, 0, 0.03}, {0.05, 0.03, 0}}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := p.Solve(nil, 50); err != nil {
			b.Fatal(err)
		}
	}
}
