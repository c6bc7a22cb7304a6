package faasconf

import (
	"cmp"
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

// heldPrice is the held configuration's price; ok is false without one.
func (l *ladder) heldPrice() (price float64, ok bool) {
	if k := l.held(); k != nil {
		return k.price, true
	}
	return 0, false
}

// verified adds a configuration training verified at the level (on
// seeds of its own), trusted as if it had met the QoS in verifiedMet
// windows.
func (l *ladder) verified(action [][]float64, price float64) {
	l.record(action, price, true, false)
	i := slices.IndexFunc(l.known, func(k known) bool { return k.price == price && equalJoint(k.action, action) })
	if i >= 0 {
		l.known[i].met = max(l.known[i].met, verifiedMet)
	}
}

// verifiedMet is how many windows a verified configuration counts as
// having met the QoS in: with three, two misses in serving (and no new
// meets) take the agent's trust.
const verifiedMet = 3

// record counts an outcome of the action at its price; changed says the
// window began with the change to it.
func (l *ladder) record(action [][]float64, price float64, met, changed bool) {
	i := slices.IndexFunc(l.known, func(k known) bool { return k.price == price && equalJoint(k.action, action) })
	switch {
	case i < 0 && met:
		i, _ = slices.BinarySearchFunc(l.known, price, func(k known, p float64) int { return cmp.Compare(k.price, p) })
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
