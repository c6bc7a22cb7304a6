// Package rl holds Shoal's reinforcement-learning core: environment contracts
// (single- and multi-agent), an environment checker, replay, sequence-replay
// and rollout buffers, and the learning algorithms, each in its own file in
// the style of CleanRL with a documented Config whose defaults come from the
// papers or the RL Baselines3 Zoo:
//
//	sac.go           SAC, twin critics, automatic entropy tuning (Haarnoja et al. 2018)
//	sac_discrete.go  discrete-action SAC (Christodoulou 2019)
//	sac_recurrent.go SAC with GRU actor and critics over history windows (Distr-LB)
//	td3.go           TD3 (Fujimoto et al. 2018)
//	ddpg.go          DDPG (Lillicrap et al. 2016), TD3's code with DDPG settings
//	ppo.go           PPO, clipped objective, GAE, discrete or Gaussian (Schulman et al. 2017)
//	bc.go            behaviour cloning
//
// Reference tasks (Gymnasium's Pendulum-v1, CartPole-v1,
// MountainCarContinuous-v0) are in the subpackage envs.
//
// The usage loop of an off-policy agent:
//
//	env := envs.NewPendulum()
//	agent, err := rl.NewSAC(env.Spec(), rl.DefaultSACConfig(), rand.New(rand.NewPCG(seed, 1)))
//	obs := env.Reset(rng)
//	for t := 0; t < steps; t++ {
//		act := agent.Explore(obs)                       // behaviour action, owned by the agent
//		next, r, term, trunc := env.Step(act)
//		agent.Observe(obs, act, r, next, term, trunc) // stores; trains on its schedule
//		... reset on term || trunc, else obs = next
//	}
//	act := agent.Act(obs, true) // deterministic inference, allocation-free
//
// rl.Train runs exactly this loop; PPO collects its own rollouts with
// PPO.Learn(envs, steps, rng). Everything is pure: no I/O, no wall clock,
// randomness only from the *rand.Rand values passed in (math/rand/v2), so
// the same seed gives bit-identical agents. Networks, autodiff and
// optimisers come from learn/nn (float32).
package rl
