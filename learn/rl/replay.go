package rl

import (
	"fmt"
	"math/rand/v2"
)

// Batch is a minibatch of transitions (s, a, r, s', done) stored as float32
// row-major matrices, ready to be handed to learn/nn tensors: row i of Obs is
// Obs[i*ObsDim:(i+1)*ObsDim]. Done is 1 when s' is terminal (not merely
// truncated by a time limit), so targets bootstrap through truncation.
// The zero value sizes itself on first use; later samples of the same size
// reuse its memory.
type Batch struct {
	N, ObsDim, ActDim int
	Obs, Act, NextObs []float32
	Reward, Done      []float32
}

func (b *Batch) resize(n, obsDim, actDim int) {
	b.N, b.ObsDim, b.ActDim = n, obsDim, actDim
	b.Obs = grow(b.Obs, n*obsDim)
	b.NextObs = grow(b.NextObs, n*obsDim)
	b.Act = grow(b.Act, n*actDim)
	b.Reward = grow(b.Reward, n)
	b.Done = grow(b.Done, n)
}

func grow(s []float32, n int) []float32 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]float32, n)
}

// Replay is a uniform experience replay buffer of fixed capacity (a ring:
// once full, the oldest transition is overwritten). Sampling is with
// replacement, seeded by the caller's *rand.Rand, and allocation-free once
// the destination batch has its size.
//
// A transition may carry a cost besides its reward, for constrained RL
// with a Lagrange multiplier (Tessler et al., "Reward Constrained Policy
// Optimization", ICLR 2019): a sample's reward is the stored reward less
// the current penalty times its cost, so every stored transition is judged
// by today's multiplier, not by the one it was collected under.
type Replay struct {
	capacity, obsDim, actDim int
	obs, act, next           []float32
	rew, cost, done          []float32
	penalty                  float32
	n, pos                   int
}

// NewReplay returns an empty buffer for capacity transitions with
// observations of obsDim and actions of actDim values.
func NewReplay(capacity, obsDim, actDim int) *Replay {
	if capacity < 1 || obsDim < 1 || actDim < 1 {
		panic(fmt.Sprintf("rl: NewReplay(%d, %d, %d): sizes must be >= 1", capacity, obsDim, actDim))
	}
	return &Replay{
		capacity: capacity, obsDim: obsDim, actDim: actDim,
		obs:  make([]float32, capacity*obsDim),
		next: make([]float32, capacity*obsDim),
		act:  make([]float32, capacity*actDim),
		rew:  make([]float32, capacity),
		cost: make([]float32, capacity),
		done: make([]float32, capacity),
	}
}

// Len is the number of stored transitions (at most the capacity).
func (r *Replay) Len() int { return r.n }

// Add stores the transition (obs, act, reward, next); terminated marks next
// as a terminal state. Slices are copied.
func (r *Replay) Add(obs, act []float64, reward float64, next []float64, terminated bool) {
	r.AddCost(obs, act, reward, 0, next, terminated)
}

// AddCost stores a transition with a cost (see SetPenalty).
func (r *Replay) AddCost(obs, act []float64, reward, cost float64, next []float64, terminated bool) {
	i := r.pos
	put(r.obs[i*r.obsDim:(i+1)*r.obsDim], obs)
	put(r.next[i*r.obsDim:(i+1)*r.obsDim], next)
	put(r.act[i*r.actDim:(i+1)*r.actDim], act)
	r.rew[i], r.cost[i] = float32(reward), float32(cost)
	r.done[i] = 0
	if terminated {
		r.done[i] = 1
	}
	r.pos = (r.pos + 1) % r.capacity
	r.n = min(r.n+1, r.capacity)
}

// SetPenalty sets the multiplier λ of the costs: from now on a sampled
// transition's reward is its reward less λ times its cost.
func (r *Replay) SetPenalty(lambda float64) { r.penalty = float32(lambda) }

// Sample fills dst with n transitions drawn uniformly with replacement. It
// panics if the buffer is empty.
func (r *Replay) Sample(dst *Batch, rng *rand.Rand, n int) {
	if r.n == 0 {
		panic("rl: Sample from an empty replay buffer")
	}
	dst.resize(n, r.obsDim, r.actDim)
	for k := 0; k < n; k++ {
		i := rng.IntN(r.n)
		copy(dst.Obs[k*r.obsDim:(k+1)*r.obsDim], r.obs[i*r.obsDim:(i+1)*r.obsDim])
		copy(dst.NextObs[k*r.obsDim:(k+1)*r.obsDim], r.next[i*r.obsDim:(i+1)*r.obsDim])
		copy(dst.Act[k*r.actDim:(k+1)*r.actDim], r.act[i*r.actDim:(i+1)*r.actDim])
		dst.Reward[k] = r.rew[i] - r.penalty*r.cost[i]
		dst.Done[k] = r.done[i]
	}
}

func put(dst []float32, src []float64) {
	if len(src) != len(dst) {
		panic(fmt.Sprintf("rl: value of length %d, want %d", len(src), len(dst)))
	}
	for i, v := range src {
		dst[i] = float32(v)
	}
}
