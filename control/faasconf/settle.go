package faasconf

import (
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/shoal-project/shoal/learn/rl"
)

// ladder is what a settling agent knows at one workload level: the
// configurations that met the QoS there while it served, cheapest first,
// each with how often it met and missed the QoS, and the exploration's
// schedule. A window's QoS is noisy (a 30 s window misses 99% served with
// three refusals in 150 requests, the scenario's own configuration
// included), so one miss does not condemn a configuration: the agent holds
// the cheapest trusted one, which met at least three times as often as it
// missed; a miss in the window that began with the change to it (instances
// starting, calls refused) does not count.
type ladder struct {
	known     []known
	calm, gap int // windows in a row the held configuration met; the windows it must before the actors propose
}

type known struct {
	action      [][]float64
	price       float64
	met, missed int
}

// The settling exploration's gaps, in windows, and how many configurations
// a level keeps (the dearest go first).
const (
	firstGap  = 4
	lastGap   = 64
	keepKnown = 16
)

func (k *known) trusted() bool { return 3*k.missed <= k.met }

// held is the cheapest trusted configuration (nil: none).
func (l *ladder) held() *known {
	for i := range l.known {
		if l.known[i].trusted() {
			return &l.known[i]
		}
	}
	return nil
}

// record counts an outcome of the action at its price; changed says the
// window began with the change to it.
func (l *ladder) record(action [][]float64, price float64, met, changed bool) {
	i := slices.IndexFunc(l.known, func(k known) bool { return k.price == price && equalJoint(k.action, action) })
	switch {
	case i < 0 && met:
		i, _ = slices.BinarySearchFunc(l.known, price, func(k known, p float64) int { return cmpFloat(k.price, p) })
		l.known = slices.Insert(l.known, i, known{action: rl.CloneJoint(action), price: price, met: 1})
		l.known = l.known[:min(len(l.known), keepKnown)]
	case i < 0:
	case met:
		l.known[i].met++
	case !changed:
		l.known[i].missed++
	}
}

func equalJoint(a, b [][]float64) bool {
	return slices.EqualFunc(a, b, func(x, y []float64) bool { return slices.Equal(x, y) })
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

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
	for range tuneSteps {
		a.cloner.Step(obs, acts, tuneBatch)
	}
	a.stats.FineTunes++
}
