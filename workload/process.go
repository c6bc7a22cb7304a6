package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Process generates arrival instants of one open-loop source. Deterministic given rng.
//
// A Process value holds the state of one source (MMPP phase, replay cursor); it is not safe
// for concurrent use. Build a fresh Process for every source and every run.
type Process interface {
	// Next returns the instant of the next arrival after the previous one at prev (prev=0 at start),
	// drawing randomness from rng only; ok=false when the process is exhausted (finite traces).
	// The returned instant is >= prev. Next does not allocate.
	Next(prev time.Duration, rng *rand.Rand) (at time.Duration, ok bool)
	// MeanRate is the long-run mean arrival rate in requests per second.
	MeanRate() float64
}

// MaxRate is the largest arrival rate a process accepts, in requests per second: beyond it,
// arrivals would collapse onto the same nanosecond of simulated time.
const MaxRate = 1e9

// MaxSwitchRate is the largest MMPP phase-leaving rate, per second (a mean dwell of 1 µs).
const MaxSwitchRate = 1e6

// maxSwitchesPerArrival bounds the mean number of MMPP phase changes between two arrivals,
// so that Next always finishes in bounded expected time.
const maxSwitchesPerArrival = 1e6

func checkRate(what string, r float64) error {
	if !(r > 0 && r <= MaxRate) {
		return fmt.Errorf("workload: %s must be in (0, %g] req/s, got %v", what, MaxRate, r)
	}
	return nil
}

// seconds converts a duration to float seconds (one multiplication; exact below 2^53 ns ≈ 104 days).
func seconds(d time.Duration) float64 { return float64(d) * 1e-9 }

// advance returns prev + dt seconds, or ok=false when the sum is not a representable
// time.Duration (the process would next fire ~292 years after the start) or dt is NaN.
func advance(prev time.Duration, dt float64) (time.Duration, bool) {
	ns := dt * 1e9
	if !(ns >= 0 && ns < float64(math.MaxInt64-int64(prev))) {
		if ns < 0 { // float rounding at a segment edge; never go backwards
			return prev, true
		}
		return 0, false
	}
	return prev + time.Duration(ns), true
}

// Poisson is a homogeneous Poisson process: exponential inter-arrival times with mean 1/rate.
type Poisson struct {
	rate float64 // requests per second
	gap  float64 // mean inter-arrival time in seconds
}

// NewPoisson returns a Poisson process with the given rate in requests per second (> 0).
func NewPoisson(rate float64) (*Poisson, error) {
	if err := checkRate("poisson rate", rate); err != nil {
		return nil, err
	}
	return &Poisson{rate: rate, gap: 1 / rate}, nil
}

// Next returns prev plus an exponential inter-arrival time.
func (p *Poisson) Next(prev time.Duration, rng *rand.Rand) (time.Duration, bool) {
	return advance(prev, rng.ExpFloat64()*p.gap)
}

// MeanRate returns the rate in requests per second.
func (p *Poisson) MeanRate() float64 { return p.rate }

// Constant is a deterministic process: one arrival every 1/rate seconds,
// the first at 1/rate.
type Constant struct {
	rate, gap float64
}

// NewConstant returns a constant-rate process in requests per second (> 0).
func NewConstant(rate float64) (*Constant, error) {
	if err := checkRate("constant rate", rate); err != nil {
		return nil, err
	}
	return &Constant{rate: rate, gap: 1 / rate}, nil
}

// Next returns prev plus 1/rate.
func (c *Constant) Next(prev time.Duration, _ *rand.Rand) (time.Duration, bool) {
	return advance(prev, c.gap)
}

// MeanRate returns the rate in requests per second.
func (c *Constant) MeanRate() float64 { return c.rate }

// MMPP is a Markov-modulated Poisson process: a continuous-time Markov chain on k phases
// with generator Q (per second) and, in phase i, Poisson arrivals at rate λ_i.
//
// Simulation is exact: within a phase, inter-arrival and holding times are both exponential, so
// after a phase change the pending exponential is redrawn (memorylessness). The first call
// draws the initial phase from the stationary distribution π (πQ = 0, Σπ = 1), so the process
// is stationary from time 0 and its mean rate is Σ π_i λ_i.
type MMPP struct {
	rates []float64 // λ_i, requests per second
	leave []float64 // q_i = -Q_ii, per second
	jump  []float64 // k×k row-major cumulative jump probabilities Q_ij/q_i (j != i)
	pi    []float64 // stationary distribution
	mean  float64   // Σ π_i λ_i

	started  bool
	state    int
	switchAt float64 // seconds since the start at which the current phase ends
}

// NewMMPP returns an MMPP with phase arrival rates (requests per second, >= 0, at least one > 0)
// and a k×k generator matrix (per second): off-diagonal entries >= 0 are transition rates; the
// diagonal is ignored and taken as minus the row sum. The chain must be irreducible.
func NewMMPP(rates []float64, generator [][]float64) (*MMPP, error) {
	k := len(rates)
	if k == 0 {
		return nil, errors.New("workload: mmpp needs at least one phase")
	}
	if len(generator) != k {
		return nil, fmt.Errorf("workload: mmpp generator has %d rows, want %d (one per phase)", len(generator), k)
	}
	for i, r := range rates {
		if !(r >= 0 && r <= MaxRate) {
			return nil, fmt.Errorf("workload: mmpp phase %d rate must be in [0, %g] req/s, got %v", i, MaxRate, r)
		}
	}
	m := &MMPP{
		rates: append([]float64(nil), rates...),
		leave: make([]float64, k),
		jump:  make([]float64, k*k),
	}
	q := make([][]float64, k)
	for i, row := range generator {
		if len(row) != k {
			return nil, fmt.Errorf("workload: mmpp generator row %d has %d entries, want %d", i, len(row), k)
		}
		q[i] = make([]float64, k)
		for j, v := range row {
			if i == j {
				continue
			}
			if !(v >= 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("workload: mmpp generator[%d][%d] must be >= 0 and finite, got %v", i, j, v)
			}
			q[i][j] = v
			m.leave[i] += v
		}
		q[i][i] = -m.leave[i]
		if m.leave[i] > MaxSwitchRate {
			return nil, fmt.Errorf("workload: mmpp phase %d is left at rate %v/s, more than %g/s (mean dwell under 1µs)", i, m.leave[i], MaxSwitchRate)
		}
		if k > 1 && m.leave[i] == 0 {
			return nil, fmt.Errorf("workload: mmpp phase %d is absorbing (no transitions out)", i)
		}
		acc := 0.0
		for j := range k {
			if j != i && m.leave[i] > 0 {
				acc += q[i][j] / m.leave[i]
			}
			m.jump[i*k+j] = acc
		}
		if k > 1 {
			// Guard the last reachable entry against rounding: the draw u < 1 must always land.
			for j := k - 1; j >= 0; j-- {
				if j != i && q[i][j] > 0 {
					for jj := j; jj < k; jj++ {
						m.jump[i*k+jj] = 1
					}
					break
				}
			}
		}
	}
	pi, err := stationary(q)
	if err != nil {
		return nil, err
	}
	m.pi = pi
	for i := range k {
		m.mean += pi[i] * rates[i]
	}
	if !(m.mean > 0) {
		return nil, errors.New("workload: mmpp mean rate is 0 (every visited phase has rate 0)")
	}
	switches := 0.0
	for i := range k {
		switches += pi[i] * m.leave[i]
	}
	if switches > maxSwitchesPerArrival*m.mean {
		return nil, fmt.Errorf("workload: mmpp changes phase %.3g times per arrival on average (more than %g): rates too low for its dwell times", switches/m.mean, maxSwitchesPerArrival)
	}
	return m, nil
}

// NewMMPPDwell returns an MMPP whose phase i lasts an exponential time with mean dwell[i] and then
// moves to one of the other phases chosen uniformly. Its stationary distribution is π_i ∝ dwell[i].
func NewMMPPDwell(rates []float64, dwell []time.Duration) (*MMPP, error) {
	if len(dwell) != len(rates) {
		return nil, fmt.Errorf("workload: mmpp has %d rates but %d dwell times", len(rates), len(dwell))
	}
	g, err := dwellGenerator(dwell)
	if err != nil {
		return nil, err
	}
	return NewMMPP(rates, g)
}

// dwellGenerator returns the generator of a chain that leaves phase i at rate 1/dwell[i] to one
// of the other phases chosen uniformly.
func dwellGenerator(dwell []time.Duration) ([][]float64, error) {
	k := len(dwell)
	g := make([][]float64, k)
	for i := range k {
		g[i] = make([]float64, k)
		if k == 1 {
			break
		}
		if dwell[i] <= 0 {
			return nil, fmt.Errorf("workload: mmpp phase %d dwell must be > 0, got %v", i, dwell[i])
		}
		out := 1 / dwell[i].Seconds() / float64(k-1)
		for j := range k {
			if j != i {
				g[i][j] = out
			}
		}
	}
	return g, nil
}

// stationary solves πQ = 0, Σπ = 1 by Gaussian elimination with partial pivoting.
func stationary(q [][]float64) ([]float64, error) {
	k := len(q)
	// A = Qᵀ with the last equation replaced by Σπ = 1.
	a := make([][]float64, k)
	b := make([]float64, k)
	for i := range k {
		a[i] = make([]float64, k)
		for j := range k {
			a[i][j] = q[j][i]
		}
	}
	for j := range k {
		a[k-1][j] = 1
	}
	b[k-1] = 1
	scale := 0.0
	for i := range k {
		for j := range k {
			scale = math.Max(scale, math.Abs(a[i][j]))
		}
	}
	for c := range k {
		p := c
		for r := c + 1; r < k; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) <= 1e-12*scale {
			return nil, errors.New("workload: mmpp generator is not irreducible (no unique stationary distribution)")
		}
		a[c], a[p] = a[p], a[c]
		b[c], b[p] = b[p], b[c]
		for r := c + 1; r < k; r++ {
			f := a[r][c] / a[c][c]
			for j := c; j < k; j++ {
				a[r][j] -= f * a[c][j]
			}
			b[r] -= f * b[c]
		}
	}
	pi := make([]float64, k)
	for i := k - 1; i >= 0; i-- {
		s := b[i]
		for j := i + 1; j < k; j++ {
			s -= a[i][j] * pi[j]
		}
		pi[i] = s / a[i][i]
	}
	for i, v := range pi {
		if v < -1e-9 {
			return nil, errors.New("workload: mmpp generator is not irreducible (negative stationary mass)")
		}
		pi[i] = math.Max(v, 0)
	}
	return pi, nil
}

// Stationary returns a copy of the stationary phase distribution π.
func (m *MMPP) Stationary() []float64 { return append([]float64(nil), m.pi...) }

// Rates returns a copy of the per-phase arrival rates in requests per second.
func (m *MMPP) Rates() []float64 { return append([]float64(nil), m.rates...) }

// MeanRate returns Σ π_i λ_i in requests per second.
func (m *MMPP) MeanRate() float64 { return m.mean }

func (m *MMPP) holding(rng *rand.Rand) float64 {
	if m.leave[m.state] == 0 {
		return math.Inf(1)
	}
	return rng.ExpFloat64() / m.leave[m.state]
}

func (m *MMPP) move(rng *rand.Rand) {
	k := len(m.rates)
	u := rng.Float64()
	row := m.jump[m.state*k : m.state*k+k]
	for j, c := range row {
		if j != m.state && u < c {
			m.state = j
			return
		}
	}
}

// Next returns the next arrival. The first call draws the initial phase from π.
func (m *MMPP) Next(prev time.Duration, rng *rand.Rand) (time.Duration, bool) {
	t := seconds(prev)
	if !m.started {
		m.started = true
		u := rng.Float64()
		m.state = len(m.pi) - 1
		acc := 0.0
		for i, p := range m.pi {
			acc += p
			if u < acc {
				m.state = i
				break
			}
		}
		m.switchAt = t + m.holding(rng)
	}
	for m.switchAt <= t { // caller skipped ahead: run the chain to t
		m.move(rng)
		m.switchAt += m.holding(rng)
	}
	pos := t
	for {
		if l := m.rates[m.state]; l > 0 {
			if a := pos + rng.ExpFloat64()/l; a < m.switchAt {
				return advance(prev, a-t)
			}
		}
		if math.IsInf(m.switchAt, 1) {
			return 0, false
		}
		pos = m.switchAt
		m.move(rng)
		m.switchAt = pos + m.holding(rng)
	}
}

// Diurnal is a non-homogeneous Poisson process with a sinusoidal daily (or any period) profile:
//
//	λ(t) = base · (1 + amplitude · cos(2π (t − peak) / period))
//
// so the rate peaks at t = peak (mod period) and its mean over a period is base. It is
// simulated exactly by thinning (Lewis–Shedler) a Poisson process of rate base·(1+amplitude).
type Diurnal struct {
	base, amp     float64
	period, peak  float64 // seconds
	omega         float64 // 2π/period, radians per second
	lmax, invLmax float64
}

// NewDiurnal returns a diurnal process: base mean rate in requests per second (> 0), relative
// amplitude in [0, 1], period (> 0) and the instant of the peak within the period.
func NewDiurnal(base, amplitude float64, period, peak time.Duration) (*Diurnal, error) {
	if !(amplitude >= 0 && amplitude <= 1) {
		return nil, fmt.Errorf("workload: diurnal amplitude must be in [0, 1], got %v", amplitude)
	}
	if err := checkRate("diurnal peak rate", base*(1+amplitude)); err != nil {
		return nil, err
	}
	if period <= 0 {
		return nil, fmt.Errorf("workload: diurnal period must be > 0, got %v", period)
	}
	l := base * (1 + amplitude)
	return &Diurnal{base: base, amp: amplitude, period: period.Seconds(), peak: peak.Seconds(),
		omega: 2 * math.Pi / period.Seconds(), lmax: l, invLmax: 1 / l}, nil
}

// Rate returns λ(t) in requests per second.
func (d *Diurnal) Rate(t time.Duration) float64 { return d.rate(t.Seconds()) }

func (d *Diurnal) rate(t float64) float64 {
	return d.base * (1 + d.amp*math.Cos(d.omega*(t-d.peak)))
}

// Next returns the next arrival by thinning.
func (d *Diurnal) Next(prev time.Duration, rng *rand.Rand) (time.Duration, bool) {
	t0 := seconds(prev)
	t := t0
	for {
		t += rng.ExpFloat64() * d.invLmax
		if math.IsInf(t, 1) || t > 9.2e9 {
			return 0, false
		}
		if d.amp == 0 || rng.Float64()*d.lmax < d.rate(t) {
			return advance(prev, t-t0)
		}
	}
}

// MeanRate returns base in requests per second.
func (d *Diurnal) MeanRate() float64 { return d.base }
