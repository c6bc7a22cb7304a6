package rl

import (
	"math/rand/v2"
	"slices"

	"github.com/shoal-project/shoal/learn/nn"
)

// Cloner fine-tunes decentralised actors by behaviour cloning alone: it
// steps every actor (its attention included) down the squared distance of
// its actions on joint observations to target actions. It is what an agent
// serving without critics can learn from the measurements it causes (the
// targets being the configurations that proved best); MADDPG adds the same
// term to its actors' loss (MADDPGConfig.AnchorWeight).
type Cloner struct {
	a       *MFActors
	opt     []*nn.Adam[float32]
	rng     *rand.Rand
	tp      nn.Tape[float32]
	targets jointTargets
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

// SetTargets replaces the joint observations and their target actions
// (in [-1, 1] units) the steps draw from.
func (c *Cloner) SetTargets(obs, acts [][][]float64) {
	c.targets.reset()
	for i := range obs {
		for j := range obs[i] {
			c.targets.add(obs[i][j], acts[i][j])
		}
	}
}

// Step takes one step on a batch of B samples drawn from the targets, and
// returns the mean squared distance before it, over the agents.
func (c *Cloner) Step(B int) float64 {
	a := c.a
	obs, act := c.targets.draw(c.rng, B, a.n*a.ds, a.n*a.da)
	loss := 0.0
	for j := range a.nets {
		c.tp.Reset()
		l := a.cloneLoss(&c.tp, j, a.wq[j], a.wk[j], input(&c.tp, B*a.n, a.ds, obs), input(&c.tp, B*a.n, a.da, act))
		loss += float64(l.Value.Data[0]) / float64(a.n)
		c.opt[j].ZeroGrad()
		c.tp.Backward(l)
		c.opt[j].Step()
	}
	return loss
}

// cloneLoss records agent j's behaviour-cloning loss: the mean squared
// distance of its actions on the states s (B·n × ds) to the targets
// (B·n × da).
func (a *MFActors) cloneLoss(tp *nn.Tape[float32], j int, wq, wk, s, targets *nn.Node[float32]) *nn.Node[float32] {
	return tp.MSE(a.nets[j].Forward(tp, a.record(tp, j, wq, wk, s)), a.rows(tp, targets, j))
}

// jointTargets are joint observations and their target actions, each agent's
// row after the other's, drawn with replacement in batches: the data of
// behaviour cloning.
type jointTargets struct {
	obs, act   []float32
	bObs, bAct []float32 // the last batch
}

func (t *jointTargets) reset() { t.obs, t.act = t.obs[:0], t.act[:0] }

// add appends one agent's observation and target action.
func (t *jointTargets) add(obs, act []float64) {
	for _, v := range obs {
		t.obs = append(t.obs, float32(v))
	}
	for _, v := range act {
		t.act = append(t.act, float32(v))
	}
}

// draw returns B joint samples of wo observation and wa action values each
// (owned by t, valid until its next draw); nil without samples.
func (t *jointTargets) draw(rng *rand.Rand, B, wo, wa int) (obs, act []float32) {
	rows := len(t.obs) / wo
	if rows == 0 {
		return nil, nil
	}
	t.bObs, t.bAct = slices.Grow(t.bObs[:0], B*wo)[:B*wo], slices.Grow(t.bAct[:0], B*wa)[:B*wa]
	for r := range B {
		i := rng.IntN(rows)
		copy(t.bObs[r*wo:(r+1)*wo], t.obs[i*wo:(i+1)*wo])
		copy(t.bAct[r*wa:(r+1)*wa], t.act[i*wa:(i+1)*wa])
	}
	return t.bObs, t.bAct
}
