package drpc

// Notifier is DRPC's retraining notifier (Algorithm 4): it keeps the last
// NPR rewards in a ring and asks for retraining when it has NPR of them and
// their average is below TH.
type Notifier struct {
	TH      float64
	history []float64
	iter    int
}

// NewNotifier returns a notifier over the last npr rewards (npr >= 1).
func NewNotifier(npr int, th float64) *Notifier {
	return &Notifier{TH: th, history: make([]float64, max(npr, 1))}
}

// Add records the reward of the current action (lines 4-7) and reports
// whether retraining is due (lines 8-13).
func (n *Notifier) Add(reward float64) bool {
	n.history[n.iter%len(n.history)] = reward
	n.iter++
	if n.iter < len(n.history) {
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
