package drpc

// Notifier is DRPC's retraining notifier (Algorithm 4): it keeps the last
// NPR rewards in a ring and asks for retraining when it has NPR of them and
// their average is below TH.
//
// The paper's TH is a constant it does not publish. An absolute level does
// not carry from the training workload to a deployment's (the same
// students earn 0.37 a period in DRPC's training surges and 0.60 at a
// steady 200 requests/s), so with Relative > 0 TH is set when the first NPR
// rewards are in, after the start and after every Reset, to Relative times
// their average: the notifier fires when the reward falls that far below
// the level the students established.
type Notifier struct {
	TH       float64
	Relative float64
	history  []float64
	iter     int
}

// NewNotifier returns a notifier over the last npr rewards (npr >= 1) with
// the threshold th or, if relative > 0, relative times the first window's
// average.
func NewNotifier(npr int, th, relative float64) *Notifier {
	return &Notifier{TH: th, Relative: relative, history: make([]float64, max(npr, 1))}
}

// Add records the reward of the current action (lines 4-7) and reports
// whether retraining is due (lines 8-13).
func (n *Notifier) Add(reward float64) bool {
	n.history[n.iter%len(n.history)] = reward
	n.iter++
	if n.iter < len(n.history) {
		return false
	}
	if n.iter == len(n.history) && n.Relative > 0 {
		n.TH = n.Relative * n.Average()
		return false
	}
	return n.Average() < n.TH
}

// Average is the mean of the rewards in the ring.
func (n *Notifier) Average() float64 {
	c := min(n.iter, len(n.history))
	if c == 0 {
		return 0
	}
	sum := 0.0
	for _, r := range n.history[:c] {
		sum += r
	}
	return sum / float64(c)
}

// Reset empties the history, e.g. after retraining.
func (n *Notifier) Reset() {
	clear(n.history)
	n.iter = 0
}
