package lb

import (
	"math/rand/v2"
	"time"
)

// ProbingSED is Shoal's hybrid of Prequal's probing, C3's piggybacked load
// and SED. It keeps each backend's newest answer: the RIF a server
// piggybacks on every response (C3's feedback, free), or the answer to a
// probe. After each decision it draws ProbeRate backends at random, as
// Prequal does, and probes those it has heard nothing from for Quiet: the
// ones it avoids, whose load only a probe shows (the other LB points'
// requests); the ones it uses answer on their responses. A backend's load
// estimate is the RIF it reported plus the requests this LB point sent it
// since (Prequal's compensation), and the choice is argmin (estimate+1)/w
// over the backends with an answer younger than MaxAge, w the View's
// weights: configured, or learned by a Distr-LB agent. With fewer than two
// fresh answers it falls back to SED over this LB point's own in-flight
// counts.
//
// Probing only the quiet backends is what keeps the probes cheap at high
// fan-out: on lb-fanout at load 0.98, probing after every decision (3 per
// leaf call, 24 per request) overloaded the servers (p99 16.3 s against
// SED's 0.96 s); with Quiet 300 ms it sends 0.007 probes per request.
type ProbingSED struct {
	Rand *rand.Rand
	// ProbeRate is the number of probes per decision (default 3, as
	// Prequal's r_probe), randomly rounded.
	ProbeRate float64
	// MaxAge is how long an answer is used (default 1 s, as Prequal's).
	MaxAge time.Duration
	// Quiet: a backend is probed only when its newest answer is at least
	// this old (default 300 ms; negative: probe every draw).
	Quiet time.Duration

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
	if s.Quiet == 0 {
		s.Quiet = 300 * time.Millisecond
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
		if !up || w <= 0 {
			continue
		}
		est, ok := s.estimate(j, v, r.Now)
		if !ok {
			continue
		}
		fresh++
		if d := float64(est+1) / w; best < 0 || d < bd || d == bd && s.Rand.IntN(2) == 0 {
			best, bd = j, d
		}
	}
	if fresh < 2 {
		best = s.sed.Select(v, r)
	}
	return best
}

// estimate is backend j's load estimate at now: the newest answer's RIF
// plus what this LB point sent since (at least its own in flight), and
// whether that answer is fresh; without one, its own in-flight count.
func (s *ProbingSED) estimate(j int, v *View, now time.Duration) (int32, bool) {
	if s.at[j] < 0 || now-s.at[j] > s.MaxAge {
		return v.InFlight[j], false
	}
	return max(s.rif[j]+s.since[j], v.InFlight[j]), true
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
func (s *ProbingSED) ProbeTargets(now time.Duration, v *View, dst []int) []int {
	s.size(v.Len())
	n := len(dst)
	dst, _ = sampleUp(v, randomRound(s.ProbeRate, s.Rand), s.Rand, dst)
	if s.Quiet > 0 {
		keep := dst[:n]
		for _, j := range dst[n:] {
			if s.at[j] < 0 || now-s.at[j] >= s.Quiet {
				keep = append(keep, j)
			}
		}
		dst = keep
	}
	return dst
}

// Reported implements LoadFeedback: a response's piggybacked RIF is an
// answer too. It no longer counts the answered request, whose Done
// follows, so that Done's decrement is offset.
func (s *ProbingSED) Reported(now time.Duration, j int, l Load) {
	if j >= len(s.rif) || now < s.at[j] {
		return
	}
	s.rif[j], s.at[j], s.since[j] = l.RIF, now, 1
}

// Probed implements Prober.
func (s *ProbingSED) Probed(now time.Duration, j int, l Load) {
	if j >= len(s.rif) || now < s.at[j] {
		return
	}
	s.rif[j], s.at[j], s.since[j] = l.RIF, now, 0
}
