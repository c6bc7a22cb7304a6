package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestTimeAverageStep(t *testing.T) {
	// Signal: 0 on [0,1s), 2 on [1s,3s), 5 on [3s,4s), 4 on [4s,...).
	var a TimeAverage
	a.Set(1*time.Second, 2)
	a.Set(3*time.Second, 5)
	a.Add(4*time.Second, -1)
	if a.Value() != 4 {
		t.Fatalf("Value = %g, want 4", a.Value())
	}
	steps := []struct {
		now            time.Duration
		integral, mean float64
	}{
		{4 * time.Second, 9, 9.0 / 4},     // 0*1 + 2*2 + 5*1
		{6 * time.Second, 17, 17.0 / 6},   // + 4*2
		{10 * time.Second, 33, 33.0 / 10}, // + 4*4
	}
	for _, s := range steps {
		if got := a.Integral(s.now); math.Abs(got-s.integral) > 1e-12 {
			t.Errorf("Integral(%v) = %g, want %g", s.now, got, s.integral)
		}
		if got := a.Mean(s.now); math.Abs(got-s.mean) > 1e-12 {
			t.Errorf("Mean(%v) = %g, want %g", s.now, got, s.mean)
		}
	}
	// Reading before the next change, between changes.
	var b TimeAverage
	if b.Mean(0) != 0 || b.Integral(0) != 0 {
		t.Errorf("zero value: Mean(0) %g Integral(0) %g", b.Mean(0), b.Integral(0))
	}
	b.Set(1*time.Second, 2)
	if b.Integral(2*time.Second) != 2 || b.Mean(2*time.Second) != 1 {
		t.Errorf("0 then 2 from 1s: Integral(2s) %g Mean(2s) %g, want 2 1", b.Integral(2*time.Second), b.Mean(2*time.Second))
	}
	// New window at 6s: the value 4 is kept.
	a.Restart(6 * time.Second)
	if a.Start() != 6*time.Second || a.Mean(6*time.Second) != 4 || a.Mean(8*time.Second) != 4 || a.Integral(8*time.Second) != 8 {
		t.Errorf("after Restart: start %v mean %g/%g integral %g", a.Start(), a.Mean(6*time.Second), a.Mean(8*time.Second), a.Integral(8*time.Second))
	}
	a.Set(7*time.Second, 0) // 4 on [6,7), 0 on [7,8)
	if got := a.Mean(8 * time.Second); got != 2 {
		t.Errorf("Mean over [6s,8s] = %g, want 2", got)
	}
	if n := testing.AllocsPerRun(100, func() { a.Add(9*time.Second, 1); _ = a.Mean(9 * time.Second) }); n != 0 {
		t.Errorf("TimeAverage allocates %v", n)
	}
}

// TestLittleMM1 simulates an M/M/1 FIFO queue (lambda 0.5, mu 1) with TimeAverage tracking the
// number in system and a Histogram of sojourn times, and checks queueing theory: L = rho/(1-rho) = 1,
// W = 1/(mu-lambda) = 2, sojourn time exponential with rate mu-lambda, and Little's law on the
// sample path (the area under N(t) equals the sum of sojourn times when the run ends empty).
func TestLittleMM1(t *testing.T) {
	const lambda, mu, n = 0.5, 1.0, 400000
	rng := rand.New(rand.NewPCG(2026, 11))
	arr := make([]time.Duration, n)
	dep := make([]time.Duration, n)
	var at, prevDep time.Duration
	for i := range n {
		at += time.Duration(rng.ExpFloat64() / lambda * 1e9)
		start := max(at, prevDep)
		prevDep = start + time.Duration(rng.ExpFloat64()/mu*1e9)
		arr[i], dep[i] = at, prevDep
	}
	var inSystem TimeAverage
	var sojourn Histogram
	i, j := 0, 0
	for j < n {
		if i < n && arr[i] < dep[j] {
			inSystem.Add(arr[i], 1)
			i++
		} else {
			inSystem.Add(dep[j], -1)
			sojourn.Record((dep[j] - arr[j]).Seconds())
			j++
		}
	}
	end := dep[n-1]
	if inSystem.Value() != 0 {
		t.Fatalf("system not empty at the end: %g", inSystem.Value())
	}
	if relErr(inSystem.Integral(end), sojourn.Sum()) > 1e-9 {
		t.Errorf("sample-path Little: area %g != sum of sojourns %g", inSystem.Integral(end), sojourn.Sum())
	}
	L, W := inSystem.Mean(end), sojourn.Mean()
	t.Logf("M/M/1 lambda 0.5 mu 1, %d customers: L = %.4f (theory 1), W = %.4f (theory 2), p90 = %.4f (theory %.4f)",
		n, L, W, sojourn.Quantile(0.9), math.Log(10)/(mu-lambda))
	if relErr(L, 1) > 0.04 || relErr(W, 2) > 0.04 {
		t.Errorf("L = %g (theory 1), W = %g (theory 2)", L, W)
	}
	for _, q := range []float64{0.5, 0.9, 0.99} {
		want := -math.Log1p(-q) / (mu - lambda)
		if got := sojourn.Quantile(q); relErr(got, want) > 0.04 {
			t.Errorf("sojourn Quantile(%g) = %g, theory %g", q, got, want)
		}
	}
}
