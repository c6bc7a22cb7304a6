package lb

import (
	"math/rand/v2"
	"time"
)

// ProbingSED is Shoal's hybrid of Prequal's probing and SED: after each
// decision it probes ProbeRate backends at random, as Prequal does (so the
// other LB points' load becomes visible), and keeps each backend's newest
// answer. A backend's load estimate is the RIF it reported plus the
// requests this LB point sent it since (Prequal's compensation), and the
// choice is argmin (estimate+1)/w over the backends with an answer younger
// than MaxAge, w the View's weights: configured, or learned by a Distr-LB
// agent. With fewer than two fresh answers it falls back to SED over this
// LB point's own in-flight counts.
type ProbingSED struct {
	Rand *rand.Rand
	// ProbeRate is the number of probes per decision (default 3, as
	// Prequal's r_probe), randomly rounded.
	ProbeRate float64
	// MaxAge is how long an answer is used (default 1 s, as Prequal's).
	MaxAge time.Duration

	sed   SED
	rif   []int32         // per backend: the newest answer's RIF
	at    []time.Duration // per backend: when it arrived (<0: none)
	since []int32         // per backend: requests sent since that answer
}

func (s *ProbingSED) size(n int) {
	if len(s.rif) == n {
		return
	}
	if s.ProbeRate == 0 {
		s.ProbeRate = 3
	}
	if s.MaxAge <= 0 {
		s.MaxAge = time.Second
	}
	s.sed.Rand = s.Rand
	s.rif, s.at, s.since = make([]int32, n), make([]time.Duration, n), make([]int32, n)
	for j := range s.at {
		s.at[j] = -1
	}
}

// Select implements Selector.
func (s *ProbingSED) Select(v *View, r Request) int {
	s.size(v.Len())
	best, fresh := -1, 0
	bd := 0.0
	for j, up := range v.Up {
		w := v.Weights[j]
		if !up || w <= 0 || s.at[j] < 0 || r.Now-s.at[j] > s.MaxAge {
			continue
		}
		fresh++
		est := max(s.rif[j]+s.since[j], v.InFlight[j])
		if d := float64(est+1) / w; best < 0 || d < bd || d == bd && s.Rand.IntN(2) == 0 {
			best, bd = j, d
		}
	}
	if fresh < 2 {
		best = s.sed.Select(v, r)
	}
	return best
}

// Sent implements Feedback: one more request at j since its answer.
func (s *ProbingSED) Sent(_ time.Duration, j int) {
	if j < len(s.since) {
		s.since[j]++
	}
}

// Done implements Feedback: one fewer, whether it was sent before the
// answer (and counted in its RIF) or after.
func (s *ProbingSED) Done(_ time.Duration, j int, _, _ time.Duration) {
	if j < len(s.since) {
		s.since[j]--
	}
}

// ProbeTargets implements Prober.
func (s *ProbingSED) ProbeTargets(_ time.Duration, v *View, dst []int) []int {
	s.size(v.Len())
	dst, _ = sampleUp(v, randomRound(s.ProbeRate, s.Rand), s.Rand, dst)
	return dst
}

// Probed implements Prober.
func (s *ProbingSED) Probed(now time.Duration, j int, l Load) {
	if j >= len(s.rif) || now < s.at[j] {
		return
	}
	s.rif[j], s.at[j], s.since[j] = l.RIF, now, 0
}
