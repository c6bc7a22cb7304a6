package rl

import (
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/nn"
)

// Cloner fine-tunes decentralised actors by behaviour cloning alone: it
// steps every actor (its attention included) down the squared distance of
// its actions on joint observations to target actions. It is what an agent
// serving without critics can learn from the measurements it causes (the
// targets being the configurations that proved best), and the term
// MADDPGConfig.AnchorWeight adds to the actors' loss in training.
type Cloner struct {
	a        *MFActors
	opt      []*nn.Adam[float32]
	rng      *rand.Rand
	tp       nn.Tape[float32]
	obs, act []float32
}

// NewCloner returns a cloner of the actors with Adam at step size lr.
func NewCloner(a *MFActors, lr float64, rng *rand.Rand) *Cloner {
	c := &Cloner{a: a, rng: rng}
	cfg := nn.DefaultAdam()
	cfg.LR = lr
	for j, net := range a.nets {
		ps := net.Params()
		if a.wq[j] != nil {
			ps = append(ps, a.wq[j], a.wk[j])
		}
		c.opt = append(c.opt, nn.NewAdam(ps, cfg))
	}
	return c
}

// Step takes one step on a batch of B samples drawn from the joint
// observations and their target actions (in [-1, 1] units), and returns
// the mean squared distance before it, over the agents.
func (c *Cloner) Step(obs, acts [][][]float64, B int) float64 {
	a := c.a
	wo, wa := a.n*a.ds, a.n*a.da
	c.obs, c.act = c.obs[:0], c.act[:0]
	for range B {
		i := c.rng.IntN(len(obs))
		for j := range a.n {
			for _, v := range obs[i][j] {
				c.obs = append(c.obs, float32(v))
			}
			for _, v := range acts[i][j] {
				c.act = append(c.act, float32(v))
			}
		}
	}
	loss := 0.0
	for j, net := range a.nets {
		c.tp.Reset()
		s, target := input(&c.tp, B*a.n, a.ds, c.obs[:B*wo]), input(&c.tp, B*a.n, a.da, c.act[:B*wa])
		l := c.tp.MSE(net.Forward(&c.tp, a.record(&c.tp, j, a.wq[j], a.wk[j], s)), a.rows(&c.tp, target, j))
		loss += float64(l.Value.Data[0]) / float64(a.n)
		c.opt[j].ZeroGrad()
		c.tp.Backward(l)
		c.opt[j].Step()
	}
	return loss
}
