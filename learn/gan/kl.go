package gan

import (
	"math"
	"slices"
)

// KL returns KL(real || generated) for each continuous column (histograms
// of bins equal bins over the real column's 1st to 99th percentile range,
// the outer bins open) and, last, for the class: the per-measure figures
// of the paper's Table 1. Empty bins get eps mass.
func KL(real, gen Data, bins int) []float64 {
	const eps = 1e-4
	var out []float64
	for j := range real.Cont[0] {
		col := func(d Data) []float64 {
			c := make([]float64, len(d.Cont))
			for i, r := range d.Cont {
				c[i] = r[j]
			}
			return c
		}
		rc, gc := col(real), col(gen)
		lo, hi := quantile(rc, 0.01), quantile(rc, 0.99)
		out = append(out, klHist(histogram(rc, lo, hi, bins), histogram(gc, lo, hi, bins), eps))
	}
	freq := func(d Data) []float64 {
		h := make([]float64, real.Classes)
		for _, c := range d.Class {
			h[c]++
		}
		return normalise(h)
	}
	return append(out, klHist(freq(real), freq(gen), eps))
}

func histogram(x []float64, lo, hi float64, bins int) []float64 {
	h := make([]float64, bins)
	for _, v := range x {
		h[bin(v, lo, hi, bins)]++
	}
	return normalise(h)
}

// bin is v's bin of bins equal ones over [lo, hi], the outer ones open.
func bin(v, lo, hi float64, bins int) int {
	i := 0
	if w := (hi - lo) / float64(bins); w > 0 {
		i = int(math.Floor((v - lo) / w))
	}
	return min(max(i, 0), bins-1)
}

func normalise(h []float64) []float64 {
	s := 0.0
	for _, v := range h {
		s += v
	}
	for i := range h {
		h[i] /= max(s, 1)
	}
	return h
}

func klHist(p, q []float64, eps float64) float64 {
	var s, sp, sq float64
	for i := range p {
		sp += p[i] + eps
		sq += q[i] + eps
	}
	for i := range p {
		a, b := (p[i]+eps)/sp, (q[i]+eps)/sq
		s += a * math.Log(a/b)
	}
	return s
}

func quantile(x []float64, q float64) float64 {
	s := append([]float64(nil), x...)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// PairKL is the mean, over every pair of continuous columns, of KL(real ||
// generated) between their joint histograms (bins x bins over the real
// columns' 1st to 99th percentile ranges, the outer bins open): what the
// per-column KL cannot see, whether the columns move together as the
// real ones do.
func PairKL(real, gen Data, bins int) float64 {
	const eps = 1e-4
	d := len(real.Cont[0])
	lo, hi := make([]float64, d), make([]float64, d)
	for j := range d {
		c := make([]float64, len(real.Cont))
		for i, r := range real.Cont {
			c[i] = r[j]
		}
		lo[j], hi[j] = quantile(c, 0.01), quantile(c, 0.99)
	}
	hist := func(x Data, a, b int) []float64 {
		h := make([]float64, bins*bins)
		for _, r := range x.Cont {
			h[bin(r[a], lo[a], hi[a], bins)*bins+bin(r[b], lo[b], hi[b], bins)]++
		}
		return normalise(h)
	}
	var sum float64
	pairs := 0
	for a := range d {
		for b := a + 1; b < d; b++ {
			sum += klHist(hist(real, a, b), hist(gen, a, b), eps)
			pairs++
		}
	}
	return sum / float64(max(pairs, 1))
}
