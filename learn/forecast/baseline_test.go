package forecast

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSeasonalNaiveExactOnPeriodicSeries: on a series of period S the
// seasonal naive forecast is exact at every horizon, also beyond one
// season, and LastValue is not.
func TestSeasonalNaiveExactOnPeriodicSeries(t *testing.T) {
	const S, H, n = 7, 16, 200
	rng := rand.New(rand.NewPCG(3, 0))
	cycle := make([][]float64, S)
	for i := range cycle {
		cycle[i] = []float64{1 + rng.Float64(), 10 + rng.Float64()}
	}
	series := make([][]float64, n)
	for i := range series {
		series[i] = cycle[i%S]
	}
	sn, err := Evaluate(NewSeasonalNaive(2, H, S), series, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	last, err := Evaluate(NewLastValue(2, H), series, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	for h := 1; h <= H; h++ {
		if sn.MSE(h) != 0 || sn.MAPE(h) != 0 {
			t.Errorf("seasonal naive %d ahead: MSE %g, MAPE %g; want 0", h, sn.MSE(h), sn.MAPE(h))
		}
		if h%S != 0 && !(last.MSE(h) > 0.01) {
			t.Errorf("last value %d ahead: MSE %g; a periodic series should defeat it", h, last.MSE(h))
		}
	}
	if all, kept := sn.Pairs(H); all != 2*(n-100-H+1) || kept != all {
		t.Errorf("pairs %d ahead: %d, %d in MAPE; want %d, all", H, all, kept, 2*(n-100-H+1))
	}
}

// TestLastValueOnRamp: on y_t = a + b·t the persistence forecast h ahead
// misses by exactly b·h, which fixes both error measures.
func TestLastValueOnRamp(t *testing.T) {
	const a, b, H, n, start = 50.0, 0.5, 4, 60, 40
	series := make([][]float64, n)
	for i := range series {
		series[i] = []float64{a + b*float64(i)}
	}
	e, err := Evaluate(NewLastValue(1, H), series, start, 0)
	if err != nil {
		t.Fatal(err)
	}
	for h := 1; h <= H; h++ {
		if got, want := e.MSE(h), b*b*float64(h*h); got != want {
			t.Errorf("MSE %d ahead: %g, want %g", h, got, want)
		}
		var mape float64
		for s := start + h - 1; s < n; s++ {
			mape += b * float64(h) / (a + b*float64(s))
		}
		mape *= 100 / float64(n-start-h+1)
		if got := e.MAPE(h); math.Abs(got-mape) > 1e-12*mape {
			t.Errorf("MAPE %d ahead: %g, want %g", h, got, mape)
		}
	}
}

// TestMAPEFloor: actuals below the floor (a fraction of the test
// segment's mean) are left out of MAPE and kept in MSE.
func TestMAPEFloor(t *testing.T) {
	// The test segment alternates 0 and 10 (mean 5); forecasts are the
	// previous value, so every pair misses by 10.
	series := make([][]float64, 20)
	for i := range series {
		series[i] = []float64{float64(10 * (i % 2))}
	}
	e, err := Evaluate(NewLastValue(1, 1), series, 10, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if e.Floor[0] != 0.5 {
		t.Errorf("floor %g, want 0.1 × mean 5", e.Floor[0])
	}
	if all, kept := e.Pairs(1); all != 10 || kept != 5 {
		t.Errorf("pairs %d, %d in MAPE; want 10 and 5 (the zeros left out)", all, kept)
	}
	if e.MAPE(1) != 100 || e.MSE(1) != 100 {
		t.Errorf("MAPE %g%%, MSE %g; want 100 and 100", e.MAPE(1), e.MSE(1))
	}
	// A series that is zero throughout has no MAPE at all.
	zero := make([][]float64, 20)
	for i := range zero {
		zero[i] = []float64{0}
	}
	if e, _ := Evaluate(NewLastValue(1, 1), zero, 10, 0); !math.IsNaN(e.MAPE(1)) || e.MSE(1) != 0 {
		t.Errorf("all zeros: MAPE %g, MSE %g; want NaN and 0", e.MAPE(1), e.MSE(1))
	}
}

func TestEvaluateRejects(t *testing.T) {
	series := [][]float64{{1}, {2}, {3}, {4}, {5}}
	sn := NewSeasonalNaive(1, 1, 3)
	for _, c := range []struct {
		name   string
		series [][]float64
		start  int
		floor  float64
	}{
		{"start within the window", series, 2, 0},
		{"start at the end", series, 5, 0},
		{"negative floor", series, 3, -1},
		{"ragged row", [][]float64{{1}, {2}, {3}, {4, 4}, {5}}, 3, 0},
		{"not finite", [][]float64{{1}, {2}, {math.NaN()}, {4}, {5}}, 3, 0},
	} {
		if _, err := Evaluate(sn, c.series, c.start, c.floor); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

func TestBaselinesAllocateNothing(t *testing.T) {
	series := make([][]float64, 50)
	for i := range series {
		series[i] = []float64{float64(i), float64(2 * i)}
	}
	for _, f := range []Forecaster{NewLastValue(2, 5), NewSeasonalNaive(2, 5, 24)} {
		dst := make([]float64, 10)
		if n := testing.AllocsPerRun(100, func() { f.Predict(dst, series) }); n != 0 {
			t.Errorf("%T.Predict: %g allocations, want 0", f, n)
		}
	}
}
