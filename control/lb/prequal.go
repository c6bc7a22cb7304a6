package lb

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Prequal is Google's probing balancer (Wydrowski, Kleinberg, Rumble and
// Archer, "Load is not what you should balance: Introducing Prequal",
// NSDI 2024). Each query triggers ProbeRate probes to backends drawn
// uniformly without replacement; a probe's answer carries the server's
// requests in flight (RIF) and its latency estimate at that RIF (see
// LatencyByRIF), and enters a pool of at most PoolSize answers, one per
// backend (a newer answer replaces an older one; a full pool drops its
// oldest). A query is routed by the hot-cold lexicographic rule: a probe
// is hot when its RIF is above the QRIF quantile of the pool's RIFs; the
// cold probe with the lowest latency wins, or, when every probe is hot,
// the one with the lowest RIF. The chosen probe's RIF is incremented (the
// query it just added) and it is used at most b_reuse times,
//
//	b_reuse = max{1, (1+δ) / ((1 − m/n)·r_probe − r_remove)},
//
// randomly rounded, with m the pool size and n the number of backends;
// when the denominator is not positive (a pool nearly as large as the
// backend set) the formula has no meaning and the floor, 1, is used
// (unbounded reuse let the LB points herd in the simulator: with 7 and 20
// backends, p99 was 1.3-3.7x the p99 with one use). After each query
// RemoveRate probes are removed, alternately the oldest and the worst (the
// hot probe with the highest RIF, else the cold one with the highest
// latency), against the pool's drift towards bad probes; probes older than
// MaxAge are dropped. With fewer than two probes in the pool a query goes
// to a uniformly random backend.
//
// The paper's text was not readable where this was written; the rule and
// the defaults (QRIF 2^-0.25, m 16, r_probe 3, r_remove 1, δ 1, age 1 s,
// the fallback below two probes) follow the paper as quoted in detail by
// independent re-implementations. The paper's error-aversion heuristics
// (against fast-failing "sinkhole" replicas) are not described there and
// not modelled.
type Prequal struct {
	Rand *rand.Rand
	// QRIF is the hot quantile (default 2^-0.25 ≈ 0.84).
	QRIF float64
	// PoolSize is m (default 16).
	PoolSize int
	// ProbeRate is r_probe, probes per query, may be fractional (default 3).
	ProbeRate float64
	// RemoveRate is r_remove, removals per query (default 1).
	RemoveRate float64
	// Delta is δ (default 1).
	Delta float64
	// MaxAge is the probe age limit (default 1 s).
	MaxAge time.Duration

	pool        []probe
	rifs        []int32 // scratch for the quantile
	removeWorst bool    // the next removal takes the worst (else the oldest)
	removeDebt  float64 // fractional removals carried over
	n           int     // up backends at the last probe round
}

// probe is one answer in the pool.
type probe struct {
	backend int
	rif     int32
	latency time.Duration
	at      time.Duration // when the answer arrived
	uses    int           // left before it is removed; <0: unbounded
}

func (s *Prequal) defaults() {
	if s.QRIF == 0 {
		s.QRIF = math.Pow(2, -0.25)
	}
	if s.PoolSize <= 0 {
		s.PoolSize = 16
	}
	if s.ProbeRate == 0 {
		s.ProbeRate = 3
	}
	if s.RemoveRate == 0 {
		s.RemoveRate = 1
	}
	if s.Delta == 0 {
		s.Delta = 1
	}
	if s.MaxAge <= 0 {
		s.MaxAge = time.Second
	}
	if s.pool == nil {
		s.pool = make([]probe, 0, s.PoolSize)
		s.rifs = make([]int32, 0, s.PoolSize)
	}
}

// Select implements Selector.
func (s *Prequal) Select(v *View, r Request) int {
	s.defaults()
	s.expire(v, r.Now)
	if len(s.pool) < 2 {
		return randomUp(v, s.Rand)
	}
	i := s.hcl(false)
	j := s.pool[i].backend
	s.pool[i].rif++
	if s.pool[i].uses > 0 {
		s.pool[i].uses--
		if s.pool[i].uses == 0 {
			s.drop(i)
		}
	}
	s.removeDebt += s.RemoveRate
	for ; s.removeDebt >= 1 && len(s.pool) > 0; s.removeDebt-- {
		if s.removeWorst {
			s.drop(s.hcl(true))
		} else {
			s.drop(s.oldest())
		}
		s.removeWorst = !s.removeWorst
	}
	if len(s.pool) == 0 {
		s.removeDebt = 0
	}
	return j
}

// expire drops probes older than MaxAge or of backends no longer up.
func (s *Prequal) expire(v *View, now time.Duration) {
	for i := 0; i < len(s.pool); {
		p := &s.pool[i]
		if now-p.at > s.MaxAge || p.backend >= v.Len() || !v.Up[p.backend] {
			s.drop(i)
			continue
		}
		i++
	}
}

// hcl returns the index of the best probe by the hot-cold lexicographic
// rule, or with worst the worst one by the same rule run in reverse.
func (s *Prequal) hcl(worst bool) int {
	s.rifs = s.rifs[:0]
	for _, p := range s.pool {
		s.rifs = append(s.rifs, p.rif)
	}
	slices.Sort(s.rifs)
	k := int(math.Ceil(s.QRIF*float64(len(s.rifs)))) - 1
	threshold := s.rifs[min(max(k, 0), len(s.rifs)-1)]
	best := 0
	for i := 1; i < len(s.pool); i++ {
		if worst && ranksBefore(s.pool[best], s.pool[i], threshold) ||
			!worst && ranksBefore(s.pool[i], s.pool[best], threshold) {
			best = i
		}
	}
	return best
}

// ranksBefore orders probes by the hot-cold lexicographic rule: cold
// before hot, cold by latency, hot by RIF.
func ranksBefore(p, q probe, threshold int32) bool {
	pHot, qHot := p.rif > threshold, q.rif > threshold
	switch {
	case pHot != qHot:
		return qHot
	case pHot:
		return p.rif < q.rif
	}
	return p.latency < q.latency
}

func (s *Prequal) oldest() int {
	o := 0
	for i, p := range s.pool {
		if p.at < s.pool[o].at {
			o = i
		}
	}
	return o
}

func (s *Prequal) drop(i int) {
	last := len(s.pool) - 1
	s.pool[i] = s.pool[last]
	s.pool = s.pool[:last]
}

// reuseBudget is b_reuse for n backends, randomly rounded.
func (s *Prequal) reuseBudget(n int) int {
	if n <= 0 {
		return -1
	}
	d := (1-float64(s.PoolSize)/float64(n))*s.ProbeRate - s.RemoveRate
	if d <= 0 {
		return 1 // the formula has no meaning here: its floor
	}
	return randomRound(max(1, (1+s.Delta)/d), s.Rand)
}

// ProbeTargets implements Prober: r_probe backends (randomly rounded),
// drawn uniformly without replacement among the up ones.
func (s *Prequal) ProbeTargets(_ time.Duration, v *View, dst []int) []int {
	s.defaults()
	dst, s.n = sampleUp(v, randomRound(s.ProbeRate, s.Rand), s.Rand, dst)
	return dst
}

// sampleUp appends k distinct up backends drawn uniformly (a reservoir
// sample; all of them if fewer are up) to dst, and counts the up ones.
func sampleUp(v *View, k int, rng *rand.Rand, dst []int) (_ []int, up int) {
	start := len(dst)
	for j, u := range v.Up {
		if !u {
			continue
		}
		up++
		if len(dst)-start < k {
			dst = append(dst, j)
		} else if r := rng.IntN(up); r < k {
			dst[start+r] = j
		}
	}
	return dst, up
}

// Probed implements Prober.
func (s *Prequal) Probed(now time.Duration, j int, l Load) {
	s.defaults()
	for i := range s.pool {
		if s.pool[i].backend == j {
			s.drop(i)
			break
		}
	}
	if len(s.pool) >= s.PoolSize {
		s.drop(s.oldest())
	}
	s.pool = append(s.pool, probe{backend: j, rif: l.RIF, latency: l.Latency, at: now, uses: s.reuseBudget(s.n)})
}

// randomUp picks a uniformly random up backend, -1 if none is (a
// reservoir sample: uniform without a scratch list).
func randomUp(v *View, rng *rand.Rand) int {
	best, n := -1, 0
	for j, up := range v.Up {
		if up {
			n++
			if rng.IntN(n) == 0 {
				best = j
			}
		}
	}
	return best
}

// randomRound rounds x down or up at random, preserving its expectation.
func randomRound(x float64, rng *rand.Rand) int {
	f := math.Floor(x)
	if rng.Float64() < x-f {
		f++
	}
	return int(f)
}
