package bo

import (
	"math/rand/v2"
	"testing"
)

func hartmannData(n int, seed uint64) ([][]float64, []float64) {
	rng := rand.New(rand.NewPCG(seed, 0))
	x := make([][]float64, n)
	y := make([]float64, n)
	for i := range x {
		x[i] = make([]float64, 6)
		for j := range x[i] {
			x[i][j] = rng.Float64()
		}
		y[i] = hartmann6(x[i]) + 0.01*rng.NormFloat64()
	}
	return x, y
}

// BenchmarkGPFit fits a Matérn-5/2 ARD GP to 200 points in 6 dimensions,
// including the multi-start L-BFGS hyperparameter optimisation (default
// config: 5 starts).
func BenchmarkGPFit(b *testing.B) {
	x, y := hartmannData(200, 1)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := FitGP(x, y, DefaultGPConfig(), rand.New(rand.NewPCG(uint64(i), 0))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGPLogMarginalLikelihood is one objective evaluation of the fit
// (value and gradient) on 200 points in 6 dimensions.
func BenchmarkGPLogMarginalLikelihood(b *testing.B) {
	x, y := hartmannData(200, 1)
	h := Hyper{LengthScales: []float64{0.3, 0.3, 0.3, 0.3, 0.3, 0.3}, SignalVariance: 1, NoiseVariance: 0.01}
	grad := make([]float64, 8)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LogMarginalLikelihood(grad, Matern52, x, y, h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGPPredict is one posterior mean and variance on a 200-point,
// 6-dimensional GP.
func BenchmarkGPPredict(b *testing.B) {
	x, y := hartmannData(200, 1)
	g, err := FitGP(x, y, DefaultGPConfig(), rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		b.Fatal(err)
	}
	p := []float64{0.2, 0.15, 0.48, 0.28, 0.31, 0.66}
	b.ReportAllocs()
	for b.Loop() {
		g.Predict(p)
	}
}

// BenchmarkGPPredictGrad is Predict plus input gradients of mean and variance.
func BenchmarkGPPredictGrad(b *testing.B) {
	x, y := hartmannData(200, 1)
	g, err := FitGP(x, y, DefaultGPConfig(), rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		b.Fatal(err)
	}
	p := []float64{0.2, 0.15, 0.48, 0.28, 0.31, 0.66}
	dm, dv := make([]float64, 6), make([]float64, 6)
	b.ReportAllocs()
	for b.Loop() {
		g.PredictGrad(dm, dv, p)
	}
}

// BenchmarkBayesOptAsk is one Ask (objective refit plus acquisition
// maximisation) with 60 Hartmann-6 observations.
func BenchmarkBayesOptAsk(b *testing.B) {
	lo, hi := make([]float64, 6), make([]float64, 6)
	for i := range hi {
		hi[i] = 1
	}
	x, y := hartmannData(60, 2)
	opt, err := NewBayesOpt(Config{Space: continuousSpace(lo, hi), InitialPoints: 1}, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := opt.Ask(); err != nil {
		b.Fatal(err)
	}
	opt.ClearPending()
	for i := range x {
		if err := opt.Tell(x[i], y[i], nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := opt.Ask(); err != nil {
			b.Fatal(err)
		}
		opt.ClearPending() // each Ask sees the same 60 observations and no fantasies
	}
}
