package gan

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/nn"
)

// Mixture is a Gaussian mixture with diagonal covariances fitted by EM,
// the baseline of the edge scheduling paper's Table 1 (GMM, 10 clusters).
// It models the class as one more numeric column, rounded when sampling.
type Mixture struct {
	weights     []float64
	means, vars [][]float64
	scale       nn.Scaler // of the columns, the class last
	classes     int
	rng         *rand.Rand
}

// FitMixture fits k components to data by EM for iters iterations, from
// k rows drawn at random.
func FitMixture(data Data, k, iters int, seed uint64) (*Mixture, error) {
	n := len(data.Cont)
	if n < k || k < 1 {
		return nil, fmt.Errorf("gan: a mixture of %d components needs at least as many rows, got %d", k, n)
	}
	rows := make([][]float64, n)
	for i, r := range data.Cont {
		rows[i] = append(append([]float64(nil), r...), float64(data.Class[i]))
	}
	m := &Mixture{classes: data.Classes, rng: rand.New(rand.NewPCG(seed, 0x676d6d))}
	m.scale = nn.FitScaler(rows)
	for _, r := range rows {
		m.scale.Apply(r, r)
	}
	d := len(rows[0])
	for _, i := range m.rng.Perm(n)[:k] {
		m.means = append(m.means, append([]float64(nil), rows[i]...))
		v := make([]float64, d)
		for j := range v {
			v[j] = 1
		}
		m.vars = append(m.vars, v)
		m.weights = append(m.weights, 1/float64(k))
	}
	resp := make([][]float64, n)
	for i := range resp {
		resp[i] = make([]float64, k)
	}
	for range iters {
		for i, r := range rows { // E: responsibilities, in log space
			top := math.Inf(-1)
			for c := range k {
				resp[i][c] = math.Log(m.weights[c]) + logNormal(r, m.means[c], m.vars[c])
				top = max(top, resp[i][c])
			}
			sum := 0.0
			for c := range k {
				resp[i][c] = math.Exp(resp[i][c] - top)
				sum += resp[i][c]
			}
			for c := range k {
				resp[i][c] /= sum
			}
		}
		for c := range k { // M
			nc := 0.0
			mu := make([]float64, d)
			for i, r := range rows {
				nc += resp[i][c]
				for j, v := range r {
					mu[j] += resp[i][c] * v
				}
			}
			if nc < 1e-9 {
				continue
			}
			for j := range mu {
				mu[j] /= nc
			}
			vr := make([]float64, d)
			for i, r := range rows {
				for j, v := range r {
					vr[j] += resp[i][c] * (v - mu[j]) * (v - mu[j])
				}
			}
			for j := range vr {
				vr[j] = vr[j]/nc + 1e-6
			}
			m.weights[c], m.means[c], m.vars[c] = nc/float64(n), mu, vr
		}
	}
	return m, nil
}

func logNormal(x, mu, vr []float64) float64 {
	s := 0.0
	for j, v := range x {
		s += -0.5*math.Log(2*math.Pi*vr[j]) - (v-mu[j])*(v-mu[j])/(2*vr[j])
	}
	return s
}

// Generate samples n rows.
func (m *Mixture) Generate(n int) Data {
	out := Data{Classes: m.classes}
	d := len(m.scale.Mean)
	for range n {
		u, c := m.rng.Float64(), 0
		for c < len(m.weights)-1 && u >= m.weights[c] {
			u -= m.weights[c]
			c++
		}
		row := make([]float64, d-1)
		for j := range d {
			v := m.scale.Invert(j, m.means[c][j]+math.Sqrt(m.vars[c][j])*m.rng.NormFloat64())
			if j == d-1 {
				out.Class = append(out.Class, min(max(int(math.Round(v)), 0), m.classes-1))
				continue
			}
			row[j] = v
		}
		out.Cont = append(out.Cont, row)
	}
	return out
}
