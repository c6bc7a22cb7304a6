package envs

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shoal-project/shoal/learn/rl"
)

// The expected numbers below were computed by hand (a few lines of plain
// Python arithmetic) from the formulas in Gymnasium's
// classic_control/{pendulum,cartpole,continuous_mountain_car}.py.

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestPendulumStep(t *testing.T) {
	tests := []struct {
		name              string
		th, thdot, u      float64
		cos, sin, nd, rew float64
	}{
		{"plain", 1.0, 0.5, 1.5, 0.48204838409011624, 0.8761445973103457, 1.3561032386059226, -1.02725},
		{"torque clipped, angle normalised", 4.0, -2.0, 3.0, -0.7350694254536914, -0.677991843434108, -2.267601871480946, -5.616935146920741},
		{"speed clipped", 0.3, 7.9, 2.0, 0.7648421872844885, 0.644217687237691, 8, -6.335},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPendulum()
			p.Reset(rand.New(rand.NewPCG(1, 1)))
			p.Theta, p.ThetaDot = tc.th, tc.thdot
			obs, r, term, trunc := p.Step([]float64{tc.u})
			want := []float64{tc.cos, tc.sin, tc.nd}
			for i := range want {
				if !near(obs[i], want[i], 1e-12) {
					t.Errorf("obs[%d] = %.17g, want %.17g", i, obs[i], want[i])
				}
			}
			if !near(r, tc.rew, 1e-12) || term || trunc {
				t.Errorf("reward %v term %v trunc %v, want %v false false", r, term, trunc, tc.rew)
			}
		})
	}
}

func TestAngleNormalize(t *testing.T) {
	tests := []struct{ in, want float64 }{
		{0, 0}, {math.Pi / 2, math.Pi / 2}, {4, 4 - 2*math.Pi}, {-4, -4 + 2*math.Pi}, {math.Pi, -math.Pi}, {7 * math.Pi, -math.Pi},
	}
	for _, tc := range tests {
		if got := AngleNormalize(tc.in); !near(got, tc.want, 1e-12) {
			t.Errorf("AngleNormalize(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestCartPoleStep(t *testing.T) {
	tests := []struct {
		name   string
		s      [4]float64
		a      float64
		want   [4]float64
		termed bool
	}{
		{"push right", [4]float64{0.01, -0.02, 0.03, 0.04}, 1, [4]float64{0.009600000000000001, 0.17467919574755525, 0.030799999999999998, -0.2430687179600081}, false},
		{"push left", [4]float64{0.01, -0.02, 0.03, 0.04}, 0, [4]float64{0.009600000000000001, -0.21553901710278936, 0.030799999999999998, 0.34199522377603914}, false},
		{"leaves track", [4]float64{2.39, 0.6, 0, 0}, 1, [4]float64{2.402, 0.7951219512195122, 0, -0.2926829268292683}, true},
		{"pole falls", [4]float64{0, 0, 0.209, 0.1}, 1, [4]float64{0, 0, 0.211, 0}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCartPole()
			c.Reset(rand.New(rand.NewPCG(1, 1)))
			c.State = tc.s
			obs, r, term, trunc := c.Step([]float64{tc.a})
			if tc.name != "pole falls" {
				for i := range tc.want {
					if !near(obs[i], tc.want[i], 1e-12) {
						t.Errorf("obs[%d] = %.17g, want %.17g", i, obs[i], tc.want[i])
					}
				}
			}
			if r != 1 || term != tc.termed || trunc {
				t.Errorf("reward %v term %v trunc %v, want 1 %v false", r, term, trunc, tc.termed)
			}
		})
	}
}

func TestMountainCarStep(t *testing.T) {
	tests := []struct {
		name           string
		pos, vel, a    float64
		wantP, wantV   float64
		wantR          float64
		wantTerminated bool
	}{
		{"plain", f32(-0.5), 0, 0.7, -0.4991268515586853, 0.0008731569978408515, -0.048999999999999995, false},
		{"goal, action clipped", f32(0.44), f32(0.02), 1.5, 0.4608795642852783, 0.020879561081528664, 99.775, true},
		{"left wall", f32(-1.19), f32(-0.05), -1, -1.2000000476837158, 0, -0.1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMountainCarContinuous()
			m.Reset(rand.New(rand.NewPCG(1, 1)))
			m.Position, m.Velocity = tc.pos, tc.vel
			obs, r, term, trunc := m.Step([]float64{tc.a})
			if obs[0] != tc.wantP || obs[1] != tc.wantV {
				t.Errorf("state (%.17g, %.17g), want (%.17g, %.17g)", obs[0], obs[1], tc.wantP, tc.wantV)
			}
			if !near(r, tc.wantR, 1e-12) || term != tc.wantTerminated || trunc {
				t.Errorf("reward %v term %v trunc %v, want %v %v false", r, term, trunc, tc.wantR, tc.wantTerminated)
			}
		})
	}
}

// TestEpisodeLimits checks the registered max_episode_steps: 200, 500, 999.
func TestEpisodeLimits(t *testing.T) {
	tests := []struct {
		env  rl.Env
		act  []float64
		want int
	}{
		{NewPendulum(), []float64{0}, 200},
		{NewMountainCarContinuous(), []float64{0}, 999},
	}
	for _, tc := range tests {
		tc.env.Reset(rand.New(rand.NewPCG(3, 4)))
		n := 0
		for {
			n++
			_, _, term, trunc := tc.env.Step(tc.act)
			if term {
				t.Fatalf("%s terminated at step %d with a zero action", tc.env.Spec().ID, n)
			}
			if trunc {
				break
			}
		}
		if n != tc.want || tc.env.Spec().MaxEpisodeSteps != tc.want {
			t.Errorf("%s truncated after %d steps, spec %d, want %d", tc.env.Spec().ID, n, tc.env.Spec().MaxEpisodeSteps, tc.want)
		}
	}
	// CartPole: a balancing controller (push toward the fall) survives to the limit.
	c := NewCartPole()
	obs := c.Reset(rand.New(rand.NewPCG(5, 6)))
	n := 0
	for {
		n++
		a := 0.0
		if obs[2]+0.5*obs[3]+0.01*obs[0]+0.1*obs[1] > 0 {
			a = 1
		}
		var term, trunc bool
		obs, _, term, trunc = c.Step([]float64{a})
		if term {
			t.Fatalf("balancing controller fell at step %d", n)
		}
		if trunc {
			break
		}
	}
	if n != 500 {
		t.Errorf("CartPole truncated after %d steps, want 500", n)
	}
}

// TestInitialStateDistribution checks the reset distributions' supports and means.
func TestInitialStateDistribution(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 20000
	p, c, m := NewPendulum(), NewCartPole(), NewMountainCarContinuous()
	var sumTh, sumCart, sumPos float64
	for i := 0; i < n; i++ {
		p.Reset(rng)
		if math.Abs(p.Theta) > math.Pi || math.Abs(p.ThetaDot) > 1 {
			t.Fatalf("pendulum initial state (%v, %v) outside [-π,π]×[-1,1]", p.Theta, p.ThetaDot)
		}
		sumTh += p.Theta * p.Theta
		c.Reset(rng)
		for _, v := range c.State {
			if math.Abs(v) >= 0.05 {
				t.Fatalf("cartpole initial state %v outside (-0.05, 0.05)", c.State)
			}
			sumCart += v
		}
		m.Reset(rng)
		if m.Position < -0.6000001 || m.Position > -0.3999999 || m.Velocity != 0 {
			t.Fatalf("mountain car initial state (%v, %v)", m.Position, m.Velocity)
		}
		sumPos += m.Position
	}
	// Uniform[-π,π] has E θ² = π²/3.
	if got, want := sumTh/n, math.Pi*math.Pi/3; !near(got, want, 0.05) {
		t.Errorf("pendulum E θ² = %v, want %v", got, want)
	}
	if got := sumCart / (4 * n); !near(got, 0, 0.002) {
		t.Errorf("cartpole mean initial value %v, want 0", got)
	}
	if got := sumPos / n; !near(got, -0.5, 0.002) {
		t.Errorf("mountain car mean initial position %v, want -0.5", got)
	}
}

func TestReferenceEnvsPassCheck(t *testing.T) {
	for _, env := range []rl.Env{NewPendulum(), NewCartPole(), NewMountainCarContinuous()} {
		if err := rl.CheckEnv(env, rl.CheckOptions{Seed: 42, Episodes: 3}); err != nil {
			t.Errorf("CheckEnv(%s): %v", env.Spec().ID, err)
		}
	}
	m := rl.Independent("two-pendulums", NewPendulum(), NewPendulum())
	if err := rl.CheckMultiEnv(m, rl.CheckOptions{Seed: 1}); err != nil {
		t.Errorf("CheckMultiEnv: %v", err)
	}
}

func BenchmarkPendulumStep(b *testing.B) {
	p := NewPendulum()
	p.Reset(rand.New(rand.NewPCG(1, 1)))
	a := []float64{0.5}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, trunc := p.Step(a); trunc {
			p.steps = 0
		}
	}
}
