package nn

import (
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Orthogonal fills the rows×cols parameter p with a (semi-)orthogonal
// matrix scaled by gain, as in Saxe et al. 2014 and PyTorch's
// nn.init.orthogonal_ (used by PPO implementations with gains √2 for hidden
// layers, 0.01 for the policy head and 1 for the value head): the Q factor
// of a Gaussian matrix's QR decomposition with the signs of R's diagonal.
// Columns are orthonormal when rows ≥ cols, rows otherwise.
func Orthogonal[T Float](rng *rand.Rand, p *Node[T], gain float64) {
	r, c := p.Value.Rows, p.Value.Cols
	tall := r >= c
	m, n := r, c
	if !tall {
		m, n = c, r
	}
	a := mat.NewDense(m, n, nil)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(a)
	var q, rr mat.Dense
	qr.QTo(&q)
	qr.RTo(&rr)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			v := q.At(i, j) * gain
			if rr.At(j, j) < 0 {
				v = -v
			}
			if tall {
				p.Value.Set(i, j, T(v))
			} else {
				p.Value.Set(j, i, T(v))
			}
		}
	}
}

// InitOrthogonal re-initialises m's weights with Orthogonal (hiddenGain for
// all layers but the last, outGain for the last) and its biases with zeros,
// the initialisation of Stable-Baselines3's PPO and A2C.
func (m *MLP[T]) InitOrthogonal(rng *rand.Rand, hiddenGain, outGain float64) {
	for i, l := range m.Layers {
		g := hiddenGain
		if i+1 == len(m.Layers) {
			g = outGain
		}
		Orthogonal(rng, l.W, g)
		clear(l.B.Value.Data)
	}
}
