package lb

import (
	"math"
	"time"

	"github.com/shoal-project/shoal/learn/nn"
)

// LearnedSED is the general Distr-LB policy's selector: ProbingSED whose
// weights a GeneralPolicy's network corrects, per server, every Period.
// It reads only what ProbingSED's data plane gives it: the load and the
// time at the server each response piggybacks, probe answers, and this LB
// point's own completion times. From these it keeps, per server, the
// time a request takes per unit of its share of the server (the
// piggybacked service time over max(1, (RIF+1)/w), in log space, averaged
// over the last Memory responses with its variance), the speed evidence
// the network may trust or not; and the own completion times. Decisions
// allocate nothing.
type LearnedSED struct {
	pol   *GeneralPolicy
	inner *ProbingSED
	pred  *nn.MLPPredictor[float64]

	next  time.Duration // the next decision
	view  View          // the data plane's view with corrected weights
	scale []float64     // per server: the correction in force
	base  []float64     // per server: the configured weight
	w     []float64     // per server: weight times correction
	unit  []ewma        // per server: log time per unit of share, from responses
	tct   []ewma        // per server: log own completion time
	est   []float64     // per server: probing-sed's load estimate at the decision
	x     []float64     // one server's features
	y     []float64     // the network's output
}

// ewma is an exponentially weighted mean and variance of a series, with
// the number of samples it holds (at most the memory).
type ewma struct{ mean, vari, n float64 }

func (e *ewma) add(x, memory float64) {
	e.n = min(e.n+1, memory)
	a := 1 / e.n
	d := x - e.mean
	e.mean += a * d
	e.vari = (1 - a) * (e.vari + a*d*d)
}

func (s *LearnedSED) size(n int) {
	if len(s.scale) == n {
		return
	}
	s.scale, s.base, s.w = make([]float64, n), make([]float64, n), make([]float64, n)
	for j := range s.scale {
		s.scale[j] = 1
	}
	s.unit, s.tct, s.est = make([]ewma, n), make([]ewma, n), make([]float64, n)
	s.x, s.y = make([]float64, GeneralFeatures), make([]float64, 1)
	s.next = 0
}

// Select implements Selector.
func (s *LearnedSED) Select(v *View, r Request) int {
	s.size(v.Len())
	s.inner.size(v.Len())
	if r.Now >= s.next {
		s.decide(v, r.Now)
		s.next = r.Now + time.Duration(s.pol.Period)
	}
	for j, w := range v.Weights {
		s.base[j], s.w[j] = w, w*s.scale[j]
	}
	s.view = *v
	s.view.Weights = s.w
	return s.inner.Select(&s.view, r)
}

// decide runs the network on every server's features.
func (s *LearnedSED) decide(v *View, now time.Duration) {
	var c crossServer
	c.measure(s, v, now)
	for j, up := range v.Up {
		if !up || v.Weights[j] <= 0 {
			s.scale[j] = 1
			continue
		}
		s.features(j, v, &c)
		s.pred.Predict(s.y, s.x)
		s.scale[j] = math.Pow(10, s.pol.Decades*math.Tanh(s.y[0]))
	}
}

// crossServer holds the means across the up servers that features are
// taken relative to.
type crossServer struct {
	up, sampled          float64
	logW, unit, unit2    float64
	timed, tct, load, wt float64
	est                  float64 // sum of estimated requests in flight
}

func (c *crossServer) measure(s *LearnedSED, v *View, now time.Duration) {
	for j, up := range v.Up {
		w := v.Weights[j]
		if !up || w <= 0 {
			continue
		}
		c.up++
		c.logW += math.Log(w)
		est, _ := s.inner.estimate(j, v, now)
		e := float64(est)
		s.est[j] = e
		c.est += e
		c.wt += w
		c.load += math.Log((e + 1) / w)
		if u := s.unit[j]; u.n > 0 {
			c.sampled++
			c.unit += u.mean
			c.unit2 += u.mean * u.mean
		}
		if t := s.tct[j]; t.n > 0 {
			c.timed++
			c.tct += t.mean
		}
	}
	if c.up > 0 {
		c.logW /= c.up
		c.load /= c.up
	}
	if c.sampled > 0 {
		c.unit /= c.sampled
		c.unit2 = math.Sqrt(max(0, c.unit2/c.sampled-c.unit*c.unit))
	}
	if c.timed > 0 {
		c.tct /= c.timed
	}
}

// features writes server j's features into s.x: its configured weight,
// speed evidence and its confidence, the spread of that evidence across
// servers, its own completion times and load, each relative to the other
// servers; then the load of the whole pool and its size.
func (s *LearnedSED) features(j int, v *View, c *crossServer) {
	const noEvidence = 3 // the standard error given to a server without samples
	x := s.x
	clear(x)
	w := v.Weights[j]
	x[0] = math.Log(w) - c.logW
	u := s.unit[j]
	x[2] = noEvidence
	if u.n > 0 {
		x[1] = u.mean - c.unit
		x[2] = min(noEvidence, math.Sqrt(u.vari/u.n))
	} else {
		x[8] = 1
	}
	x[3] = c.unit2
	if t := s.tct[j]; t.n > 0 {
		x[4] = t.mean - c.tct
	}
	x[5] = math.Log((s.est[j]+1)/w) - c.load
	x[6] = math.Log((c.est + c.up) / c.wt)
	x[7] = math.Log(c.up) / math.Log(32)
	x[9] = u.n / s.pol.Memory
}

// Sent implements Feedback.
func (s *LearnedSED) Sent(now time.Duration, j int) { s.inner.Sent(now, j) }

// Done implements Feedback: the completion time joins server j's.
func (s *LearnedSED) Done(now time.Duration, j int, d, tct time.Duration) {
	s.inner.Done(now, j, d, tct)
	if j < len(s.tct) && tct > 0 {
		s.tct[j].add(math.Log(tct.Seconds()), s.pol.Memory)
	}
}

// Reported implements LoadFeedback: the response's time at the server,
// per unit of the share it had there, joins server j's evidence.
func (s *LearnedSED) Reported(now time.Duration, j int, l Load) {
	s.inner.Reported(now, j, l)
	if j < len(s.unit) && l.Service > 0 && s.base[j] > 0 {
		share := max(1, float64(l.RIF+1)/s.base[j])
		s.unit[j].add(math.Log(l.Service.Seconds()/share), s.pol.Memory)
	}
}

// ProbeTargets implements Prober.
func (s *LearnedSED) ProbeTargets(now time.Duration, v *View, dst []int) []int {
	return s.inner.ProbeTargets(now, v, dst)
}

// Probed implements Prober.
func (s *LearnedSED) Probed(now time.Duration, j int, l Load) { s.inner.Probed(now, j, l) }
