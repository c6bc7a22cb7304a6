package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/learn/modelfile"
)

// agentRunner owns a Distr-LB agent in one goroutine: the request path
// sends it feedback events through a buffered channel (never a lock the
// agent holds), and every period it decides and publishes the new weights
// to the pool atomically.
type agentRunner struct {
	agent   *lb.Agent         // nil when learning online
	learner *lb.OnlineLearner // nil unless agent.train is set
	train   *OnlineTraining
	log     *slog.Logger
	saved   time.Time // last save of the learner's policy
	obs     *lb.Observer
	period  time.Duration
	base    time.Time // time zero of the agent's clock
	pool    *pool

	events chan feedback
	stop   chan struct{} // closed when Run returns: later events are dropped

	onDecision func(seconds float64)
	onLearn    func(seconds, reward float64, updates int)

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
	// Online training, if on.
	Training *trainingStatus `json:"training,omitempty"`
}

type trainingStatus struct {
	Updates      int       `json:"updates"`
	ActorLearns  bool      `json:"actor_learns"` // past the critics' warm-up
	Reward       float64   `json:"reward"`       // of the last period, unscaled
	LearnSeconds float64   `json:"learn_seconds"`
	Saved        time.Time `json:"saved,omitzero"`
	SaveError    string    `json:"save_error,omitempty"`
}

// feedbackBuffer is the capacity of the event channel: a burst this large
// may arrive while the agent decides without the request path waiting.
const feedbackBuffer = 1 << 15

// newAgentRunner loads the policy file and the network that drives
// cfg.LB, to run it as it is or to train it online.
func newAgentRunner(cfg *AgentConfig, backends int, p *pool, base time.Time, seed uint64, log *slog.Logger) (*agentRunner, error) {
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
	period := cfg.Period
	if period == 0 {
		period = time.Duration(pol.Period)
	}
	r := &agentRunner{agent: agent, period: period, base: base, pool: p, log: log,
		events: make(chan feedback, feedbackBuffer), stop: make(chan struct{})}
	r.status = agentStatus{File: cfg.File, LB: cfg.LB, Period: period.String()}
	fb := agent.Feedback(0)
	if t := cfg.Train; t != nil {
		oc := lb.OnlineConfig{LR: t.LearningRate, CriticWarmup: t.CriticWarmup, LearningStarts: t.LearningStarts,
			Deterministic: t.Deterministic, Seed: seed}
		if r.learner, err = lb.NewOnlineLearner(pol, cfg.LB, oc); err != nil {
			return nil, fmt.Errorf("agent.train: %w", err)
		}
		r.agent, r.train, r.saved = nil, t, time.Now()
		r.status.Training = &trainingStatus{}
		fb = r.learner.Feedback()
	}
	obs, ok := fb.(*lb.Observer)
	if !ok {
		return nil, fmt.Errorf("agent.file %s: the agent's feedback is not an observer", cfg.File)
	}
	r.obs = obs
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
			if r.learner != nil {
				r.save()
			}
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

// decide publishes new weights; when training online it then learns from
// the period that ended, after the weights are out.
func (r *agentRunner) decide(now time.Duration) {
	start := time.Now()
	var w, action []float64
	if r.learner != nil {
		w, action = r.learner.Decide(now), r.learner.Action()
	} else {
		w, action = r.agent.Decide(now, nil)[0].(control.SetWeights).Weights, r.agent.Action()
	}
	r.pool.setLearned(w)
	took := time.Since(start).Seconds()
	if r.onDecision != nil {
		r.onDecision(took)
	}
	var learnt float64
	if r.learner != nil {
		t := time.Now()
		r.learner.Learn()
		learnt = time.Since(t).Seconds()
		if r.onLearn != nil {
			r.onLearn(learnt, r.learner.Reward(), r.learner.Updates())
		}
		if r.train.Save != "" && time.Since(r.saved) >= r.train.SaveEvery {
			r.save()
		}
	}
	r.mu.Lock()
	s := &r.status
	s.Decisions++
	s.LastDecision, s.DecideSeconds = time.Now(), took
	s.Action = append(s.Action[:0], action...)
	s.Weights = append(s.Weights[:0], w...)
	if ts := s.Training; ts != nil {
		ts.Updates, ts.Reward, ts.LearnSeconds = r.learner.Updates(), r.learner.Reward(), learnt
		ts.ActorLearns = ts.Updates >= r.learner.Config().CriticWarmup
	}
	r.mu.Unlock()
}

// save writes the learner's policy to agent.train.save (via a temporary
// file renamed over it, so a reader never sees half a policy).
func (r *agentRunner) save() {
	if r.train.Save == "" {
		return
	}
	r.saved = time.Now()
	err := modelfile.WriteFile(r.train.Save, r.learner.Policy().Write)
	r.mu.Lock()
	if ts := r.status.Training; ts != nil {
		ts.SaveError = ""
		if err != nil {
			ts.SaveError = err.Error()
		} else {
			ts.Saved = r.saved
		}
	}
	r.mu.Unlock()
	if err != nil {
		r.log.Error("saving the online-trained policy failed", "file", r.train.Save, "error", err)
		return
	}
	r.log.Info("online-trained policy saved", "file", r.train.Save, "updates", r.learner.Updates())
}

// Status returns a copy of the agent's status.
func (r *agentRunner) Status() agentStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.status
	s.Action = append([]float64(nil), s.Action...)
	s.Weights = append([]float64(nil), s.Weights...)
	if s.Training != nil {
		t := *s.Training
		s.Training = &t
	}
	return s
}

// generalSelector builds the selector of a general Distr-LB policy file.
func generalSelector(file string, d lb.Deps) (lb.Selector, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("agent.file: %w", err)
	}
	defer f.Close()
	pol, err := lb.ReadGeneralPolicy(f)
	if err != nil {
		return nil, fmt.Errorf("agent.file %s: %w", file, err)
	}
	return pol.Selector(d)
}
