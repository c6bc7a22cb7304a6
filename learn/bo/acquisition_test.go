package bo

import (
	"math"
	"testing"
)

func TestExpectedImprovementValues(t *testing.T) {
	phi0 := 1 / math.Sqrt(2*math.Pi)
	cases := []struct {
		mean, sd, best, want float64
	}{
		{0, 1, 0, phi0},     // z = 0: EI = σ φ(0)
		{0, 2, 0, 2 * phi0}, // scales with σ
		{1, 1, 2, 1*0.8413447460685429 + 0.24197072451914337}, // z = 1: Φ(1) + φ(1)
		{0, 0, 1, 1},                      // deterministic improvement
		{2, 0, 1, 0},                      // deterministic, no improvement
		{3, 1, 0, 0.00038215431704772054}, // z = −3: φ(3) − 3(1−Φ(3)) = 0.00443185 − 3·0.00134990
	}
	for _, c := range cases {
		got := ExpectedImprovement(c.mean, c.sd, c.best)
		if math.Abs(got-c.want) > 1e-9 {
			t.Errorf("EI(%g, %g, %g) = %.12g, want %.12g", c.mean, c.sd, c.best, got, c.want)
		}
	}
}

// TestLogEIFarTail compares LogExpectedImprovement far below the incumbent with
// the asymptotic series h(z) ≈ φ(z)/z² (1 − 3/z² + 15/z⁴ − 105/z⁶) and
// checks continuity across the switch at z = −5.
func TestLogEIFarTail(t *testing.T) {
	for _, z := range []float64{-12, -20, -40, -100} {
		lg, _, _ := LogExpectedImprovement(-z, 1, 0)
		z2 := z * z
		series := (1 - 3/z2 + 15/(z2*z2) - 105/(z2*z2*z2))
		want := -0.5*z2 - 0.5*math.Log(2*math.Pi) - math.Log(z2) + math.Log(series)
		if math.Abs(lg-want) > 1e-5 {
			t.Errorf("z=%g: log EI = %.10g, asymptotic %.10g", z, lg, want)
		}
	}
	a, _, _ := LogExpectedImprovement(5-1e-9, 1, 0)
	b, _, _ := LogExpectedImprovement(5+1e-9, 1, 0)
	if math.Abs(a-b) > 1e-7 {
		t.Errorf("log EI discontinuous at z=-5: %g vs %g", a, b)
	}
	// Where EI is representable both must agree.
	for _, m := range []float64{-2, 0, 3, 7, 15} {
		lg, _, _ := LogExpectedImprovement(m, 1.3, 0.5)
		if d := math.Abs(lg - math.Log(ExpectedImprovement(m, 1.3, 0.5))); d > 1e-9 {
			t.Errorf("mean %g: log EI differs from log(EI) by %g", m, d)
		}
	}
}

func TestLogEIGradient(t *testing.T) {
	for _, c := range [][3]float64{{0, 1, 0}, {1, 0.5, 0}, {4, 0.7, 0}, {30, 1, 0}, {-2, 2, 0}} {
		_, dm, ds := LogExpectedImprovement(c[0], c[1], c[2])
		const eps = 1e-6
		fp, _, _ := LogExpectedImprovement(c[0]+eps, c[1], c[2])
		fm, _, _ := LogExpectedImprovement(c[0]-eps, c[1], c[2])
		gp, _, _ := LogExpectedImprovement(c[0], c[1]+eps, c[2])
		gm, _, _ := LogExpectedImprovement(c[0], c[1]-eps, c[2])
		if fd := (fp - fm) / (2 * eps); math.Abs(fd-dm) > 1e-5*math.Max(1, math.Abs(fd)) {
			t.Errorf("%v: dmean %g, finite difference %g", c, dm, fd)
		}
		if fd := (gp - gm) / (2 * eps); math.Abs(fd-ds) > 1e-5*math.Max(1, math.Abs(fd)) {
			t.Errorf("%v: dsd %g, finite difference %g", c, ds, fd)
		}
	}
}

func TestProbabilityOfFeasibility(t *testing.T) {
	cases := []struct{ mean, sd, want float64 }{
		{0, 1, 0.5},
		{-1, 1, 0.8413447460685429},
		{2, 1, 0.022750131948179195},
		{-1, 0, 1},
		{1, 0, 0},
	}
	for _, c := range cases {
		if got := ProbabilityOfFeasibility(c.mean, c.sd); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("PoF(%g, %g) = %g, want %g", c.mean, c.sd, got, c.want)
		}
	}
	for _, z := range []float64{-3, -6, -30} {
		lp, dlp := logPhi(z)
		if z > -30 {
			if want := math.Log(0.5 * math.Erfc(-z/math.Sqrt2)); math.Abs(lp-want) > 1e-9 {
				t.Errorf("logPhi(%g) = %g, want %g", z, lp, want)
			}
		}
		lp2, _ := logPhi(z + 1e-6)
		lp1, _ := logPhi(z - 1e-6)
		if fd := (lp2 - lp1) / 2e-6; math.Abs(fd-dlp) > 1e-4*math.Abs(fd) {
			t.Errorf("logPhi'(%g) = %g, finite difference %g", z, dlp, fd)
		}
	}
}
