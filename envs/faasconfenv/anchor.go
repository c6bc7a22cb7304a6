package faasconfenv

import (
	"cmp"
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/learn/rl"
)

// anchor is what the actors are regularised toward in training (the
// behaviour-cloning term of rl.MADDPGConfig.AnchorWeight): at every
// workload level, the cheapest configuration measured that met the QoS and
// meets it again on verify seeds of its own, paired with the joint
// observations the agents had at that level.
type anchor struct {
	env    *Env
	verify int
	seed   uint64
	best   map[float64]anchored
	obs    map[float64][][][]float64
}

type anchored struct {
	action [][]float64
	price  float64
}

// anchorObs is how many of a level's latest observations the anchor keeps.
const anchorObs = 300

// anchorTries is how many of the cheapest new QoS-meeting records of a
// level are verified at most in one improve.
const anchorTries = 6

func newAnchor(env *Env, verify int, seed uint64) *anchor {
	return &anchor{env: env, verify: max(verify, 1), seed: seed, best: map[float64]anchored{}, obs: map[float64][][][]float64{}}
}

// seen keeps a joint observation at the level.
func (a *anchor) seen(level float64, obs [][]float64) {
	o := append(a.obs[level], rl.CloneJoint(obs))
	if len(o) > anchorObs {
		o = o[1:]
	}
	a.obs[level] = o
}

// improve verifies the records' QoS-meeting configurations cheaper than
// their level's anchor, cheapest first, and reports whether one replaced
// it.
func (a *anchor) improve(records []faasconf.Record) bool {
	byLevel := map[float64][]faasconf.Record{}
	for _, r := range records {
		if b, ok := a.best[r.Workload]; r.Met && (!ok || r.Price < b.price) {
			byLevel[r.Workload] = append(byLevel[r.Workload], r)
		}
	}
	changed := false
	for _, level := range slices.Sorted(maps.Keys(byLevel)) {
		rs := byLevel[level]
		slices.SortStableFunc(rs, func(x, y faasconf.Record) int { return cmp.Compare(x.Price, y.Price) })
		for _, r := range rs[:min(len(rs), anchorTries)] {
			if a.meets(level, r.Action) {
				a.best[level], changed = anchored{action: r.Action, price: r.Price}, true
				break
			}
		}
	}
	return changed
}

// meets measures the action at the level on the verify seeds.
func (a *anchor) meets(level float64, action [][]float64) bool {
	cs := make([]faasconf.Config, len(action))
	for j, x := range action {
		cs[j] = a.env.cfg.Space.Decode(x)
	}
	for k := range a.verify {
		if m, _ := a.env.Measure(level, cs, rand.New(rand.NewPCG(a.seed+uint64(k), 0x616e6368))); !m.Met { // "anch"
			return false
		}
	}
	return true
}

// set gives the learner the anchor: every observation kept at a level
// with an anchored configuration, paired with it.
func (a *anchor) set(m *rl.MADDPG) {
	var obs, acts [][][]float64
	levels := slices.Sorted(maps.Keys(a.best)) // in order: the learner's draws depend on it
	for _, level := range levels {
		b := a.best[level]
		for _, o := range a.obs[level] {
			obs, acts = append(obs, o), append(acts, b.action)
		}
	}
	m.SetAnchor(obs, acts)
}
