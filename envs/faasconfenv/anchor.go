package faasconfenv

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

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
	qos    faasconf.QoS // the QoS with the margin: what verification checks
	best   map[float64]anchored
	obs    map[float64][][][]float64
	// verified are the configurations that passed, in order.
	verified []faasconf.Record
	tried    map[string]bool // configurations verified, passed or not
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

func newAnchor(env *Env, verify int, margin float64, seed uint64) *anchor {
	q := env.QoS()
	q.Latency = time.Duration(float64(q.Latency) * (1 - margin))
	return &anchor{env: env, verify: max(verify, 1), qos: q, seed: seed, best: map[float64]anchored{}, obs: map[float64][][][]float64{}, tried: map[string]bool{}}
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
// it. A configuration that met the QoS at a level is a candidate at every
// level below it too (a lower load needs no more), measured there
// (atAndBelow).
func (a *anchor) improve(records []faasconf.Record) bool {
	byLevel := map[float64][]faasconf.Record{}
	for _, r := range records {
		for _, at := range a.atAndBelow(r) {
			if b, ok := a.best[at.Workload]; !ok || at.Price < b.price {
				byLevel[at.Workload] = append(byLevel[at.Workload], at)
			}
		}
	}
	changed := false
	for _, level := range slices.Sorted(maps.Keys(byLevel)) {
		rs := byLevel[level]
		slices.SortStableFunc(rs, func(x, y faasconf.Record) int { return cmp.Compare(x.Price, y.Price) })
		for _, r := range rs[:min(len(rs), anchorTries)] {
			if a.check(r) {
				a.best[level], changed = anchored{action: r.Action, price: r.Price}, true
				break
			}
		}
	}
	return changed
}

// atAndBelow is a record that met the QoS as a candidate at its level and
// at every trained level below it (none for one that missed).
func (a *anchor) atAndBelow(r faasconf.Record) []faasconf.Record {
	var out []faasconf.Record
	for _, level := range a.env.cfg.Levels {
		if r.Met && level <= r.Workload {
			at := r
			at.Workload = level
			out = append(out, at)
		}
	}
	return out
}

// check verifies a record's configuration once, keeping it if it passes.
func (a *anchor) check(r faasconf.Record) bool {
	key := fmt.Sprint(r.Workload, r.Action)
	if a.tried[key] {
		return false // passed before (and so is no cheaper than the anchor) or failed
	}
	a.tried[key] = true
	if !a.meets(r.Workload, r.Action) {
		return false
	}
	a.verified = append(a.verified, r)
	return true
}

// history is what a policy keeps of training for its safe exploration:
// besides the configurations verified so far, the cheapest k of every
// level's QoS-meeting records (its own and its higher levels') that pass
// verification now (of at most 3k tried), then every level's
// latest k records that missed the QoS. One window that met the QoS is weak
// evidence at the QoS's edge (the cheapest configurations that met it once
// in FaaSConf's tuning sessions mostly miss it on the oracle's seeds), so
// the safe ranges are set from verified configurations only.
func (a *anchor) history(records []faasconf.Record, k int) []faasconf.Record {
	var met []faasconf.Record
	for _, r := range records {
		met = append(met, a.atAndBelow(r)...)
	}
	slices.SortStableFunc(met, func(x, y faasconf.Record) int { return cmp.Compare(x.Price, y.Price) })
	passed, tried := map[float64]int{}, map[float64]int{}
	for _, r := range met {
		if passed[r.Workload] < k && tried[r.Workload] < 3*k {
			tried[r.Workload]++
			if a.check(r) {
				passed[r.Workload]++
			}
		}
	}
	out := slices.Clone(a.verified)
	missed := map[float64]int{}
	for i := len(records) - 1; i >= 0; i-- {
		if r := records[i]; !r.Met && missed[r.Workload] < k {
			missed[r.Workload]++
			out = append(out, r)
		}
	}
	return out
}

// meets measures the action at the level on the verify seeds: each must
// meet the QoS with the margin.
func (a *anchor) meets(level float64, action [][]float64) bool {
	cs := make([]faasconf.Config, len(action))
	for j, x := range action {
		cs[j] = a.env.cfg.Space.Decode(x)
	}
	for k := range a.verify {
		if m, _ := a.env.Measure(level, cs, rand.New(rand.NewPCG(a.seed+uint64(k), 0x616e6368))); !a.qos.Met(m.Window) { // "anch"
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

// descentChecks bounds the verifications of one level's descent.
const descentChecks = 40

// descend lowers every level's anchor function by function, as the
// oracle searches (experiment.FaaSOracle), on measurements: from the
// anchored configuration, each step tries one function one grid step
// cheaper (an eighth of a core, an instance, or a concurrency slot with
// the memory it no longer needs), in turn, and keeps the first that passes
// verification; it stops when no step passes or after descentChecks
// verifications. It reports whether an anchor moved.
func (a *anchor) descend() bool {
	moved := false
	for _, level := range slices.Sorted(maps.Keys(a.best)) {
		b := a.best[level]
		cs := make([]faasconf.Config, len(b.action))
		for j, x := range b.action {
			cs[j] = a.env.cfg.Space.Decode(x)
		}
		for checks, stepped := 0, true; stepped && checks < descentChecks; {
			stepped = false
			for j := range cs {
				for _, next := range a.steps(j, cs[j]) {
					if checks >= descentChecks {
						break
					}
					try := slices.Clone(cs)
					try[j] = next
					r := faasconf.Record{Workload: level, Action: a.env.cfg.Space.EncodeAll(try), Price: faasconf.Price(try), Met: true}
					if r.Price >= faasconf.Price(cs) || a.tried[fmt.Sprint(r.Workload, r.Action)] {
						continue
					}
					checks++
					if a.check(r) {
						cs, stepped, moved = try, true, true
						a.best[level] = anchored{action: r.Action, price: r.Price}
						break
					}
				}
			}
		}
	}
	return moved
}

// steps are function j's configurations one grid step cheaper than c.
func (a *anchor) steps(j int, c faasconf.Config) []faasconf.Config {
	sp := a.env.cfg.Space
	var out []faasconf.Config
	if c.CPU-cpuStep >= sp.CPU[0]-1e-9 {
		d := c
		d.CPU -= cpuStep
		out = append(out, d)
	}
	if c.Instances > sp.Instances[0] {
		d := c
		d.Instances--
		out = append(out, d)
	}
	if sp.Hybrid() && c.Concurrency > sp.Concurrency[0] {
		d := c
		d.Concurrency--
		d.MemoryMB = min(d.MemoryMB, max(sp.MemoryMB[0], a.env.MemoryFloor(j, d.Concurrency)))
		out = append(out, d)
	}
	return out
}

// cpuStep is the descent's CPU step, cores (the oracle's).
const cpuStep = 0.125
