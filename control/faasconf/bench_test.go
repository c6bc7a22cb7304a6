package faasconf

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/rl"
)

// benchPolicy is a TcktApp-sized policy: 12 functions on a chain, the
// default 64-64 actors with 16-wide attention.
func benchPolicy(b *testing.B) *Policy {
	b.Helper()
	const n = 12
	names := make([]string, n)
	adj := make([][]float64, n)
	for j := range n {
		names[j] = string(rune('a' + j))
		adj[j] = make([]float64, n)
		if j > 0 {
			adj[j][j-1], adj[j-1][j] = 1, 1
		}
	}
	p, err := NewPolicy(Policy{Variant: rl.AttMF, Functions: names, Adjacency: adj, Space: WebSpace(),
		QoS: QoS{Latency: time.Second, MinServed: 0.99}, Window: modelfile.Duration(30 * time.Second), BaseRate: 10,
		Levels: []float64{1}, Hidden: []int{64, 64}, AttentionDim: 16}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkDecision is one window's decision for all 12 functions: the
// actors with their attention and the safe exploration's check (a
// proposal inside the safe range). Restless, so that every decision
// proposes: served, the agent holds a verified configuration in most
// windows, which BenchmarkDecisionHeld measures.
func BenchmarkDecision(b *testing.B) {
	// τ, the cheapest fifth, is {0, 1000}: a safe range of [-500, 1500] $/h
	a, obs := benchAgent(b, Options{Restless: true}, 0, 1000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000)
	n := len(obs)
	for j := range obs {
		for k := range obs[j] {
			obs[j][k] = 0.1 * float64(k%5)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		a.Propose(1, obs)
	}
	if a.Stats().Replaced != 0 {
		b.Fatal("the safe exploration replaced a proposal inside its range")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/function")
}

// BenchmarkDecisionHeld is a served window's decision when the agent holds
// the configuration training verified at the level.
func BenchmarkDecisionHeld(b *testing.B) {
	a, obs := benchAgent(b, Options{}, 1000)
	a.Propose(1, obs)
	b.ReportAllocs()
	for b.Loop() {
		a.Propose(1, obs)
	}
	if a.Stats().Explored != 0 {
		b.Fatalf("explored %d times while holding", a.Stats().Explored)
	}
}

// benchAgent is an agent on benchPolicy whose history holds, at level 1,
// the all-zero action at each of prices (met), and a zero observation.
func benchAgent(b *testing.B, opt Options, prices ...float64) (*Agent, [][]float64) {
	p := benchPolicy(b)
	zero := make([][]float64, len(p.Functions))
	obs := make([][]float64, len(p.Functions))
	for j := range zero {
		zero[j], obs[j] = make([]float64, ActionDim), make([]float64, Features)
	}
	for _, price := range prices {
		p.History = append(p.History, Record{Workload: 1, Action: zero, Price: price, Met: true})
	}
	return NewAgent(p, opt), obs
}
