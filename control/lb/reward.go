package lb

import (
	"math"
	"time"

	"github.com/shoal-project/shoal/metrics"
)

// Reward names an agent's reward, computed from its own observations: a
// fairness index over its per-server estimates l_ij (see Estimate; paper
// section 3.4, "Reward"). The simulator's training and the proxy's online
// training score with the same function.
type Reward string

// The rewards of the paper (section 3.2 and the ablations of App. E.2.1).
const (
	VBF      Reward = "vbf"      // variance-based fairness, Def. 2 (the potential-game reward)
	VBFLog   Reward = "vbf+log"  // VBF plus a log term, more sensitive near zero variance
	Jain     Reward = "jain"     // Jain's index
	PBF      Reward = "pbf"      // product-based fairness, Def. 5
	Makespan Reward = "makespan" // minus the largest l_ij, Def. 1
)

// Valid reports whether r names a reward.
func (r Reward) Valid() bool {
	switch r {
	case VBF, VBFLog, Jain, PBF, Makespan:
		return true
	}
	return false
}

// Estimate names the per-server quantity l_ij that rewards are computed
// from: the paper's Def. 2 asks for the time to finish the remaining jobs.
type Estimate string

const (
	// EstimateBacklog: this LB's requests in flight over their recent completion
	// rate (Observer.Backlogs), which moves as soon as the action does.
	EstimateBacklog Estimate = "backlog"
	// EstimateDuration: the discounted average of sampled task durations
	// (Observer.Durations), the paper's section 3.4. With it every learner
	// we tried drifted to worse weights as it trained: a duration is
	// sampled when a task ends, so the reward lags the action.
	EstimateDuration Estimate = "duration"
)

// Estimates writes the estimate e of every backend at now into dst.
func (o *Observer) Estimates(e Estimate, now time.Duration, dst []float64) []float64 {
	if e == EstimateDuration {
		return o.Durations(now, dst)
	}
	return o.Backlogs(now, dst)
}

// Score is the reward for per-server estimates l (seconds).
func Score(r Reward, l []float64) float64 {
	switch r {
	case VBFLog:
		// The paper adds "a log term" so that agents stay sensitive when the
		// variance is close to 0 (section 4); with F = -variance we use
		// F - log(variance + 1e-3), an interpretation: the text gives no formula.
		v := -metrics.VarianceFairness(l)
		return -v - math.Log(v+1e-3)
	case Jain:
		return metrics.Jain(l)
	case PBF:
		return metrics.ProductFairness(l)
	case Makespan:
		return -metrics.Makespan(l)
	}
	return metrics.VarianceFairness(l)
}
