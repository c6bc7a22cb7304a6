package envs

import (
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/rl"
)

// CartPole-v1 constants (gymnasium/envs/classic_control/cartpole.py,
// registered with max_episode_steps=500, reward_threshold=475).
const (
	CartPoleGravity   = 9.8                    // m/s²
	CartPoleMassCart  = 1.0                    // kg
	CartPoleMassPole  = 0.1                    // kg
	CartPoleLength    = 0.5                    // half the pole length, m
	CartPoleForceMag  = 10.0                   // push force, N
	CartPoleTau       = 0.02                   // integration step, s
	CartPoleThetaMax  = 12 * 2 * math.Pi / 360 // termination angle, rad (12°)
	CartPoleXMax      = 2.4                    // termination position, m
	CartPoleMaxSteps  = 500                    // episode length, steps
	CartPoleThreshold = 475.0                  // reward threshold of v1
	float32Max        = math.MaxFloat32        // bound used for the velocities
	cartPoleTotalMass = CartPoleMassCart + CartPoleMassPole
	cartPolePoleML    = CartPoleMassPole * CartPoleLength
)

// CartPole is Gymnasium's CartPole-v1: state (x, ẋ, θ, θ̇), discrete actions
// 0 (push left) and 1 (push right) with 10 N, explicit Euler integration
// with τ = 0.02 s, reward 1 per step including the terminating one,
// termination when |x| > 2.4 m or |θ| > 12°, truncation after 500 steps,
// initial state uniform in (-0.05, 0.05)⁴.
type CartPole struct {
	// State is (x m, ẋ m/s, θ rad, θ̇ rad/s); tests may set it.
	State [4]float64
	steps int
	obs   [4]float64
}

// NewCartPole returns CartPole-v1.
func NewCartPole() *CartPole { return &CartPole{} }

// Spec implements rl.Env. The observation bounds are upstream's: ±4.8 m,
// ±float32 max, ±24°, ±float32 max.
func (c *CartPole) Spec() rl.Spec {
	high := []float64{CartPoleXMax * 2, float32Max, CartPoleThetaMax * 2, float32Max}
	low := []float64{-high[0], -high[1], -high[2], -high[3]}
	return rl.Spec{
		ID:              "CartPole-v1",
		Observation:     rl.Box(low, high),
		Action:          rl.Discrete(2),
		MaxEpisodeSteps: CartPoleMaxSteps,
	}
}

// Reset implements rl.Env.
func (c *CartPole) Reset(rng *rand.Rand) []float64 {
	for i := range c.State {
		c.State[i] = -0.05 + 0.1*rng.Float64()
	}
	c.steps = 0
	return c.observe()
}

// Step implements rl.Env. Action 1 pushes right, anything else left.
func (c *CartPole) Step(action []float64) ([]float64, float64, bool, bool) {
	x, xDot, theta, thetaDot := c.State[0], c.State[1], c.State[2], c.State[3]
	force := -CartPoleForceMag
	if action[0] == 1 {
		force = CartPoleForceMag
	}
	cos, sin := math.Cos(theta), math.Sin(theta)
	// Florian (2007), "Correct equations for the dynamics of the cart-pole system".
	temp := (force + cartPolePoleML*thetaDot*thetaDot*sin) / cartPoleTotalMass
	thetaAcc := (CartPoleGravity*sin - cos*temp) /
		(CartPoleLength * (4.0/3.0 - CartPoleMassPole*cos*cos/cartPoleTotalMass))
	xAcc := temp - cartPolePoleML*thetaAcc*cos/cartPoleTotalMass
	// Explicit Euler ("euler" kinematics integrator, the default).
	x += CartPoleTau * xDot
	xDot += CartPoleTau * xAcc
	theta += CartPoleTau * thetaDot
	thetaDot += CartPoleTau * thetaAcc
	c.State = [4]float64{x, xDot, theta, thetaDot}
	c.steps++
	terminated := x < -CartPoleXMax || x > CartPoleXMax || theta < -CartPoleThetaMax || theta > CartPoleThetaMax
	truncated := !terminated && c.steps >= CartPoleMaxSteps
	return c.observe(), 1, terminated, truncated
}

func (c *CartPole) observe() []float64 {
	c.obs = c.State
	return c.obs[:]
}
