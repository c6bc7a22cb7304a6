package envs

import (
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/rl"
)

// Pendulum-v1 constants (gymnasium/envs/classic_control/pendulum.py,
// registered with max_episode_steps=200 in gymnasium/envs/__init__.py).
const (
	PendulumMaxSpeed  = 8.0  // maximum angular speed, rad/s
	PendulumMaxTorque = 2.0  // maximum torque, N m
	PendulumDt        = 0.05 // integration step, s
	PendulumG         = 10.0 // gravity, m/s^2 (the Gymnasium default g)
	PendulumM         = 1.0  // mass, kg
	PendulumL         = 1.0  // length, m
	PendulumMaxSteps  = 200  // episode length, steps
)

// Pendulum is Gymnasium's Pendulum-v1 swing-up task. The state is the angle
// Theta (rad, 0 = upright) and angular velocity ThetaDot (rad/s); the
// observation is (cos θ, sin θ, θ̇); the action is a torque in [-2, 2] N m
// (clipped); the reward is -(normalize(θ)² + 0.1 θ̇² + 0.001 u²); episodes
// never terminate and are truncated after 200 steps. The initial state is
// uniform with θ in [-π, π] and θ̇ in [-1, 1].
type Pendulum struct {
	// G is the gravity used by the dynamics, m/s² (default 10).
	G float64
	// Theta and ThetaDot are the current state (rad, rad/s); tests may set them.
	Theta, ThetaDot float64
	steps           int
	obs             [3]float64
}

// NewPendulum returns Pendulum-v1 with the default gravity 10 m/s².
func NewPendulum() *Pendulum { return &Pendulum{G: PendulumG} }

// Spec implements rl.Env.
func (p *Pendulum) Spec() rl.Spec {
	return rl.Spec{
		ID:              "Pendulum-v1",
		Observation:     rl.Box([]float64{-1, -1, -PendulumMaxSpeed}, []float64{1, 1, PendulumMaxSpeed}),
		Action:          rl.Box([]float64{-PendulumMaxTorque}, []float64{PendulumMaxTorque}),
		MaxEpisodeSteps: PendulumMaxSteps,
	}
}

// Reset implements rl.Env.
func (p *Pendulum) Reset(rng *rand.Rand) []float64 {
	p.Theta = -math.Pi + 2*math.Pi*rng.Float64()
	p.ThetaDot = -1 + 2*rng.Float64()
	p.steps = 0
	return p.observe()
}

// Step implements rl.Env: semi-implicit Euler with the velocity clipped to
// ±8 rad/s before the angle update, as upstream.
func (p *Pendulum) Step(action []float64) ([]float64, float64, bool, bool) {
	u := math.Min(math.Max(action[0], -PendulumMaxTorque), PendulumMaxTorque)
	th, thdot := p.Theta, p.ThetaDot
	an := AngleNormalize(th)
	cost := an*an + 0.1*thdot*thdot + 0.001*u*u
	newthdot := thdot + (3*p.G/(2*PendulumL)*math.Sin(th)+3.0/(PendulumM*PendulumL*PendulumL)*u)*PendulumDt
	newthdot = math.Min(math.Max(newthdot, -PendulumMaxSpeed), PendulumMaxSpeed)
	p.Theta = th + newthdot*PendulumDt
	p.ThetaDot = newthdot
	p.steps++
	return p.observe(), -cost, false, p.steps >= PendulumMaxSteps
}

func (p *Pendulum) observe() []float64 {
	p.obs = [3]float64{math.Cos(p.Theta), math.Sin(p.Theta), p.ThetaDot}
	return p.obs[:]
}

// AngleNormalize maps an angle in radians to [-π, π) like Gymnasium's
// angle_normalize, ((x + π) mod 2π) − π with a floored (Python) modulo.
func AngleNormalize(x float64) float64 {
	m := math.Mod(x+math.Pi, 2*math.Pi)
	if m < 0 {
		m += 2 * math.Pi
	}
	return m - math.Pi
}
