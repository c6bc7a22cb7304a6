// Package envs implements reference tasks for learn/rl exactly as Gymnasium
// defines them (dynamics, bounds, reward, episode length and initial-state
// distribution), so that published scores (RL Baselines3 Zoo) apply:
// Pendulum-v1, CartPole-v1 and MountainCarContinuous-v0, from
// gymnasium/envs/classic_control/{pendulum,cartpole,continuous_mountain_car}.py
// and the registrations in gymnasium/envs/__init__.py.
//
// Usage:
//
//	env := envs.NewPendulum()
//	obs := env.Reset(rng)
//	for {
//		obs, r, term, trunc := env.Step(action)
//		if term || trunc { break }
//	}
//
// Observations are float64 (Gymnasium returns them rounded to float32; the
// internal state is float64 there too, except for MountainCarContinuous, whose
// state Gymnasium stores as float32 and which is rounded the same way here).
// Random initial states come from the *rand.Rand given to Reset, so the
// numbers differ from NumPy's generator but the distributions are the same.
package envs
