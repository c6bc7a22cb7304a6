package proxy

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/lb"
)

// agentRunner owns a Distr-LB agent in one goroutine: the request path
// sends it feedback events through a buffered channel (never a lock the
// agent holds), and every period it decides and publishes the new weights
// to the pool atomically.
type agentRunner struct {
	agent  *lb.Agent
	obs    *lb.Observer
	period time.Duration
	base   time.Time // time zero of the agent's clock
	pool   *pool

	events chan feedback
	stop   chan struct{} // closed when Run returns: later events are dropped

	onDecision func(seconds float64)

	mu     sync.Mutex // guards the status fields below
	status agentStatus
}

// feedback is one event of the data plane: a request sent, answered or
// abandoned, at a time on the agent's clock.
type feedback struct {
	kind      feedbackKind
	j         int32
	at        time.Duration
	sentAt    time.Duration
	headersAt time.Duration
}

type feedbackKind uint8

const (
	sent feedbackKind = iota
	answered
	abandoned
)

// agentStatus is what the status page shows of the agent.
type agentStatus struct {
	File          string    `json:"file"`
	LB            string    `json:"lb"`
	Period        string    `json:"period"`
	Decisions     int64     `json:"decisions"`
	LastDecision  time.Time `json:"last_decision,omitzero"`
	DecideSeconds float64   `json:"decide_seconds"`
	Action        []float64 `json:"action,omitempty"`
	Weights       []float64 `json:"weights,omitempty"`
}

// feedbackBuffer is the capacity of the event channel: a burst this large
// may arrive while the agent decides without the request path waiting.
const feedbackBuffer = 1 << 15

// newAgentRunner loads the policy file and the network that drives lbName.
func newAgentRunner(cfg *AgentConfig, backends int, p *pool, base time.Time) (*agentRunner, error) {
	f, err := os.Open(cfg.File)
	if err != nil {
		return nil, fmt.Errorf("agent.file: %w", err)
	}
	defer f.Close()
	pol, err := lb.ReadPolicy(f)
	if err != nil {
		return nil, fmt.Errorf("agent.file %s: %w", cfg.File, err)
	}
	agent, err := pol.Agent(cfg.LB)
	if err != nil {
		return nil, fmt.Errorf("agent.lb: %w", err)
	}
	if n := agent.Backends(); n != backends {
		return nil, fmt.Errorf("agent.file %s: network %s drives %d backends, the proxy has %d", cfg.File, cfg.LB, n, backends)
	}
	obs, ok := agent.Feedback(0).(*lb.Observer)
	if !ok {
		return nil, fmt.Errorf("agent.file %s: the agent's feedback is not an observer", cfg.File)
	}
	period := cfg.Period
	if period == 0 {
		period = time.Duration(pol.Period)
	}
	r := &agentRunner{agent: agent, obs: obs, period: period, base: base, pool: p,
		events: make(chan feedback, feedbackBuffer), stop: make(chan struct{})}
	r.status = agentStatus{File: cfg.File, LB: cfg.LB, Period: period.String()}
	return r, nil
}

// now is the agent's clock: time since base.
func (r *agentRunner) now() time.Duration { return time.Since(r.base) }

// send delivers an event; after the runner stopped it is dropped.
func (r *agentRunner) send(e feedback) {
	select {
	case r.events <- e:
	case <-r.stop:
	}
}

// Run decides every period until ctx is done.
func (r *agentRunner) Run(ctx context.Context) {
	defer close(r.stop)
	tick := time.NewTicker(r.period)
	defer tick.Stop()
	var last time.Duration // events may arrive slightly out of order: keep the clock monotone
	apply := func(e feedback) {
		at := max(e.at, last)
		last = at
		switch e.kind {
		case sent:
			r.obs.Sent(at, int(e.j))
		case answered:
			r.obs.Done(at, int(e.j), e.headersAt-e.sentAt, e.at-e.sentAt)
		case abandoned:
			r.obs.Abandon(at, int(e.j), e.at-e.sentAt)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-r.events:
			apply(e)
		case <-tick.C:
			for n := len(r.events); n > 0; n-- { // what arrived before the tick
				apply(<-r.events)
			}
			r.decide(max(r.now(), last))
		}
	}
}

func (r *agentRunner) decide(now time.Duration) {
	start := time.Now()
	acts := r.agent.Decide(now, nil)
	w := acts[0].(control.SetWeights).Weights
	r.pool.setLearned(w)
	took := time.Since(start).Seconds()
	if r.onDecision != nil {
		r.onDecision(took)
	}
	r.mu.Lock()
	s := &r.status
	s.Decisions++
	s.LastDecision, s.DecideSeconds = time.Now(), took
	s.Action = append(s.Action[:0], r.agent.Action()...)
	s.Weights = append(s.Weights[:0], w...)
	r.mu.Unlock()
}

// Status returns a copy of the agent's status.
func (r *agentRunner) Status() agentStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.status
	s.Action = append([]float64(nil), s.Action...)
	s.Weights = append([]float64(nil), s.Weights...)
	return s
}
