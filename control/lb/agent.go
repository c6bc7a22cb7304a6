package lb

import (
	"fmt"
	"math"
	"time"

	"github.com/shoal-project/shoal/metrics"
)

// Feedback is what a data plane reports about one LB point's own traffic,
// as it happens: the only knowledge a Distr-LB agent has (paper section 2,
// partial observability). The simulator's LB points and the real proxy both
// call it.
type Feedback interface {
	// Sent: a request went to backend j.
	Sent(now time.Duration, j int)
	// Done: a request to backend j was answered. Duration is the task
	// duration (until the backend began to answer: time to response
	// headers), TCT the task completion time (until the whole response).
	Done(now time.Duration, j int, duration, tct time.Duration)
}

// Tee is a Feedback that reports to both of its sinks, in order.
type Tee [2]Feedback

// Sent implements Feedback.
func (t Tee) Sent(now time.Duration, j int) { t[0].Sent(now, j); t[1].Sent(now, j) }

// Done implements Feedback.
func (t Tee) Done(now time.Duration, j int, duration, tct time.Duration) {
	t[0].Done(now, j, duration, tct)
	t[1].Done(now, j, duration, tct)
}

// Observer turns an LB point's feedback into the Distr-LB agent's
// observation (paper section 3.4, "Observation"): per backend, the number of
// this LB's requests in flight and the task duration and completion time
// samples reduced to 5 scalars each (average, 90th percentile, standard
// deviation, discounted and weighted discounted average with factor 0.9, see
// metrics.SampleReducer); the LB-level inter-arrival samples reduced the same
// way; and the previous action. Times enter as log(1+seconds) so that
// milliseconds and minutes share one scale. Observe allocates nothing.
type Observer struct {
	period      time.Duration
	inFlight    []int32
	sentAt      [][]time.Duration // per backend: send times of this LB's requests in flight
	done        []decayedCount    // per backend: this LB's completions, discounted
	duration    []*metrics.SampleReducer
	tct         []*metrics.SampleReducer
	interArr    *metrics.SampleReducer
	lastArrival time.Duration
	arrived     bool
	prev        []float64
}

// Observation layout sizes.
const (
	perBackend = 1 + 5 + 5 // in flight, duration x5, TCT x5
	lbLevel    = 5         // inter-arrival x5
	// samplesPerBackend bounds the recent samples kept per backend and metric.
	samplesPerBackend = 32
	// interArrivalSamples bounds the recent inter-arrival samples.
	interArrivalSamples = 128
)

// NewObserver returns the observer of an LB point with n backends whose
// agent decides every period (the discount time unit).
func NewObserver(n int, period time.Duration) (*Observer, error) {
	if n < 1 || period <= 0 {
		return nil, fmt.Errorf("distr-lb observer: need backends >= 1 and period > 0, got %d and %v", n, period)
	}
	o := &Observer{period: period, inFlight: make([]int32, n), sentAt: make([][]time.Duration, n), done: make([]decayedCount, n), prev: make([]float64, n),
		interArr: metrics.NewSampleReducer(interArrivalSamples)}
	for j := 0; j < n; j++ {
		o.duration = append(o.duration, metrics.NewSampleReducer(samplesPerBackend))
		o.tct = append(o.tct, metrics.NewSampleReducer(samplesPerBackend))
	}
	return o, nil
}

// Len is the length of the observation vector: 12 per backend plus 5.
func (o *Observer) Len() int { return len(o.inFlight)*(perBackend+1) + lbLevel }

// Backends is the number of backends.
func (o *Observer) Backends() int { return len(o.inFlight) }

// Sent implements Feedback.
func (o *Observer) Sent(now time.Duration, j int) {
	o.inFlight[j]++
	o.sentAt[j] = append(o.sentAt[j], now)
	if o.arrived {
		o.interArr.Add(now, (now - o.lastArrival).Seconds())
	}
	o.lastArrival, o.arrived = now, true
}

// Done implements Feedback.
func (o *Observer) Done(now time.Duration, j int, duration, tct time.Duration) {
	if o.inFlight[j] > 0 {
		o.inFlight[j]--
		o.forget(j, now-tct)
	}
	o.duration[j].Add(now, duration.Seconds())
	o.tct[j].Add(now, tct.Seconds())
	o.done[j].add(now, o.period)
}

// Abandon: a request sent to backend j at now-age ended without an answer
// (its connection failed, or the client went away), so it leaves the
// in-flight count without giving a duration sample: a refused connection
// says nothing about how fast the backend serves. Real data planes call it;
// the simulator has no such failures.
func (o *Observer) Abandon(now time.Duration, j int, age time.Duration) {
	if o.inFlight[j] > 0 {
		o.inFlight[j]--
		o.forget(j, now-age)
	}
}

// decayedCount counts events with weight 0.9^(age in periods), the
// discount of the paper's observation (footnote 5).
type decayedCount struct {
	n  float64
	at time.Duration
}

func (c *decayedCount) value(now, period time.Duration) float64 {
	return c.n * math.Pow(metrics.DefaultDiscount, float64(now-c.at)/float64(period))
}

func (c *decayedCount) add(now, period time.Duration) {
	c.n, c.at = c.value(now, period)+1, now
}

// Backlogs writes into dst, per backend, the time this LB's requests in
// flight there need to finish at the rate its requests recently finished:
// l_ij = q_ij / λ_ij, the "time to finish all remaining jobs" of the
// paper's Def. 2, estimated by Little's law from the agent's own traffic.
// λ_ij counts completions discounted by 0.9 per period, over their mean
// age, the window τ = period / −ln 0.9 (a Poisson stream of rate λ
// scores λ on average); at least one completion per window is assumed, so
// a backend that has not answered yet counts as slow, not infinitely slow.
//
// In steady state q/λ is the mean task duration, the paper's reward input
// (Durations); unlike a duration, which is sampled only when a task ends,
// it changes the moment an agent sends more or less to a backend, so the
// reward follows the action instead of lagging it by a task's lifetime.
func (o *Observer) Backlogs(now time.Duration, dst []float64) []float64 {
	if len(dst) < len(o.inFlight) {
		dst = make([]float64, len(o.inFlight))
	}
	dst = dst[:len(o.inFlight)]
	tau := o.period.Seconds() / -math.Log(metrics.DefaultDiscount)
	for j, q := range o.inFlight {
		rate := max(o.done[j].value(now, o.period), 1) / tau
		dst[j] = float64(q) / rate
	}
	return dst
}

// forget removes the request sent at t from backend j's requests in
// flight (the oldest one if no send time matches: a data plane whose clock
// readings differ slightly still keeps the count right).
func (o *Observer) forget(j int, t time.Duration) {
	at := o.sentAt[j]
	if len(at) == 0 {
		return
	}
	k := 0
	for i, s := range at {
		if s == t {
			k = i
			break
		}
		if s < at[k] {
			k = i
		}
	}
	at[k] = at[len(at)-1]
	o.sentAt[j] = at[:len(at)-1]
}

// SetPrevious records the action taken, for the next observation.
func (o *Observer) SetPrevious(action []float64) { copy(o.prev, action) }

// Observe writes the observation at now into dst (length Len) and returns it;
// a nil or short dst is replaced by a new slice.
func (o *Observer) Observe(now time.Duration, dst []float64) []float64 {
	if len(dst) < o.Len() {
		dst = make([]float64, o.Len())
	}
	dst = dst[:o.Len()]
	var r [5]float64
	k := 0
	for j := range o.inFlight {
		dst[k] = math.Log1p(float64(o.inFlight[j]))
		k++
		o.duration[j].Reduce(now, o.period, &r)
		k += logTimes(dst[k:], &r)
		o.tct[j].Reduce(now, o.period, &r)
		k += logTimes(dst[k:], &r)
	}
	o.interArr.Reduce(now, o.period, &r)
	k += logTimes(dst[k:], &r)
	copy(dst[k:], o.prev)
	return dst
}

// Durations writes into dst, per backend, the task duration l_ij (seconds)
// that the paper's rewards are computed from (section 3.4, "Reward"): the
// discounted average of the sampled task durations, or the age of this
// LB's oldest request in flight at that backend, if larger.
//
// The paper uses the sampled durations alone, as an estimate of the
// remaining work l_j of Def. 2. But a duration is sampled only when a task
// completes, so an overloaded server reports nothing until its backlog
// clears, and within a training episode overloading a slow server went
// unpunished (agents learned to do it). Ongoing tasks are censored samples:
// a duration is at least the age, so the oldest task's age bounds l_j from
// below. (Their mean age would not do: sending more requests to a
// backlogged server lowers it.) It uses only the agent's own traffic.
func (o *Observer) Durations(now time.Duration, dst []float64) []float64 {
	if len(dst) < len(o.duration) {
		dst = make([]float64, len(o.duration))
	}
	dst = dst[:len(o.duration)]
	var r [5]float64
	for j, d := range o.duration {
		d.Reduce(now, o.period, &r)
		dst[j] = r[metrics.ReduceDiscountedMean]
		if at := o.sentAt[j]; len(at) > 0 {
			oldest := at[0]
			for _, t := range at[1:] {
				oldest = min(oldest, t)
			}
			dst[j] = math.Max(dst[j], (now - oldest).Seconds())
		}
	}
	return dst
}

// Reset forgets everything, for a new episode.
func (o *Observer) Reset() {
	for j := range o.inFlight {
		o.inFlight[j], o.sentAt[j], o.done[j] = 0, o.sentAt[j][:0], decayedCount{}
		o.duration[j].Reset()
		o.tct[j].Reset()
		o.prev[j] = 0
	}
	o.interArr.Reset()
	o.arrived = false
}

func logTimes(dst []float64, r *[5]float64) int {
	for i, v := range r {
		dst[i] = math.Log1p(v)
	}
	return len(r)
}

// WeightDecades is the span of the weights on either side of 1, in powers
// of ten: an action x in [-1, 1] sets a = 10^(WeightDecades·x).
//
// Only ratios of weights matter to argmin (q+1)/a, and half a decade each
// way (ratios up to 10) covers the speed ratios of the paper's setups at
// the weights that serve them best (about speed^0.75 on the moderate
// setup). A wider span hurt: the SAC actors drive most outputs to the tanh
// bounds, and with 10^±1 a saturated output sends a server 100 times the
// share of another (on lb-moderate-cpu, where the Oracle reaches 1.25 s,
// four training runs with 10^±1 reached 1.40-2.41 s mean completion time,
// four with 10^±0.5 and otherwise the same settings 1.50-1.61 s).
const WeightDecades = 0.5

// ActionToWeights maps an agent's action in [-1, 1]^n to the data plane's
// weights a_ij = 10^(WeightDecades·x), relative processing speeds from
// 1/√10 to √10, as argmin_j (q_ij+1)/a_ij needs (paper Alg. 2, line 12).
// It writes into dst.
func ActionToWeights(dst, action []float64) []float64 {
	if len(dst) < len(action) {
		dst = make([]float64, len(action))
	}
	dst = dst[:len(action)]
	for j, x := range action {
		dst[j] = math.Pow(10, WeightDecades*math.Max(-1, math.Min(1, x)))
	}
	return dst
}
