package rl_test

import (
	"testing"

	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/learn/rl/envs"
)

// fillReplay runs uniformly random actions to fill a learner's buffer
// without training (LearningStarts is set above n by the caller).
// cpuLoop runs f b.N times and reports the process CPU time per op next to
// the wall time, since wall time is unreliable on a shared machine.
func cpuLoop(b *testing.B, f func()) {
	b.ReportAllocs()
	c0 := processCPU()
	n := 0
	for b.Loop() {
		f()
		n++
	}
	b.ReportMetric(float64(processCPU()-c0)/float64(n), "cpu-ns/op")
}

func fillReplay(l rl.Learner, env rl.Env, n int) {
	rl.Train(env, l, n, pcg(1, 9))
}

func BenchmarkSACUpdate(b *testing.B) {
	for _, h := range []int{64, 256} {
		b.Run(map[int]string{64: "64-64", 256: "256-256"}[h], func(b *testing.B) {
			c := rl.DefaultSACConfig()
			c.Hidden, c.LearningStarts = []int{h, h}, 1000
			a, _ := rl.NewSAC(envs.NewPendulum().Spec(), c, pcg(1, 1))
			fillReplay(a, envs.NewPendulum(), 1000)
			a.Update()
			cpuLoop(b, a.Update)
		})
	}
}

func BenchmarkTD3Update(b *testing.B) {
	c := rl.DefaultTD3Config()
	c.Hidden, c.LearningStarts = []int{64, 64}, 1000
	a, _ := rl.NewTD3(envs.NewPendulum().Spec(), c, pcg(1, 1))
	fillReplay(a, envs.NewPendulum(), 1000)
	a.Update()
	a.Update()
	cpuLoop(b, a.Update)
}

func BenchmarkRecurrentSACUpdate(b *testing.B) {
	c := rl.DefaultRecurrentSACConfig()
	c.LearningStarts = 1000
	a, _ := rl.NewRecurrentSAC(envs.NewPendulum().Spec(), c, pcg(1, 1))
	fillReplay(a, envs.NewPendulum(), 1000)
	a.Update()
	cpuLoop(b, a.Update)
}

// BenchmarkPPORollout is one rollout of 8×32 CartPole steps plus its 20
// epochs of updates (the zoo settings): 256 environment steps per op.
func BenchmarkPPORollout(b *testing.B) {
	c := rl.DefaultPPOConfig()
	c.LinearLR, c.LinearClip = false, false
	var es []rl.Env
	for i := 0; i < c.NumEnvs; i++ {
		es = append(es, envs.NewCartPole())
	}
	a, _ := rl.NewPPO(es[0].Spec(), c, pcg(1, 1))
	rng := pcg(1, 2)
	cpuLoop(b, func() {
		if _, err := a.Learn(es, c.NumEnvs*c.NSteps, rng); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkReplaySample(b *testing.B) {
	r := rl.NewReplay(100_000, 3, 1)
	for i := 0; i < 100_000; i++ {
		x := float64(i)
		r.Add([]float64{x, x, x}, []float64{x}, x, []float64{x, x, x}, false)
	}
	var batch rl.Batch
	rng := pcg(1, 1)
	cpuLoop(b, func() { r.Sample(&batch, rng, 256) })
}
