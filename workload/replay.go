package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// RateSeries is a piecewise-constant rate over time: bucket i covers trace time
// [i·Step, (i+1)·Step) and has rate Values[i].
type RateSeries struct {
	// Step is the width of one bucket in trace time.
	Step time.Duration
	// Values are the per-bucket rates in requests per second, or a dimensionless shape when Relative.
	Values []float64
	// Relative marks a series that is only a shape (for example CPU utilisation in percent):
	// replaying it needs a target rate or a scale.
	Relative bool
}

// Len returns the number of buckets.
func (s *RateSeries) Len() int { return len(s.Values) }

// Duration returns the trace time covered: Len·Step.
func (s *RateSeries) Duration() time.Duration { return time.Duration(len(s.Values)) * s.Step }

// Mean returns the mean of Values (requests per second unless Relative); 0 for an empty series.
func (s *RateSeries) Mean() float64 {
	if len(s.Values) == 0 {
		return 0
	}
	sum := 0.0
	for _, v := range s.Values {
		sum += v
	}
	return sum / float64(len(s.Values))
}

// Aggregate returns a series with buckets of width bin (a positive multiple of Step), each the
// mean of the buckets it covers; a final partial bin averages the buckets it has.
func (s *RateSeries) Aggregate(bin time.Duration) (*RateSeries, error) {
	if s.Step <= 0 || bin <= 0 || bin%s.Step != 0 {
		return nil, fmt.Errorf("workload: aggregation bin %v must be a positive multiple of the step %v", bin, s.Step)
	}
	m := int(bin / s.Step)
	out := &RateSeries{Step: bin, Relative: s.Relative, Values: make([]float64, 0, (len(s.Values)+m-1)/m)}
	for i := 0; i < len(s.Values); i += m {
		j := min(i+m, len(s.Values))
		sum := 0.0
		for _, v := range s.Values[i:j] {
			sum += v
		}
		out.Values = append(out.Values, sum/float64(j-i))
	}
	return out, nil
}

// ReplayOptions say how a trace is replayed. Start and Window are in trace time; the replayed
// part is then compressed by Speedup and its rate scaled.
type ReplayOptions struct {
	// Start is the trace-time offset where the replay begins (0 = trace start).
	Start time.Duration
	// Window is the trace-time length replayed (0 = to the end of the trace).
	Window time.Duration
	// Speedup compresses time: trace time t is replayed at simulated time t/Speedup, and the same
	// arrivals happen Speedup times faster (60 replays one trace hour in 60 simulated seconds).
	// 0 means 1.
	Speedup float64
	// Scale multiplies the arrival rate after compression (0 means 1). Ignored when TargetRate > 0.
	Scale float64
	// TargetRate, when > 0, rescales the replay so its mean rate over the window equals it
	// (requests per second of simulated time). This is how a load level is applied.
	TargetRate float64
	// Loop restarts the window when it is exhausted; otherwise the process ends (Next returns
	// ok=false) after the window.
	Loop bool
}

func (o ReplayOptions) check() error {
	switch {
	case o.Start < 0:
		return fmt.Errorf("workload: replay start must be >= 0, got %v", o.Start)
	case o.Window < 0:
		return fmt.Errorf("workload: replay window must be >= 0, got %v", o.Window)
	case !(o.Speedup >= 0) || math.IsInf(o.Speedup, 0):
		return fmt.Errorf("workload: replay speedup must be > 0, got %v", o.Speedup)
	case !(o.Scale >= 0) || math.IsInf(o.Scale, 0):
		return fmt.Errorf("workload: replay scale must be > 0, got %v", o.Scale)
	case !(o.TargetRate >= 0) || math.IsInf(o.TargetRate, 0):
		return fmt.Errorf("workload: replay target rate must be >= 0, got %v", o.TargetRate)
	}
	return nil
}

func orOne(x float64) float64 {
	if x == 0 {
		return 1
	}
	return x
}

// SeriesReplay is a non-homogeneous Poisson process whose rate is a piecewise-constant series
// (an NHPP over the series). It is exact: Next draws an Exp(1) "area" and walks the buckets,
// subtracting each bucket's rate×remaining-width, until the area runs out inside a bucket.
//
// The window [Start, Start+Window) is widened to whole buckets. A bucket of trace width Step
// lasts Step/Speedup simulated seconds; the rate in simulated time is Values[i]·Speedup·Scale,
// or the values rescaled so that their mean over the window equals TargetRate.
type SeriesReplay struct {
	values []float64 // window of the source series (shared, read-only)
	factor float64   // multiplies values to give req/s in simulated time
	step   float64   // simulated seconds per bucket
	span   float64   // simulated seconds per window
	area   float64   // expected arrivals per window pass
	mean   float64   // mean rate over the window, req/s
	loop   bool

	// Cursor: the bucket and pass start of the last returned arrival, reused when Next is called
	// with that arrival (the usual case) to avoid locating the bucket again.
	lastAt   time.Duration
	lastI    int
	lastBase float64
}

// NewSeriesReplay returns an NHPP replaying s with the given options. It does not copy s.Values:
// the series must not be modified while the replay is in use.
func NewSeriesReplay(s *RateSeries, o ReplayOptions) (*SeriesReplay, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if s.Step <= 0 {
		return nil, fmt.Errorf("workload: series step must be > 0, got %v", s.Step)
	}
	n := len(s.Values)
	i0 := int(o.Start / s.Step)
	i1 := n
	if o.Window > 0 {
		end := o.Start + o.Window
		i1 = int(end / s.Step)
		if end%s.Step != 0 {
			i1++
		}
		i1 = min(i1, n)
	}
	if i0 >= i1 {
		return nil, fmt.Errorf("workload: replay window [%v, %v) is outside the series (%v long)", o.Start, o.Start+o.Window, s.Duration())
	}
	vals := s.Values[i0:i1]
	sum := 0.0
	for i, v := range vals {
		if !(v >= 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("workload: series value %d must be >= 0 and finite, got %v", i0+i, v)
		}
		sum += v
	}
	mean := sum / float64(len(vals))
	if !(mean > 0) {
		return nil, fmt.Errorf("workload: series window [%v, %v) has no arrivals (all rates 0)", time.Duration(i0)*s.Step, time.Duration(i1)*s.Step)
	}
	sp := orOne(o.Speedup)
	var factor float64
	switch {
	case o.TargetRate > 0:
		factor = o.TargetRate / mean
	case s.Relative && o.Scale == 0:
		return nil, errors.New("workload: series is a relative shape (not requests per second): set a target rate or a scale")
	default:
		factor = sp * orOne(o.Scale)
	}
	step := s.Step.Seconds() / sp
	if !(step >= 1e-9) {
		return nil, fmt.Errorf("workload: series step %v compressed by %v is shorter than 1ns", s.Step, sp)
	}
	if peak := slices.Max(vals) * factor; !(peak <= MaxRate) {
		return nil, fmt.Errorf("workload: replayed peak rate %v req/s exceeds %g", peak, MaxRate)
	}
	return &SeriesReplay{
		values: vals, factor: factor, step: step,
		span: step * float64(len(vals)), area: sum * factor * step, mean: mean * factor, loop: o.Loop,
		lastAt: -1,
	}, nil
}

// MeanRate returns the mean rate over the replayed window in requests per second.
func (r *SeriesReplay) MeanRate() float64 { return r.mean }

// Rate returns the replayed rate at simulated time t in requests per second (0 after the end).
func (r *SeriesReplay) Rate(t time.Duration) float64 {
	x := t.Seconds()
	if r.loop {
		x = math.Mod(x, r.span)
	}
	i := int(x / r.step)
	if x < 0 || i >= len(r.values) {
		return 0
	}
	return r.values[i] * r.factor
}

// Step returns the simulated length of one bucket, rounded to the nanosecond.
func (r *SeriesReplay) Step() time.Duration { return time.Duration(math.Round(r.step * 1e9)) }

// BucketRate returns the replayed rate of bucket i (from the start of the window, counting the
// passes of a loop) in requests per second; 0 after the end.
func (r *SeriesReplay) BucketRate(i int) float64 {
	if r.loop && i >= 0 {
		i %= len(r.values)
	}
	if i < 0 || i >= len(r.values) {
		return 0
	}
	return r.values[i] * r.factor
}

// Peak returns the highest replayed rate in requests per second.
func (r *SeriesReplay) Peak() float64 { return slices.Max(r.values) * r.factor }

// Span returns the simulated length of one pass over the window.
func (r *SeriesReplay) Span() time.Duration { return time.Duration(r.span * 1e9) }

// Next returns the next arrival of the NHPP after prev.
func (r *SeriesReplay) Next(prev time.Duration, rng *rand.Rand) (time.Duration, bool) {
	t := seconds(prev)
	var base float64
	var i int
	if prev == r.lastAt {
		i, base = r.lastI, r.lastBase
	} else {
		if r.loop {
			base = math.Floor(t/r.span) * r.span
		} else if t >= r.span {
			return 0, false
		}
		i = max(int((t-base)/r.step), 0)
	}
	n := len(r.values)
	area := rng.ExpFloat64()
	pos := t
	for {
		if i >= n {
			if !r.loop {
				return 0, false
			}
			i = 0
			base += r.span
			if area > r.area {
				// Skip whole passes: each consumes exactly r.area of the exponential area.
				k := math.Floor(area / r.area)
				base += k * r.span
				area -= k * r.area
			}
			if !(base <= 9.2e9) {
				return 0, false
			}
			pos = base
		}
		end := base + float64(i+1)*r.step
		if l := r.values[i] * r.factor; l > 0 && end > pos {
			need := (end - pos) * l
			if area <= need {
				a := pos + area/l
				if a > end {
					a = end
				}
				at, ok := advance(prev, a-t)
				if ok {
					r.lastAt, r.lastI, r.lastBase = at, i, base
				}
				return at, ok
			}
			area -= need
		}
		if end > pos {
			pos = end
		}
		i++
	}
}

// InstantReplay replays recorded arrival instants exactly (for example the Azure LLM trace).
//
// The instants in the window [Start, Start+Window) are shifted so that Start is 0 and divided by
// a compression factor: Speedup·Scale, or, when TargetRate > 0, the factor that makes the mean
// rate equal TargetRate. For recorded instants every rate change is thus a change of the time
// axis: the bursts keep their shape and their order, and there are never more or fewer arrivals.
// (To scale the rate without warping time, bin the instants into a RateSeries with
// RequestTrace.Series and replay that.)
//
// With Loop the window repeats with a period of Window, or, without a Window, of the span from
// the window start to the last instant plus one mean inter-arrival gap. Next ignores prev and
// advances a cursor, so it must be called in sequence.
type InstantReplay struct {
	at     []time.Duration // trace instants relative to the window start (shared, read-only)
	div    float64         // compression factor
	period time.Duration   // simulated loop period
	mean   float64
	loop   bool

	idx   int
	cycle time.Duration // start of the current pass in simulated time
}

// NewInstantReplay returns a replay of the sorted trace instants at (relative to the trace
// start) with options o. It copies the instants of the window.
func NewInstantReplay(at []time.Duration, o ReplayOptions) (*InstantReplay, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	var w []time.Duration
	for i, a := range at {
		if i > 0 && a < at[i-1] {
			return nil, fmt.Errorf("workload: instants are not sorted at index %d", i)
		}
		if a >= o.Start && (o.Window == 0 || a < o.Start+o.Window) {
			w = append(w, a-o.Start)
		}
	}
	if len(w) == 0 {
		return nil, fmt.Errorf("workload: replay window [%v, %v) holds no arrivals", o.Start, o.Start+o.Window)
	}
	period := o.Window // trace time
	if period == 0 {
		last := w[len(w)-1]
		if len(w) > 1 {
			period = last + (last-w[0])/time.Duration(len(w)-1)
		}
		if period <= last {
			period = last + 1 // a single instant: any period works
		}
	}
	traceRate := float64(len(w)) / period.Seconds()
	div := orOne(o.Speedup) * orOne(o.Scale)
	if o.TargetRate > 0 {
		div = o.TargetRate / traceRate
	}
	simPeriod := float64(period) / div
	if !(simPeriod >= 1 && simPeriod < math.MaxInt64/4) {
		return nil, fmt.Errorf("workload: replay period %v compressed by %v is out of range", period, div)
	}
	r := &InstantReplay{div: div, period: time.Duration(simPeriod), mean: traceRate * div, loop: o.Loop}
	r.at = make([]time.Duration, len(w))
	for i, a := range w {
		if div == 1 {
			r.at[i] = a
		} else {
			r.at[i] = time.Duration(math.Round(float64(a) / div))
		}
	}
	return r, nil
}

// MeanRate returns the number of instants per simulated second of one window pass.
func (r *InstantReplay) MeanRate() float64 { return r.mean }

// Len returns the number of instants in one pass.
func (r *InstantReplay) Len() int { return len(r.at) }

// Next returns the next recorded instant (scaled); ok=false after the last one unless looping.
func (r *InstantReplay) Next(prev time.Duration, _ *rand.Rand) (time.Duration, bool) {
	if r.idx >= len(r.at) {
		if !r.loop {
			return 0, false
		}
		r.idx = 0
		if r.cycle > math.MaxInt64-2*r.period {
			return 0, false
		}
		r.cycle += r.period
	}
	a := r.cycle + r.at[r.idx]
	r.idx++
	if a < prev {
		a = prev
	}
	return a, true
}
