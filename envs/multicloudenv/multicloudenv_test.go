package multicloudenv

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/scenario"
)

func bookinfo(t *testing.T) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Lookup("bookinfo")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestStandardRisesWithTheRate: a service's standard processing time grows
// with the rate it serves (a queue), and productpage, the slowest service,
// is the slowest.
func TestStandardRisesWithTheRate(t *testing.T) {
	std, err := Standard(context.Background(), bookinfo(t), 1, DefaultConfig().StandardWindow)
	if err != nil {
		t.Fatal(err)
	}
	pp := std["productpage"]
	if len(pp) != len(multicloud.StandardRPS) || pp[len(pp)-1] <= pp[0] {
		t.Errorf("productpage's standard times %v: want one per rate, rising", pp)
	}
	if std["details"][0] >= pp[0] {
		t.Errorf("details %v ms, productpage %v ms: want productpage slower", std["details"][0], pp[0])
	}
}

// TestCollect: every routed service gets a sample per period with the
// model's input length, a response time above the RTT-free floor and a
// p95.
func TestCollect(t *testing.T) {
	c := DefaultCollection()
	c.Periods = 20
	d, err := Collect(context.Background(), bookinfo(t), c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Services) != 6 || d.Services[0] != "productpage" {
		t.Fatalf("services %v", d.Services)
	}
	for _, name := range d.Services {
		s := d.Samples[name]
		if len(s) < 15 {
			t.Errorf("%s: %d samples of 20 periods", name, len(s))
		}
		for _, x := range s {
			// The p95 of the whole response time is at least the mean of
			// its own part.
			if len(x.X) != multicloud.Inputs(3, 5, multicloud.Pairs(3)) || !(x.Y > 1) || !(x.P95 >= x.Y) {
				t.Fatalf("%s: sample %+v", name, x)
			}
		}
	}
	online := c
	online.Random = false
	if d, err = Collect(context.Background(), bookinfo(t), online, nil, nil); err != nil || len(d.Samples["details"]) == 0 {
		t.Errorf("online settings: %v, %d samples", err, len(d.Samples["details"]))
	}
}

// TestEvaluate checks R², MSE and MAE on known predictions.
func TestEvaluate(t *testing.T) {
	s := []Sample{{X: []float64{1}, Y: 1}, {X: []float64{2}, Y: 2}, {X: []float64{3}, Y: 3}}
	if a := Evaluate(identity{}, s); a.R2 != 1 || a.MSE != 0 || a.MAE != 0 {
		t.Errorf("perfect model: %+v", a)
	}
	if a := Evaluate(constant(2), s); a.R2 != 0 || math.Abs(a.MSE-2.0/3) > 1e-12 || math.Abs(a.MAE-2.0/3) > 1e-12 {
		t.Errorf("the mean: %+v, want R² 0, MSE and MAE 2/3", a)
	}
}

type identity struct{}

func (identity) Predict(x []float64) float64 { return x[0] }

type constant float64

func (c constant) Predict([]float64) float64 { return float64(c) }

// TestTrainSmall trains both models on a small data set: a policy for the
// six routed services whose SVR explains some of the details service's
// response time on the held-out samples.
func TestTrainSmall(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Collection.Periods, cfg.Epochs = 120, 3
	res, err := Train(context.Background(), bookinfo(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Policy.Services); n != 6 {
		t.Fatalf("%d services", n)
	}
	if a := res.Test["details"]["svr"]; !(a.R2 > 0.3) || a.N == 0 {
		t.Errorf("details' SVR on the test split: %+v, want R² above 0.3", a)
	}
	if a := res.Test["details"][multicloud.KindP95]; a.N == 0 || !(a.MAE > 0) {
		t.Errorf("details' p95 model on the test split: %+v", a)
	}
	for _, kind := range []string{"nn", "svr"} {
		models, err := res.Policy.Models(kind)
		if err != nil {
			t.Fatal(err)
		}
		x := res.Data.Samples["details"][0].X
		if y := models["details"].Model.Predict(x); math.IsNaN(y) || math.IsInf(y, 0) {
			t.Errorf("%s predicts %g", kind, y)
		}
		if y := models["details"].P95.Predict(x); !(y > 0) || math.IsInf(y, 0) {
			t.Errorf("the p95 model predicts %g", y)
		}
	}
}

// TestRandomTwoWayShift: a two-way shift's shares are in [0, 1] and each
// cloud sends at most all of its calls away; small ones at most a quarter;
// large ones cover the simplex, up to nearly everything away.
func TestRandomTwoWayShift(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var shift []float64
	most := 0.0
	for k := range 2000 {
		small := k%2 == 1
		shift = randomShift(shift, 3, multicloud.ShiftTwoWay, small, rng)
		if len(shift) != 6 {
			t.Fatalf("a two-way shift of 3 clouds has %d values, want 6", len(shift))
		}
		for i := range 3 {
			away := shift[2*i] + shift[2*i+1]
			if shift[2*i] < 0 || shift[2*i+1] < 0 || away > 1+1e-12 || (small && away > 0.25) {
				t.Fatalf("cloud %d sends %v away (small %v)", i, shift[2*i:2*i+2], small)
			}
			most = max(most, away)
		}
	}
	if most < 0.95 {
		t.Errorf("the most any cloud sent away in 2000 draws is %.2f, want near all", most)
	}
}
