package multicloud

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/policy"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/metrics"
)

// mesh is a snapshot of a three-cloud mesh: clients call front (in every
// cloud), front calls back (in c1 and c2); RTTs 20, 40, 30 ms.
func mesh() *metrics.Snapshot {
	locs := []string{"c1", "c2", "c3"}
	rtt := [][]time.Duration{{0, 20, 40}, {20, 0, 30}, {40, 30, 0}}
	s := &metrics.Snapshot{Period: 10 * time.Second}
	for i, l := range locs {
		r := make([]time.Duration, 3)
		for j := range r {
			r[j] = rtt[i][j] * time.Millisecond
		}
		s.Locations = append(s.Locations, metrics.LocationStats{Name: l, RTT: r})
	}
	for _, name := range []string{"gateway", "front@c1", "front@c2", "front@c3", "back@c1", "back@c2"} {
		s.Services = append(s.Services, metrics.ServiceStats{Name: name, Replicas: 1, Ready: 1})
	}
	for _, e := range [][2]string{{"", "gateway"}, {"gateway", "front"}, {"front", "back"}} {
		for _, f := range locs {
			for _, t := range locs {
				s.Routes = append(s.Routes, metrics.RouteStats{Caller: e[0], Service: e[1], From: f, To: t})
			}
		}
	}
	return s
}

func TestTopology(t *testing.T) {
	topo, err := ReadTopology(mesh())
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{topo.Services[0].Name, topo.Services[1].Name}; !slices.Equal(got, []string{"front", "back"}) {
		t.Errorf("services %v, want front then back (call depth)", got)
	}
	if len(topo.Layers) != 2 || topo.Services[1].Placed(2) || !topo.Services[1].Placed(1) {
		t.Errorf("layers %v, back's parts %v", topo.Layers, topo.Services[1].Parts)
	}
	one := mesh()
	one.Locations = one.Locations[:1]
	if _, err := ReadTopology(one); err == nil {
		t.Error("one location: no error")
	}
}

// TestWeights: a request shift's sign is its direction; rows sum to 1;
// clouds the service is not in get nothing.
func TestWeights(t *testing.T) {
	topo, _ := ReadTopology(mesh())
	front, back := &topo.Services[0], &topo.Services[1]
	w := Weights(nil, []float64{0.3, -0.5, 0}, front) // pairs (c1,c2), (c1,c3), (c2,c3)
	want := [][]float64{{0.7, 0.3, 0}, {0, 1, 0}, {0.5, 0, 0.5}}
	for i := range want {
		for j := range want[i] {
			if math.Abs(w[i][j]-want[i][j]) > 1e-12 {
				t.Fatalf("weights %v, want %v", w, want)
			}
		}
	}
	w = Weights(nil, []float64{0.8, 0.6, 0}, front) // c1 sends 1.4: scaled to 1
	if math.Abs(w[0][1]-0.8/1.4) > 1e-12 || w[0][0] != 0 {
		t.Errorf("c1's row %v, want shares 0.8 and 0.6 scaled to sum 1", w[0])
	}
	w = Weights(nil, []float64{0, 0, 0}, back) // c3 has no back: even over c1, c2
	if w[2][0] != 0.5 || w[2][1] != 0.5 || w[2][2] != 0 {
		t.Errorf("c3's row %v, want even over the placed clouds", w[2])
	}
	// A two-way shift: a share per ordered pair (c1,c2), (c1,c3), (c2,c1),
	// (c2,c3), (c3,c1), (c3,c2), so that c1 and c2 send to each other.
	w = Weights(nil, []float64{0.2, 0.1, 0.3, 0, 0.25, 0.25}, front)
	want = [][]float64{{0.7, 0.2, 0.1}, {0.3, 0.7, 0}, {0.25, 0.25, 0.5}}
	for i := range want {
		for j := range want[i] {
			if math.Abs(w[i][j]-want[i][j]) > 1e-12 {
				t.Fatalf("two-way weights %v, want %v", w, want)
			}
		}
	}
	w = Weights(nil, []float64{0, 0.5, 0, 0.5, 0, 0}, back) // nothing to c3, which has no back
	if w[0][0] != 1 || w[1][1] != 1 || w[0][2] != 0 {
		t.Errorf("two-way weights to a cloud without the service: %v", w)
	}
}

// TestPriorityLoad checks Envoy's priority load against the table of its
// documentation (arch_overview/upstream/load_balancing/priority: healthy
// share of P0 and P1 -> traffic to P0 and P1, overprovisioning 1.4).
func TestPriorityLoad(t *testing.T) {
	for _, tc := range []struct{ p0, p1, want0, want1 int }{
		{100, 100, 100, 0}, {72, 72, 100, 0}, {71, 71, 99, 1}, {50, 50, 70, 30},
		{25, 100, 35, 65}, {25, 25, 50, 50}, {0, 0, 100, 0},
	} {
		got := priorityLoad([]int{health([2]int{tc.p0, 100}), health([2]int{tc.p1, 100})})
		if got[0] != tc.want0 || got[1] != tc.want1 {
			t.Errorf("healthy %d%%, %d%%: load %v, want [%d %d]", tc.p0, tc.p1, got, tc.want0, tc.want1)
		}
	}
}

func weightsOf(acts []control.Action, service, from string) map[string]float64 {
	for _, a := range acts {
		if r, ok := a.(control.SetRouteWeights); ok && r.Service == service && r.From == from {
			return r.Weights
		}
	}
	return nil
}

func TestBaselines(t *testing.T) {
	s := mesh()
	decide := func(name string) []control.Action {
		spec, err := policy.Parse(name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewBaseline(spec, 1)
		if err != nil {
			t.Fatal(err)
		}
		return c.Decide(0, s)
	}
	if w := weightsOf(decide("local"), "back", "c3"); len(w) != 1 || w["c2"] != 1 {
		t.Errorf("local: back from c3 %v, want all to c2, the nearest cloud with back", w)
	}
	if w := weightsOf(decide("even"), "front", "c1"); w["c1"] != w["c3"] || math.Abs(w["c2"]-1.0/3) > 1e-12 {
		t.Errorf("even: front from c1 %v", w)
	}
	if w := weightsOf(decide("spread:0.3"), "front", "c1"); math.Abs(w["c1"]-0.7) > 1e-12 || math.Abs(w["c2"]-0.15) > 1e-12 || math.Abs(w["c3"]-0.15) > 1e-12 {
		t.Errorf("spread:0.3: front from c1 %v, want 0.7 home, 0.15 to each other", w)
	}
	if w := weightsOf(decide("spread:0.3"), "back", "c3"); len(w) != 2 || math.Abs(w["c1"]-0.5) > 1e-12 || math.Abs(w["c2"]-0.5) > 1e-12 {
		t.Errorf("spread:0.3: back from c3, where it does not run, %v: want half to each cloud it runs in", w)
	}
	// Istio's distribute as a user writes it: the share away to the
	// nearest cloud (from c3: c2 at 30 ms, not c1 at 40).
	if w := weightsOf(decide("distribute:0.3"), "front", "c3"); len(w) != 2 || math.Abs(w["c3"]-0.7) > 1e-12 || math.Abs(w["c2"]-0.3) > 1e-12 {
		t.Errorf("distribute:0.3: front from c3 %v, want 0.7 home, 0.3 to c2", w)
	}
	if w := weightsOf(decide("distribute:0.3"), "back", "c3"); len(w) != 1 || w["c2"] != 1 {
		t.Errorf("distribute:0.3: back from c3, where it does not run, %v: want all to the nearest, c2", w)
	}
	// Locality: front@c1 has 1 of 4 instances ready: health 35%, so 35%
	// stays and 65% spills to the other clouds by their ready instances.
	s.Services[1].Replicas, s.Services[1].Ready = 4, 1
	s.Services[3].Ready = 0 // c3's instance is starting
	w := weightsOf(decide("locality"), "front", "c1")
	if math.Abs(w["c1"]-0.35) > 1e-12 || math.Abs(w["c2"]-0.65) > 1e-12 || w["c3"] != 0 {
		t.Errorf("locality: front from c1 %v, want c1 0.35, c2 0.65", w)
	}
	if _, err := NewBaseline(policy.Spec{Policy: &policy.Policy{Name: "hpa"}}, 1); err == nil {
		t.Error("not a baseline route: no error")
	}
}

// bowl is a model whose predicted time is lowest at shift (0.5, 0, 0).
type bowl struct{}

func (bowl) Predict(x []float64) float64 {
	s := x[len(x)-3:]
	return 10 + 100*((s[0]-0.5)*(s[0]-0.5)+s[1]*s[1]+s[2]*s[2])
}

// TestOptimiseFindsTheMinimum: 20 BO steps find a known optimum (within
// 0.02 of the 10 ms floor), and the trace never rises; a margin keeps the
// reference shift.
func TestOptimiseFindsTheMinimum(t *testing.T) {
	st := &State{Replicas: []float64{1, 1, 1}, RTT: []float64{20, 40, 30}, RPS: []float64{5, 5, 5}, Background: make([]float64, 3)}
	best, trace, err := Optimise(Fitted{Model: bowl{}, Standard: make([]float64, 5)}, st, 20, Limits{}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if got := (bowl{}).Predict(append(make([]float64, 17), best...)); got > 12 {
		t.Errorf("best %v predicts %.2f ms, want near 10", best, got)
	}
	for i := 1; i < len(trace); i++ {
		if trace[i] > trace[i-1] {
			t.Fatalf("trace rises: %v", trace)
		}
	}
	// A margin larger than the gain keeps the zero shift.
	best, _, _ = Optimise(Fitted{Model: bowl{}, Standard: make([]float64, 5), MAE: 100}, st, 20, Limits{}, rand.New(rand.NewPCG(1, 2)))
	if zero := []float64{0, 0, 0}; !slices.Equal(best, zero) {
		t.Errorf("with a 100 ms margin the shift is %v, want none", best)
	}
	// ... and the reference shift, when there is one.
	from := []float64{-0.3, 0.2, 0.1}
	best, _, _ = Optimise(Fitted{Model: bowl{}, Standard: make([]float64, 5), MAE: 100}, st, 20, Limits{From: from}, rand.New(rand.NewPCG(1, 2)))
	if !slices.Equal(best, from) {
		t.Errorf("with a 100 ms margin the shift is %v, want the reference %v", best, from)
	}
}

// ring is a model whose minimum is a two-way route: c1 and c2 send each
// other 0.3 of their calls (the last six inputs are a two-way shift).
type ring struct{}

func (ring) Predict(x []float64) float64 {
	s := x[len(x)-6:]
	y := 10 + 100*((s[0]-0.3)*(s[0]-0.3)+(s[2]-0.3)*(s[2]-0.3))
	for _, k := range []int{1, 3, 4, 5} {
		y += 100 * s[k] * s[k]
	}
	return y
}

// TestOptimiseTwoWay: BO over the two-way space finds a route no one-way
// shift expresses, two clouds sending to each other.
func TestOptimiseTwoWay(t *testing.T) {
	st := &State{Replicas: []float64{1, 1, 1}, RTT: []float64{20, 40, 30}, RPS: []float64{5, 5, 5}, Background: make([]float64, 3)}
	best, _, err := Optimise(Fitted{Model: ring{}, Standard: make([]float64, 5), Shift: ShiftTwoWay}, st, 40, Limits{}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if len(best) != 6 || best[0] < 0.1 || best[2] < 0.1 || (ring{}).Predict(best) > 16 {
		t.Errorf("best two-way shift %v predicts %.2f ms, want c1 and c2 sending each other about 0.3, near 10 ms", best, (ring{}).Predict(best))
	}
}

// TestControllerLayers: the controller routes one layer per period, then
// waits for the metrics to move beyond the threshold.
func TestControllerLayers(t *testing.T) {
	s := mesh()
	for i := range s.Routes {
		s.Routes[i].Calls = 100
	}
	models := map[string]Fitted{"front": {Model: bowl{}, Standard: make([]float64, 5)}, "back": {Model: bowl{}, Standard: make([]float64, 5)}}
	c := NewController(models, DefaultOptions())
	if w := weightsOf(c.Decide(0, s), "front", "c1"); w == nil || w["c2"] < 0.3 {
		t.Fatalf("first period: front from c1 %v, want a shift toward c2", w)
	}
	acts := c.Decide(10*time.Second, s)
	if weightsOf(acts, "back", "c1") == nil || weightsOf(acts, "front", "c1") != nil {
		t.Fatalf("second period: %v, want back's routes only", acts)
	}
	if acts := c.Decide(20*time.Second, s); acts != nil {
		t.Errorf("balanced and nothing moved: %v", acts)
	}
	s.Services[4].Replicas = 3 // back@c1 scaled up: beyond 20%
	if acts := c.Decide(30*time.Second, s); acts != nil {
		t.Errorf("between checks (every 20 s): %v", acts)
	}
	if acts := c.Decide(40*time.Second, s); weightsOf(acts, "front", "c1") == nil {
		t.Errorf("after a change the front layer is routed again: %v", acts)
	}
	if st := c.Stats(); st.Rebalances != 2 || st.Finished != 1 || st.Span != 10*time.Second {
		t.Errorf("stats %+v", st)
	}
}

// TestSystemBOSpendsAPeriodPerStep: BO on the system tries one shift per
// period per service, Steps of them, then moves to the next layer.
func TestSystemBOSpendsAPeriodPerStep(t *testing.T) {
	s := mesh()
	opt := DefaultOptions()
	opt.Steps = 3
	c := NewSystemBO(opt)
	for k := range 3 {
		if w := weightsOf(c.Decide(time.Duration(k)*10*time.Second, s), "front", "c1"); w == nil {
			t.Fatalf("step %d: no route for front", k)
		}
	}
	acts := c.Decide(30*time.Second, s) // front's best; back waits for its new rates
	if weightsOf(acts, "front", "c1") == nil || weightsOf(acts, "back", "c1") != nil {
		t.Errorf("after 3 steps: %v, want front's best only", acts)
	}
	if acts := c.Decide(40*time.Second, s); weightsOf(acts, "back", "c1") == nil {
		t.Errorf("next period: %v, want back's first try", acts)
	}
}

// TestNetPredictMatchesTheTape: the allocation-free inference equals the
// network recorded on a tape in evaluation mode.
func TestNetPredictMatchesTheTape(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := NewNet(rng, "s", 7)
	for _, bn := range n.Norms { // non-trivial running statistics
		for j := range bn.RunMean.Value.Data {
			bn.RunMean.Value.Data[j], bn.RunVar.Value.Data[j] = float32(rng.NormFloat64()), float32(0.5+rng.Float64())
		}
	}
	x := []float32{0.1, -0.2, 0.3, 1, -1, 0.5, 2}
	var tape nn.Tape[float32]
	in := tape.Input(1, 7)
	copy(in.Value.Data, x)
	want := n.Forward(&tape, in, false).Value.Data[0]
	if got := n.Predict(x); math.Abs(float64(got-want)) > 1e-4*math.Max(1, math.Abs(float64(want))) {
		t.Errorf("Predict %g, tape %g", got, want)
	}
	if a := testing.AllocsPerRun(100, func() { n.Predict(x) }); a != 0 {
		t.Errorf("Predict allocates %g times", a)
	}
}

// TestPolicyRoundTrip: a written policy reads back with the same
// predictions from both models.
func TestPolicyRoundTrip(t *testing.T) {
	for _, layout := range []string{ShiftOneWay, ShiftTwoWay} {
		t.Run(layout, func(t *testing.T) { roundTrip(t, layout) })
	}
}

func roundTrip(t *testing.T, layout string) {
	rng := rand.New(rand.NewPCG(5, 6))
	d := Inputs(3, 5, ShiftLen(3, layout))
	var x [][]float64
	var y []float64
	for range 40 {
		row := make([]float64, d)
		for j := range row {
			row[j] = rng.Float64()
		}
		x, y = append(x, row), append(y, 10*row[0]+row[d-1])
	}
	sm, err := FitSVR(x, y)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPolicy(Policy{Scenario: "t", Locations: []string{"a", "b", "c"}, Inputs: InputsPaper, Shift: layout,
		Services: []ServiceModel{{Name: "s", Standard: make([]float64, 5), SVRScaler: sm.Scaler, SVR: sm.M.Save(), NNScaler: nn.FitScaler(x),
			Test: map[string]Accuracy{"nn": {MAE: 2}, "svr": {MAE: 1}}}}}, rng)
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	q, err := ReadPolicy(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if q.Shift != p.Shift {
		t.Errorf("shift layout %q read back as %q", p.Shift, q.Shift)
	}
	for _, kind := range []string{"nn", "svr"} {
		a, _ := p.Models(kind)
		b, _ := q.Models(kind)
		if b["s"].Alt == nil {
			t.Errorf("%s: no model of the other kind beside it (the ensemble's)", kind)
		}
		if pa, pb := a["s"].Model.Predict(x[0]), b["s"].Model.Predict(x[0]); pa != pb || b["s"].MAE != a["s"].MAE {
			t.Errorf("%s: %g and margin %g before, %g and %g after", kind, pa, a["s"].MAE, pb, b["s"].MAE)
		}
	}
	if _, err := q.Models("gp"); err == nil {
		t.Error("unknown kind: no error")
	}
	if _, err := ReadPolicy(bytes.NewReader([]byte("{}\n"))); err == nil {
		t.Error("empty header: no error")
	}
}

// TestDerived: the derived inputs of a known route.
func TestDerived(t *testing.T) {
	st := &State{Replicas: []float64{1, 2, 1}, RTT: []float64{20, 40, 30}, RPS: []float64{10, 0, 0}, Background: []float64{0, 0.5, 0}}
	x := Features(nil, st, []float64{1, 2, 3, 4, 5}, []float64{0.5, 0, 0}) // c1 sends half to c2
	d := Derived(nil, x, 3, 5)
	extra := d[len(x):]
	want := []float64{10, 0.5, 0.5, 0, 5, 5, 0} // mean RTT 10 ms; shares; calls per replica at full speed
	for i := range want {
		if math.Abs(extra[i]-want[i]) > 1e-12 {
			t.Fatalf("derived %v, want %v", extra, want)
		}
	}
}

// TestChooseModel: the chosen kind is the one of lower held-out MAE, the
// SVR on a tie or where the network was not measured, the network where
// the SVR was not; a file's recorded Choice is what "chosen" runs.
func TestChooseModel(t *testing.T) {
	for _, c := range []struct {
		test map[string]Accuracy
		want string
	}{
		{map[string]Accuracy{KindNN: {MAE: 3}, KindSVR: {MAE: 4}}, KindNN},
		{map[string]Accuracy{KindNN: {MAE: 5}, KindSVR: {MAE: 4}}, KindSVR},
		{map[string]Accuracy{KindNN: {MAE: 4}, KindSVR: {MAE: 4}}, KindSVR},
		{map[string]Accuracy{KindNN: {MAE: 4}}, KindNN},
		{map[string]Accuracy{KindSVR: {MAE: 4}}, KindSVR},
	} {
		if got := Choose(c.test); got != c.want {
			t.Errorf("Choose(%v) = %s, want %s", c.test, got, c.want)
		}
	}
	p := NewPolicy(Policy{Locations: []string{"a", "b"}, Inputs: InputsPaper,
		Services: []ServiceModel{{Name: "s", Standard: []float64{1}, Choice: KindNN, Test: map[string]Accuracy{KindNN: {MAE: 9}, KindSVR: {MAE: 1}}}}}, rand.New(rand.NewPCG(1, 1)))
	m, err := p.Models(KindChosen)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["s"].Model.(*NNModel); !ok || m["s"].MAE != 9 {
		t.Errorf("chosen: %T with MAE %g, want the recorded choice, the network (MAE 9)", m["s"].Model, m["s"].MAE)
	}
}

// slope is a model that predicts less the more of c1's calls go to c2
// (shift[0] toward +1), whatever the load, and more for any other shift.
type slope struct{}

func (slope) Predict(x []float64) float64 {
	s := x[len(x)-3:]
	return 50 - 20*s[0] + 100*(s[1]*s[1]+s[2]*s[2])
}

// TestHeadroomKeepsLocationsUnderTheCap: a model that would move every
// call from c1 to c2 fills c2 past its capacity (60 calls per second at
// 10 ms on one replica: 0.6 busy before any of c1's 60) under the mean
// objective (limit 0); under a headroom of 0.7 the busiest location stays
// near it.
func TestHeadroomKeepsLocationsUnderTheCap(t *testing.T) {
	st := &State{Replicas: []float64{1, 1, 1}, RTT: []float64{20, 40, 30}, RPS: []float64{60, 60, 0}, Background: make([]float64, 3)}
	std := []float64{10, 11, 12, 13, 14}
	free, _, err := Optimise(Fitted{Model: slope{}, Standard: std}, st, 20, Limits{}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if u := Busiest(st, std, free); u < 1 {
		t.Errorf("the mean objective's shift %v leaves the busiest location at %.2f, want past 1", free, u)
	}
	capped, _, err := Optimise(Fitted{Model: slope{}, Standard: std}, st, 20, Limits{Utilisation: 0.7}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if u := Busiest(st, std, capped); u > 0.75 {
		t.Errorf("under a headroom of 0.7 the shift %v leaves the busiest location at %.2f", capped, u)
	}
}

// TestEgressBudgetCapsTheShareAway: the model that would send c1's calls
// to c2 sends half of them (a quarter of all calls) without a budget, and
// keeps the share sent away near a budget's 10% under one.
func TestEgressBudgetCapsTheShareAway(t *testing.T) {
	st := &State{Replicas: []float64{1, 1, 1}, RTT: []float64{20, 40, 30}, RPS: []float64{60, 60, 0}, Background: make([]float64, 3)}
	f := Fitted{Model: slope{}, Standard: []float64{1, 1, 1, 1, 1}}
	free, _, err := Optimise(f, st, 20, Limits{}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if a := Away(st, free, nil); a < 0.3 {
		t.Errorf("without a budget the shift %v sends %.2f of the calls away, want more than 0.3", free, a)
	}
	capped, _, err := Optimise(f, st, 20, Limits{Budget: true, Away: 0.1}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if a := Away(st, capped, nil); a > 0.11 {
		t.Errorf("under a budget of 10%% the shift %v sends %.2f of the calls away", capped, a)
	}
}

// TestEgressPrice: a price on the calls sent away keeps them home when it
// outweighs the model's gain (slope gains 40 ms per unit of the calls
// away), and not when it does not; the controller prices a service's calls
// by their measured bytes.
func TestEgressPrice(t *testing.T) {
	f := Fitted{Model: slope{}, Standard: []float64{1, 1, 1, 1, 1}}
	for _, tc := range []struct {
		egress   float64
		min, max float64
	}{{10, 0.3, 1}, {100, 0, 0.05}} {
		if best, a := sentAway(t, f, Limits{Egress: tc.egress}); a < tc.min || a > tc.max {
			t.Errorf("at %g ms per call away the shift %v sends %.2f away, want [%g, %g]", tc.egress, best, a, tc.min, tc.max)
		}
	}
	s := mesh()
	for i := range s.Routes {
		s.Routes[i].Calls, s.Routes[i].Bytes = 10, 10<<20 // 1 MiB a call
	}
	opt := DefaultOptions()
	opt.EgressPrice = 2
	if got := NewController(nil, opt).egress(s, "front"); math.Abs(got-2000.0/1024) > 1e-9 {
		t.Errorf("egress of a MiB a call at 2 s/GB: %g ms, want %g", got, 2000.0/1024)
	}
}

// flat predicts 50 ms whatever the shift: beside slope, an ensemble that
// agrees only on the zero shift.
type flat struct{}

func (flat) Predict([]float64) float64 { return 50 }

// TestUncertaintyKeepsWhereTheModelsAgree: slope gains 20 ms per unit of
// c1's calls sent to c2, but a second model sees no gain; weighted by
// their disagreement, BO keeps the calls home.
func TestUncertaintyKeepsWhereTheModelsAgree(t *testing.T) {
	f := Fitted{Model: slope{}, Alt: flat{}, Standard: []float64{1, 1, 1, 1, 1}}
	for _, tc := range []struct {
		k        float64
		min, max float64
	}{{0, 0.3, 1}, {2, 0, 0.05}} {
		if best, a := sentAway(t, f, Limits{Uncertainty: tc.k}); a < tc.min || a > tc.max {
			t.Errorf("uncertainty %g: the shift %v sends %.2f away, want [%g, %g]", tc.k, best, a, tc.min, tc.max)
		}
	}
}

// sentAway is the shift 20 BO steps choose under lim for two busy clouds
// (60 calls a second each, the third idle), and the share it sends away.
func sentAway(t *testing.T, f Fitted, lim Limits) ([]float64, float64) {
	t.Helper()
	st := &State{Replicas: []float64{1, 1, 1}, RTT: []float64{20, 40, 30}, RPS: []float64{60, 60, 0}, Background: make([]float64, 3)}
	best, _, err := Optimise(f, st, 20, lim, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return best, Away(st, best, nil)
}

// TestTriggerRebalancesBetweenChecks: a location whose measured
// utilisation crosses the trigger starts a rebalance before the next
// check; without the trigger, the controller waits for the check.
func TestTriggerRebalancesBetweenChecks(t *testing.T) {
	s := mesh()
	for i := range s.Routes {
		s.Routes[i].Calls = 100 // 30 calls a second to each cloud: 0.3 busy at 10 ms
	}
	std := []float64{10, 11, 12, 13, 14}
	for _, trigger := range []float64{0, 0.25, 0.5} {
		opt := DefaultOptions()
		opt.Trigger = trigger
		c := NewController(map[string]Fitted{"front": {Model: bowl{}, Standard: std}, "back": {Model: bowl{}, Standard: std}}, opt)
		c.Decide(0, s)
		c.Decide(10*time.Second, s) // the back layer: balanced
		acts := c.Decide(15*time.Second, s)
		if hot := trigger > 0 && trigger < 0.3; (weightsOf(acts, "front", "c1") != nil) != hot || (c.Stats().Triggered == 1) != hot {
			t.Errorf("trigger %g, 0.3 busy: actions %v, stats %+v; want a rebalance: %v", trigger, acts, c.Stats(), hot)
		}
	}
}

// TestEgressBudgetShare: a routed service may send away the share of its
// bytes per hour that the budget leaves after every other service's
// egress.
func TestEgressBudgetShare(t *testing.T) {
	const gb = 1 << 30
	c := &Controller{cycle: newCycle(Options{MaxEgressGBPerHour: 3})}
	c.topo = &Topology{Locations: []string{"a", "b"}, Services: []Service{{Name: "r", Parts: []int{0, 1}}, {Name: "q", Parts: []int{0, 1}}}}
	s := &metrics.Snapshot{Period: time.Hour, Routes: []metrics.RouteStats{
		{Service: "r", From: "a", To: "a", Bytes: 8 * gb},
		{Service: "r", From: "a", To: "b", Bytes: 2 * gb},
		{Service: "q", From: "b", To: "a", Bytes: 0.5 * gb}, // routed, sent away
		{Service: "u", From: "a", To: "b", Bytes: 1 * gb},   // not routed, sent away
		{Service: "u", From: "b", To: "b", Bytes: 5 * gb},   // kept home
	}}
	if got, ok := c.away(s, "r"); !ok || math.Abs(got-0.15) > 1e-12 {
		t.Errorf("share %g (budgeted %v), want (3 - 1 - 0.5) / 10 = 0.15", got, ok)
	}
	if got, ok := c.away(s, "q"); !ok || math.Abs(got-0) > 1e-12 {
		t.Errorf("q's share %g (budgeted %v), want (3 - 2 - 1) / 0.5 = 0", got, ok)
	}
	c.opt.MaxEgressGBPerHour = 0
	if _, ok := c.away(s, "r"); ok {
		t.Error("no budget: budgeted")
	}
}

// TestP95Objective: the p95 objective minimises the p95 model, and
// models without one are refused.
func TestP95Objective(t *testing.T) {
	f := Fitted{Model: slope{}, MAE: 1, P95: bowl{}, P95MAE: 2}
	if g := f.objective(ObjectiveP95); g.Model != (bowl{}) || g.MAE != 2 {
		t.Errorf("p95 objective: %T, MAE %g", g.Model, g.MAE)
	}
	if g := f.objective(ObjectiveHeadroom); g.Model != (slope{}) || g.MAE != 1 {
		t.Errorf("headroom objective: %T, MAE %g", g.Model, g.MAE)
	}
	opt := DefaultOptions()
	opt.Objective = ObjectiveP95
	if err := opt.Check(map[string]Fitted{"s": {Model: slope{}}}); err == nil || !strings.Contains(err.Error(), "no p95 model") {
		t.Errorf("p95 without p95 models: %v", err)
	}
	if err := opt.Check(map[string]Fitted{"s": f}); err != nil {
		t.Error(err)
	}
	opt.Objective = "p99"
	if err := opt.Check(nil); err == nil {
		t.Error("objective p99: no error")
	}
}

// The learned routes here are the registry's routes that run a file, and
// the baselines its routes that need neither a file nor a setting.
func TestRoutesAreTheRegistrys(t *testing.T) {
	for _, p := range policy.All() {
		if p.Kind != policy.Route {
			continue
		}
		_, learned := LearnedRoutes[p.Name]
		if learned != (p.File == policy.NeedsFile) {
			t.Errorf("%s: in LearnedRoutes %v, runs a file %v", p.Name, learned, p.File == policy.NeedsFile)
		}
	}
	for name := range LearnedRoutes {
		if p, ok := policy.Lookup(name); !ok || p.Kind != policy.Route {
			t.Errorf("learned route %s is not a registered route", name)
		}
	}
	// slate is control/slate's, which imports this package: experiment
	// builds it.
	if got := Baselines(); !slices.Equal(got, []string{"local", "even", "locality", "bo-system", "random", "slate"}) {
		t.Errorf("baselines %v", got)
	}
}
