package rl

import (
	"fmt"
	"math/rand/v2"
)

// Deep Deterministic Policy Gradient: Lillicrap, Hunt, Pritzel, Heess, Erez,
// Tassa, Silver, Wierstra (2016), "Continuous control with deep
// reinforcement learning", ICLR. DDPG is TD3 without its three additions
// (Fujimoto et al. 2018 describe TD3 as DDPG plus clipped double Q, target
// policy smoothing and delayed updates), which is how Stable-Baselines3
// implements it too: one critic, an actor and target update after every
// critic update, no smoothing noise on the target action. The update is
// TD3.Update with those settings:
//
//	y = r + γ (1 − d) Q_θ'(s', μ_φ'(s'))                  (target, Alg. 1)
//	L(θ) = E[(Q_θ(s, a) − y)²]                           (critic)
//	∇_φ J ≈ E[∇_a Q_θ(s, a)|_{a=μ_φ(s)} ∇_φ μ_φ(s)]       (actor, eq. 6)
//	θ' ← τ θ + (1 − τ) θ',  φ' ← τ φ + (1 − τ) φ'

// DDPGConfig is TD3Config; Critics, PolicyDelay and TargetNoise are forced
// to DDPG's 1, 1 and 0 by NewDDPG.
type DDPGConfig = TD3Config

// DefaultDDPGConfig returns the RL Baselines3 Zoo DDPG hyperparameters for
// Pendulum-v1 (the same as its TD3 entry: γ 0.98, buffer 200000, 10000
// random steps, Gaussian noise 0.1, per-episode training, learning rate
// 1e-3, networks 400-300) in DDPG form.
func DefaultDDPGConfig() DDPGConfig {
	c := DefaultTD3Config()
	c.Critics, c.PolicyDelay, c.TargetNoise, c.TargetNoiseCap = 1, 1, 0, 0
	return c
}

// NewDDPG returns a DDPG agent: a TD3 with one critic, no policy delay and
// no target policy smoothing.
func NewDDPG(spec Spec, cfg DDPGConfig, rng *rand.Rand) (*TD3, error) {
	cfg.Critics, cfg.PolicyDelay, cfg.TargetNoise, cfg.TargetNoiseCap = 1, 1, 0, 0
	t, err := NewTD3(spec, cfg, rng)
	if err != nil {
		return nil, fmt.Errorf("new ddpg: %w", err)
	}
	return t, nil
}
