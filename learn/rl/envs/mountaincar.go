package envs

import (
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/rl"
)

// MountainCarContinuous-v0 constants
// (gymnasium/envs/classic_control/continuous_mountain_car.py, registered
// with max_episode_steps=999, reward_threshold=90).
const (
	MountainCarMinPosition = -1.2   // m
	MountainCarMaxPosition = 0.6    // m
	MountainCarMaxSpeed    = 0.07   // m per step
	MountainCarGoal        = 0.45   // goal position, m
	MountainCarPower       = 0.0015 // force multiplier
	MountainCarMaxSteps    = 999    // episode length, steps
	MountainCarThreshold   = 90.0   // reward threshold
)

// MountainCarContinuous is Gymnasium's MountainCarContinuous-v0: state
// (position, velocity) stored as float32 like upstream, action a force in
// [-1, 1] (clipped for the dynamics), reward -0.1 a² per step plus 100 on
// reaching position >= 0.45 with velocity >= 0 (terminates), truncation
// after 999 steps, initial position uniform in [-0.6, -0.4], velocity 0.
type MountainCarContinuous struct {
	// Position (m) and Velocity (m/step) are the current state; tests may set them.
	Position, Velocity float64
	steps              int
	obs                [2]float64
}

// NewMountainCarContinuous returns MountainCarContinuous-v0.
func NewMountainCarContinuous() *MountainCarContinuous { return &MountainCarContinuous{} }

// Spec implements rl.Env.
func (m *MountainCarContinuous) Spec() rl.Spec {
	return rl.Spec{
		ID: "MountainCarContinuous-v0",
		Observation: rl.Box(
			[]float64{f32(MountainCarMinPosition), f32(-MountainCarMaxSpeed)},
			[]float64{f32(MountainCarMaxPosition), f32(MountainCarMaxSpeed)}),
		Action:          rl.Box([]float64{-1}, []float64{1}),
		MaxEpisodeSteps: MountainCarMaxSteps,
	}
}

// Reset implements rl.Env.
func (m *MountainCarContinuous) Reset(rng *rand.Rand) []float64 {
	m.Position = f32(-0.6 + 0.2*rng.Float64())
	m.Velocity = 0
	m.steps = 0
	return m.observe()
}

// Step implements rl.Env. The reward's action penalty uses the unclipped
// action, as upstream does.
func (m *MountainCarContinuous) Step(action []float64) ([]float64, float64, bool, bool) {
	a := action[0]
	force := math.Min(math.Max(a, -1), 1)
	pos, vel := m.Position, m.Velocity
	vel += force*MountainCarPower - 0.0025*math.Cos(3*pos)
	vel = math.Min(math.Max(vel, -MountainCarMaxSpeed), MountainCarMaxSpeed)
	pos += vel
	pos = math.Min(math.Max(pos, MountainCarMinPosition), MountainCarMaxPosition)
	if pos == MountainCarMinPosition && vel < 0 {
		vel = 0
	}
	terminated := pos >= MountainCarGoal && vel >= 0
	reward := 0.0
	if terminated {
		reward = 100
	}
	reward -= a * a * 0.1
	m.Position, m.Velocity = f32(pos), f32(vel)
	m.steps++
	return m.observe(), reward, terminated, !terminated && m.steps >= MountainCarMaxSteps
}

func (m *MountainCarContinuous) observe() []float64 {
	m.obs = [2]float64{m.Position, m.Velocity}
	return m.obs[:]
}

func f32(x float64) float64 { return float64(float32(x)) }
