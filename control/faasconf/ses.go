package faasconf

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// SES is the safe exploration strategy (section 4.3). It keeps the history
// of the workflow configurations tried: the workload, the joint action,
// its price (equation 2) and whether the QoS was met. The safe range of a
// workload is P(τ) ± N std(P(τ)), τ the cheapest Top share of the
// configurations that met the QoS (N = 2, Top = 20%); a proposed action
// priced outside it is replaced by an action of τ drawn at random plus
// Gaussian noise (equation 10). A range is first set from every record of
// the workload. Boundary adaptation: after Violations QoS violations since
// a range was set it is set again from the workload's Recent latest
// records; a workload without records takes the range of the nearest one
// that has. The paper's ranges only move after violations, so a workload
// whose every configuration meets the QoS keeps turning cheaper ones away;
// here they also move down: after Calm records in a row since a range was
// set or moved that met the QoS at a price at most its upper bound (with no
// violation between), its bounds move down by its width (at least a
// tenth of its middle), and violations bring them back as above.
type SES struct {
	N          float64 // width of the range in standard deviations (2)
	Top        float64 // share of the cheapest QoS-meeting records in τ (0.2)
	Noise      float64 // std of the exploration noise, in action units (0.1)
	Violations int     // violations that make the range be set again (3)
	Recent     int     // records a range is set again from (100)
	Calm       int     // QoS-meeting records in a row that move a range down (5)

	records []Record
	ranges  map[float64]*safeRange
	adapted map[float64]bool // a range was set again after violations: from the Recent latest records
	moves   []RangeMove
	used    *safeRange // the range the last Filter checked against
}

// RangeMove is a safe range as it was set or moved.
type RangeMove struct {
	Records  int     // records in the history when it happened
	Workload float64 // the workload level
	LB, UB   float64 // the new bounds, price per hour
	Cause    string  // "set" from the records, "down" after calm, "reset" after violations
}

// Record is one configuration tried.
type Record struct {
	Workload float64     // the workload level it ran at (e.g. requests/s)
	Action   [][]float64 // per function, in [-1, 1] units (Space.Encode)
	Price    float64     // Price of its configurations
	Met      bool        // whether the QoS was met
}

type safeRange struct {
	lb, ub     float64
	safe       [][][]float64 // τ's actions
	violations int
	calm       int // QoS-meeting records in a row since it was set or moved
}

// NewSES returns the strategy with the paper's settings.
func NewSES() *SES {
	return &SES{N: 2, Top: 0.2, Noise: 0.1, Violations: 3, Recent: 100, Calm: 5, ranges: map[float64]*safeRange{}, adapted: map[float64]bool{}}
}

// Add records a configuration tried; a QoS violation counts against the
// range of its workload, a run of QoS-meeting ones moves it down.
func (s *SES) Add(r Record) {
	s.records = append(s.records, r)
	rg := s.ranges[r.Workload]
	switch {
	case rg == nil:
	case !r.Met:
		rg.calm = 0
		if rg.violations++; rg.violations >= s.Violations {
			delete(s.ranges, r.Workload)
			s.adapted[r.Workload] = true
		}
	case s.Calm > 0 && r.Price <= rg.ub: // a dearer one says nothing of cheaper ones
		if rg.calm++; rg.calm >= s.Calm {
			d := max(rg.ub-rg.lb, (rg.lb+rg.ub)/20)
			rg.lb, rg.ub, rg.calm = max(0, rg.lb-d), max(0, rg.ub-d), 0
			s.moves = append(s.moves, RangeMove{Records: len(s.records), Workload: r.Workload, LB: rg.lb, UB: rg.ub, Cause: "down"})
		}
	}
}

// Used returns the bounds of the range the last Filter checked a proposal
// against (its workload's, or the nearest one's), as they are now; ok is
// false before any or when there was none.
func (s *SES) Used() (lb, ub float64, ok bool) {
	if s.used == nil {
		return 0, 0, false
	}
	return s.used.lb, s.used.ub, true
}

// Moves returns every range as it was set or moved, in order.
func (s *SES) Moves() []RangeMove { return s.moves }

// Records returns the history.
func (s *SES) Records() []Record { return s.records }

// Bounds returns the safe price range of the workload, and false when no
// record met the QoS at it or at any other workload.
func (s *SES) Bounds(workload float64) (lb, ub float64, ok bool) {
	rg := s.rangeOf(workload)
	if rg == nil {
		return 0, 0, false
	}
	return rg.lb, rg.ub, true
}

// Filter returns the action to run at the workload: the proposed one when
// its price is inside the safe range (or when there is no range yet), else
// a safe one drawn from history with noise (equation 10); replaced says
// which.
func (s *SES) Filter(workload float64, proposed [][]float64, price float64, rng *rand.Rand) (action [][]float64, replaced bool) {
	rg := s.rangeOf(workload)
	s.used = rg
	if rg == nil || (price >= rg.lb && price <= rg.ub) {
		return proposed, false
	}
	safe := rg.safe[rng.IntN(len(rg.safe))]
	out := make([][]float64, len(safe))
	for j, a := range safe {
		out[j] = make([]float64, len(a))
		for k, v := range a {
			out[j][k] = math.Max(-1, math.Min(1, v+s.Noise*rng.NormFloat64()))
		}
	}
	return out, true
}

// rangeOf is the workload's range, set from its records if it has none,
// or the nearest workload's.
func (s *SES) rangeOf(workload float64) *safeRange {
	if rg := s.ranges[workload]; rg != nil {
		return rg
	}
	if rg := s.determine(workload); rg != nil {
		s.set(workload, rg)
		return rg
	}
	// No QoS-meeting record at this workload: the nearest one's.
	var levels []float64
	for _, r := range s.records {
		if r.Met && r.Workload != workload && !slices.Contains(levels, r.Workload) {
			levels = append(levels, r.Workload)
		}
	}
	if len(levels) == 0 {
		return nil
	}
	sort.Slice(levels, func(a, b int) bool {
		da, db := math.Abs(levels[a]-workload), math.Abs(levels[b]-workload)
		return da < db || (da == db && levels[a] < levels[b])
	})
	return s.rangeOfLevel(levels[0])
}

func (s *SES) rangeOfLevel(level float64) *safeRange {
	if rg := s.ranges[level]; rg != nil {
		return rg
	}
	rg := s.determine(level)
	s.set(level, rg)
	return rg
}

func (s *SES) set(level float64, rg *safeRange) {
	if rg == nil {
		return
	}
	s.ranges[level] = rg
	cause := "set"
	if s.adapted[level] {
		cause = "reset"
	}
	s.moves = append(s.moves, RangeMove{Records: len(s.records), Workload: level, LB: rg.lb, UB: rg.ub, Cause: cause})
}

// determine sets a range from the level's QoS-meeting records, all of
// them at first and the Recent latest once violations made the range be
// set again (nil without one).
func (s *SES) determine(level float64) *safeRange {
	var met []Record
	seen, limit := 0, len(s.records)
	if s.adapted[level] {
		limit = s.Recent
	}
	for i := len(s.records) - 1; i >= 0 && seen < limit; i-- {
		if r := s.records[i]; r.Workload == level {
			seen++
			if r.Met {
				met = append(met, r)
			}
		}
	}
	if len(met) == 0 {
		return nil
	}
	sort.SliceStable(met, func(a, b int) bool { return met[a].Price < met[b].Price })
	tau := met[:max(1, int(math.Ceil(s.Top*float64(len(met)))))]
	mean, sq := 0.0, 0.0
	for _, r := range tau {
		mean += r.Price
	}
	mean /= float64(len(tau))
	for _, r := range tau {
		sq += (r.Price - mean) * (r.Price - mean)
	}
	std := math.Sqrt(sq / float64(len(tau)))
	rg := &safeRange{lb: mean - s.N*std, ub: mean + s.N*std}
	for _, r := range tau {
		rg.safe = append(rg.safe, r.Action)
	}
	return rg
}
