package lb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/learn/rl"
)

// OnlineConfig configures the online training of a deployed Distr-LB
// agent. Zero fields take the defaults noted.
type OnlineConfig struct {
	// Reward and Estimate score each period from the agent's own
	// feedback (default: the policy's training provenance, else VBF of
	// backlogs, the paper's reward).
	Reward   Reward
	Estimate Estimate
	// LR is the Adam step size of actor, critics and temperature (default
	// 1e-4, a third of the simulator's: the actor starts trained).
	LR float64
	// CriticWarmup is the number of updates that train only the new
	// critics before the actor learns (default 2,000).
	CriticWarmup int
	// LearningStarts is the number of periods observed before the first
	// update (default 400).
	LearningStarts int
	// Deterministic acts with the policy's mean action tanh(μ), as the
	// frozen agent does; by default actions are sampled from the policy,
	// SAC's exploration.
	Deterministic bool
	// Seed seeds the learner's sampling.
	Seed uint64
}

// OnlineLearner continues training a Distr-LB agent on its own data
// plane: every period it scores the period that ended with the agent's
// reward (the same Score as the simulator's training), acts, and then
// learns from the transition with recurrent SAC, whose actor starts as
// the policy's and whose critics start new (so the actor waits for
// CriticWarmup critic updates). Only the LB point's own feedback is used,
// as in the paper's decentralised training (Alg. 2).
//
// The usage loop, every period, in one goroutine with the feedback calls:
//
//	w := l.Decide(now)   // publish w
//	l.Learn()            // may take a few milliseconds
type OnlineLearner struct {
	agent   *Agent
	policy  *Policy
	cfg     OnlineConfig
	sac     *rl.RecurrentSAC
	scaler  rl.ReturnScaler
	obs     []float64 // this period's observation
	act     []float64 // this period's action
	prevObs []float64
	prevAct []float64
	est     []float64
	reward  float64 // of the period that ended at the last Decide
	scored  bool    // reward belongs to a transition not yet learned
	weights []float64
}

// NewOnlineLearner returns a learner that continues training the network
// of policy p that drives LB point lbName alone (box actions, with a GRU).
func NewOnlineLearner(p *Policy, lbName string, cfg OnlineConfig) (*OnlineLearner, error) {
	agent, err := p.Agent(lbName)
	if err != nil {
		return nil, err
	}
	spec := agent.spec
	if spec.Actions == ActionsSteps || spec.GRUHidden == 0 {
		return nil, fmt.Errorf("online training: network of %s: needs box actions and a GRU (a recurrent SAC actor)", lbName)
	}
	if cfg.Reward == "" {
		cfg.Reward = Reward(p.Provenance.Reward)
		if !cfg.Reward.Valid() {
			cfg.Reward = VBF
		}
	}
	if !cfg.Reward.Valid() {
		return nil, fmt.Errorf("online training: unknown reward %q", cfg.Reward)
	}
	if cfg.Estimate == "" {
		cfg.Estimate = Estimate(p.Provenance.Estimate)
		if cfg.Estimate != EstimateDuration {
			cfg.Estimate = EstimateBacklog
		}
	}
	if cfg.Estimate != EstimateBacklog && cfg.Estimate != EstimateDuration {
		return nil, fmt.Errorf("online training: unknown estimate %q", cfg.Estimate)
	}
	if cfg.LR == 0 {
		cfg.LR = 1e-4
	}
	if cfg.CriticWarmup == 0 {
		cfg.CriticWarmup = 2000
	}
	if cfg.LearningStarts == 0 {
		cfg.LearningStarts = 400
	}
	if cfg.LR < 0 || cfg.CriticWarmup < 0 || cfg.LearningStarts < 0 {
		return nil, fmt.Errorf("online training: lr, critic_warmup, learning_starts must be >= 0, got %g, %d, %d", cfg.LR, cfg.CriticWarmup, cfg.LearningStarts)
	}
	sc := rl.DefaultRecurrentSACConfig()
	// The simulator's training settings (lbenv.LBSACConfig) with the
	// network's shape and this configuration's step size and warm-up.
	sc.Hidden, sc.SeqLen, sc.GRUHidden = spec.Hidden, spec.SeqLen, spec.GRUHidden
	sc.InitAlpha, sc.Gamma, sc.BufferSize = 0.1, 0.8, 50_000
	sc.LR, sc.LearningStarts, sc.ActorStart = cfg.LR, cfg.LearningStarts, cfg.CriticWarmup
	rs := rl.Spec{ID: "distr-lb/" + lbName, Observation: rl.UniformBox(spec.ObsDim(), math.Inf(-1), math.Inf(1)),
		Action: rl.UniformBox(spec.ActDim(), -1, 1)}
	sac, err := rl.NewRecurrentSAC(rs, sc, rand.New(rand.NewPCG(cfg.Seed, 0x6f6e6c696e65))) // "online"
	if err != nil {
		return nil, fmt.Errorf("online training: %w", err)
	}
	if err := sac.SetActor(agent.net.gru, agent.net.head); err != nil {
		return nil, fmt.Errorf("online training: %w", err)
	}
	return &OnlineLearner{agent: agent, policy: p, cfg: cfg, sac: sac, scaler: rl.ReturnScaler{Gamma: sc.Gamma},
		weights: make([]float64, spec.Backends)}, nil
}

// Feedback is the sink for the LB point's data plane.
func (l *OnlineLearner) Feedback() Feedback { return l.agent.obs[0] }

// Config returns the configuration with its defaults applied.
func (l *OnlineLearner) Config() OnlineConfig { return l.cfg }

// Decide scores the period that ended at now, observes, and returns the
// weights for the next period (reused by the next call).
func (l *OnlineLearner) Decide(now time.Duration) []float64 {
	o := l.agent.obs[0]
	if l.obs != nil {
		l.prevObs, l.obs = l.obs, l.prevObs
		l.prevAct = append(l.prevAct[:0], l.act...)
		l.est = o.Estimates(l.cfg.Estimate, now, l.est)
		l.reward, l.scored = Score(l.cfg.Reward, l.est), true
	}
	l.obs = l.agent.Observation(now, l.obs)
	l.act = append(l.act[:0], l.sac.Act(l.obs, l.cfg.Deterministic)...)
	o.SetPrevious(l.act)
	return ActionToWeights(l.weights, l.act)
}

// Learn stores the last scored transition and runs the scheduled updates.
func (l *OnlineLearner) Learn() {
	if !l.scored {
		return
	}
	l.scored = false
	l.sac.Observe(l.prevObs, l.prevAct, l.scaler.Scale(l.reward, false), l.obs, false, false)
}

// Reward is the reward of the last scored period.
func (l *OnlineLearner) Reward() float64 { return l.reward }

// Updates is the number of gradient updates so far; the actor learns from
// update CriticWarmup on.
func (l *OnlineLearner) Updates() int { return l.sac.Updates }

// Action is the last action, in [-1, 1] per backend.
func (l *OnlineLearner) Action() []float64 { return l.act }

// Policy copies the learner's actor into the policy and returns it, ready
// to be written (the network it trains; the others unchanged).
func (l *OnlineLearner) Policy() *Policy {
	gru, head := l.sac.Actor()
	dst := l.agent.net.state()
	for k, n := range append(gru.State(), head.State()...) {
		copy(dst[k].Value.Data, n.Value.Data) // shapes checked by SetActor
	}
	l.policy.Provenance.OnlineUpdates = l.sac.Updates
	return l.policy
}
