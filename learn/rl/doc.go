// Package rl holds Shoal's reinforcement-learning core: environment contracts
// (single- and multi-agent), an environment checker, replay and rollout
// buffers, and the learning algorithms (SAC, discrete SAC, recurrent SAC, TD3,
// DDPG, PPO, behaviour cloning), each in its own file in the style of CleanRL.
//
// The usage loop of an off-policy agent is
//
//	env := envs.NewPendulum()
//	agent := rl.NewSAC(env.Spec(), rl.DefaultSACConfig(), rand.New(rand.NewPCG(1, 2)))
//	obs := env.Reset(rng)
//	for t := 0; t < steps; t++ {
//		act := agent.Explore(obs)              // exploration action (owned by the agent)
//		next, r, term, trunc := env.Step(act)
//		agent.Observe(obs, act, r, next, term, trunc) // stores and trains
//		...
//	}
//	act := agent.Act(obs, true) // deterministic inference
//
// Everything here is pure: no I/O, no wall clock, randomness only from
// *rand.Rand values passed in (math/rand/v2). Same seed, same numbers.
package rl
