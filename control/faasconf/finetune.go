package faasconf

import (
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/shoal-project/shoal/learn/rl"
)

// Fine-tuning while serving: the exploration noise (MADDPG's, in action
// units), how many observations a level keeps, and the cloner's steps,
// batch and step size each time a held configuration changes.
const (
	exploreNoise = 0.1
	ringSize     = 64
	tuneSteps    = 100
	tuneBatch    = 32
	tuneLR       = 1e-3
)

// ring keeps a level's latest joint observations.
type ring struct {
	obs  [][][]float64
	next int
}

// observed keeps the joint observation at the level (copied into the
// level's ring: no allocation once it is full).
func (a *Agent) observed(level float64, obs [][]float64) {
	r := a.seen[level]
	if r == nil {
		r = &ring{}
		a.seen[level] = r
	}
	if len(r.obs) < ringSize {
		r.obs = append(r.obs, rl.CloneJoint(obs))
		return
	}
	for j := range obs {
		copy(r.obs[r.next][j], obs[j])
	}
	r.next = (r.next + 1) % ringSize
}

// fineTune clones every level's held configuration into the actors on the
// observations seen at the level.
func (a *Agent) fineTune() {
	var obs, acts [][][]float64
	for _, level := range slices.Sorted(maps.Keys(a.seen)) {
		h := a.ladder(level).held()
		if h == nil {
			continue
		}
		for _, o := range a.seen[level].obs {
			obs, acts = append(obs, o), append(acts, h.action)
		}
	}
	if len(obs) == 0 {
		return
	}
	if a.cloner == nil {
		a.cloner = rl.NewCloner(a.pol.actors, tuneLR, rand.New(rand.NewPCG(a.opt.Seed, 0x74756e65))) // "tune"
	}
	a.cloner.SetTargets(obs, acts)
	for range tuneSteps {
		a.cloner.Step(tuneBatch)
	}
	a.stats.FineTunes++
}
