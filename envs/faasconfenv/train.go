package faasconfenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/scenario"
)

// TrainConfig sets a training run: FaaSConf's offline training from logged
// data, then online episodes (section 3, Fig. 4: (1) offline training from
// the Data Store, then serving that keeps learning).
type TrainConfig struct {
	Env     Config
	Learner rl.MADDPGConfig
	Seed    uint64
	// Logged episodes measure uniformly random configurations: the Data
	// Store the learner first trains on, and the safe exploration's first
	// history. OfflineUpdates are the updates on them.
	Logged, OfflineUpdates int
	// Online episodes let the agents configure, exploring, through the
	// safe exploration, learning from every measurement; a wall-time
	// Deadline (with Now) stops them earlier.
	Online   int
	Deadline time.Time
	Now      func() time.Time
	// Progress, if set, is called after every online episode.
	Progress func(Episode)
	// Verify is how many seeds of their own a configuration must meet the
	// QoS on to anchor the actors (Learner.AnchorWeight): at every level
	// the cheapest logged configuration that does, replaced during the
	// online episodes by any cheaper one that does.
	Verify int
	// Margin tightens the QoS latency of that verification by its share
	// (0.1: 10% under the QoS), so that what the actors learn and a
	// serving agent starts from holds the QoS beyond the verify seeds.
	Margin float64
	// Descend lowers each level's anchor function by function on
	// measurements (verified as above), after the logged episodes and at
	// the end, as the oracle searches.
	Descend bool
}

// DefaultTrainConfig returns AttMF with 64-64 networks, 16-wide attention,
// Adam at 10⁻³, batches of 256, γ 0.9 (an episode is a tuning session of
// 15 measurements), 100 logged episodes (1,500 measurements; the paper
// collected 31,000 on its testbed), 3,000 offline updates and at most 200
// online episodes; the actors anchored with weight 100 to configurations
// verified on 5 seeds (chosen on validation sessions of Sequential,
// seeds 1001-1003, against weights 0, 1, 10 and 3 and 8 seeds), with a
// margin of 0.1 under the QoS latency and each level's anchor descended
// function by function (chosen on served validation runs, seeds 201-205:
// docs/results/faasconf.md).
func DefaultTrainConfig() TrainConfig {
	l := rl.DefaultMADDPGConfig()
	l.ActorLR, l.CriticLR, l.BatchSize, l.BufferSize, l.Gamma, l.LearningStarts = 1e-3, 1e-3, 256, 100_000, 0.9, 0
	l.AnchorWeight = 100
	return TrainConfig{Env: DefaultConfig(), Learner: l, Logged: 100, OfflineUpdates: 3000, Online: 200, Verify: 5, Margin: 0.1, Descend: true}
}

// Episode is one online episode's learning-curve point.
type Episode struct {
	Seed     uint64 // the training's
	Index    int
	Level    float64
	Reward   float64 // mean over the steps
	Met      int     // steps whose window met the QoS
	Replaced int     // configurations the safe exploration replaced
	Best     float64 // the cheapest price per hour that met the QoS (0: none)
	Updates  int
}

// Trained is a training run's outcome.
type Trained struct {
	Policy *faasconf.Policy
	Curve  []Episode
}

// historyKept is how many verified and missed configurations of each
// level a policy keeps (anchor.history).
const historyKept = 10

// Train learns a FaaSConf policy for the scenario's tuned functions.
func Train(ctx context.Context, sc *scenario.Scenario, cfg TrainConfig) (*Trained, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	env, err := New(sc, cfg.Env)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x66616173)) // "faas"
	lc := cfg.Learner
	lc.Adjacency = env.Adjacency()
	m, err := rl.NewMADDPG(env.Spec(), lc, rng)
	if err != nil {
		return nil, fmt.Errorf("faasconfenv: %w", err)
	}
	ses := faasconf.NewSES()
	fp := Footprint(sc, env.Functions())
	fit := faasconf.NewFitter(fp, env.cfg.Space)
	n := len(env.Functions())
	acts := make([][]float64, n)
	for j := range acts {
		acts[j] = make([]float64, faasconf.ActionDim)
	}
	record := func() {
		l := env.Last
		ses.Add(faasconf.Record{Workload: l.Level, Action: env.cfg.Space.EncodeAll(l.Configs), Price: l.Price, Met: l.Met})
	}
	anc := newAnchor(env, cfg.Verify, cfg.Margin, cfg.Seed)
	for range cfg.Logged {
		obs := rl.CloneJoint(env.Reset(rng))
		for done := false; !done; {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			for j := range acts {
				env.spec.Action[j].Sample(rng, acts[j])
			}
			anc.seen(env.level, obs)
			next, rew, _, trunc := env.Step(acts)
			m.Store(obs, acts, rew, next, false)
			record()
			obs, done = rl.CloneJoint(next), trunc
		}
	}
	if lc.AnchorWeight > 0 {
		anc.improve(ses.Records())
		if cfg.Descend {
			anc.descend()
		}
		anc.set(m)
	}
	if m.Replay().Len() >= lc.BatchSize {
		for range cfg.OfflineUpdates {
			m.Update()
		}
	}
	var curve []Episode
	for ep := 1; ep <= cfg.Online; ep++ {
		if !cfg.Deadline.IsZero() && cfg.Now().After(cfg.Deadline) {
			break
		}
		e := Episode{Seed: cfg.Seed, Index: ep}
		obs := rl.CloneJoint(env.Reset(rng))
		e.Level = env.level
		for done := false; !done; {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			proposed := m.Explore(obs)
			configs := make([]faasconf.Config, n)
			for j, a := range proposed {
				configs[j] = env.cfg.Space.Decode(a)
			}
			chosen, replaced := ses.Filter(env.level, proposed, faasconf.Price(configs), rng)
			if replaced {
				e.Replaced++
			}
			for j := range acts { // made safe, as the agent makes what it runs
				configs[j] = env.cfg.Space.Decode(chosen[j])
			}
			fit.Safe(configs)
			for j := range acts {
				env.cfg.Space.Encode(acts[j], configs[j])
			}
			anc.seen(env.level, obs)
			next, rew, _, trunc := env.Step(acts)
			m.Observe(obs, acts, rew, next, false, trunc)
			record()
			e.Reward += rew[0]
			if env.Last.Met {
				e.Met++
				if e.Best == 0 || env.Last.Price < e.Best {
					e.Best = env.Last.Price
				}
			}
			obs, done = rl.CloneJoint(next), trunc
		}
		e.Reward /= float64(env.cfg.Steps)
		if lc.AnchorWeight > 0 && anc.improve(ses.Records()[len(ses.Records())-env.cfg.Steps:]) {
			anc.set(m)
		}
		e.Updates = m.Updates
		curve = append(curve, e)
		if cfg.Progress != nil {
			cfg.Progress(e)
		}
	}
	if lc.AnchorWeight > 0 && cfg.Descend {
		anc.descend() // what serving starts from (the history), after the actors learned
	}
	pol, err := faasconf.NewPolicy(faasconf.Policy{Variant: lc.Variant, Functions: env.Functions(), Adjacency: lc.Adjacency,
		Space: env.cfg.Space, QoS: env.cfg.QoS, Window: modelfile.Duration(env.cfg.Window), BaseRate: baseRate(sc),
		Levels: env.cfg.Levels, Footprint: fp, Hidden: lc.Hidden, AttentionDim: lc.AttentionDim, History: anc.history(ses.Records(), historyKept),
		Provenance: faasconf.Provenance{Scenario: sc.Name, Seed: cfg.Seed, Logged: cfg.Logged * env.cfg.Steps,
			Offline: cfg.OfflineUpdates, Online: len(curve) * env.cfg.Steps, Updates: m.Updates}}, rng)
	if err != nil {
		return nil, fmt.Errorf("faasconfenv: %w", err)
	}
	if err := pol.SetActors(m.Actors()); err != nil {
		return nil, err
	}
	return &Trained{Policy: pol, Curve: curve}, nil
}

// baseRate is the scenario's total arrival rate, requests/s (workload
// level 1).
func baseRate(sc *scenario.Scenario) float64 {
	r := 0.0
	for _, s := range sc.Sources {
		r += s.Arrivals.Rate
	}
	return r
}
