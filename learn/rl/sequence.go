package rl

import (
	"fmt"
	"math/rand/v2"
)

// SeqBatch is a minibatch of observation histories for recurrent agents.
// Sample i ends at a stored transition (o_t, a_t, r_t, o_{t+1}, done_t); its
// history window holds the L observations o_{t-L+1}, ..., o_t of the same
// episode, left-padded with zeros (Mask 0) where the episode started less
// than L steps before t. NextObs is the window one step later,
// o_{t-L+2}, ..., o_{t+1}, which is what the target networks see.
//
// Windows are time-major: step k (0 = oldest, L-1 = newest) of all N samples
// is the N×ObsDim block Obs[k*N*ObsDim:(k+1)*N*ObsDim], and Mask[k*N+i] is
// sample i's mask at step k, so one GRU step consumes one contiguous block.
// Act, Reward and Done belong to the last step. The zero value sizes itself.
type SeqBatch struct {
	N, L, ObsDim, ActDim int
	Obs, NextObs         []float32
	Mask, NextMask       []float32
	Act                  []float32
	Reward, Done         []float32
}

func (b *SeqBatch) resize(n, l, obsDim, actDim int) {
	b.N, b.L, b.ObsDim, b.ActDim = n, l, obsDim, actDim
	b.Obs = grow(b.Obs, l*n*obsDim)
	b.NextObs = grow(b.NextObs, l*n*obsDim)
	b.Mask = grow(b.Mask, l*n)
	b.NextMask = grow(b.NextMask, l*n)
	b.Act = grow(b.Act, n*actDim)
	b.Reward = grow(b.Reward, n)
	b.Done = grow(b.Done, n)
}

// SequenceReplay is a replay buffer of whole trajectories from which
// fixed-length history windows are sampled (uniformly over their last
// transition). Windows never cross an episode boundary: steps before the
// episode's first observation are zero with mask 0, as are steps whose
// transitions were already overwritten in the ring.
type SequenceReplay struct {
	capacity, obsDim, actDim, seqLen int
	obs, act, next                   []float32
	rew, done                        []float32
	episode, step                    []int64 // episode number and step within it, per slot
	curEpisode, curStep              int64
	n, pos                           int
}

// NewSequenceReplay returns an empty buffer for capacity transitions whose
// samples are windows of seqLen steps.
func NewSequenceReplay(capacity, obsDim, actDim, seqLen int) *SequenceReplay {
	if capacity < 1 || obsDim < 1 || actDim < 1 || seqLen < 1 {
		panic(fmt.Sprintf("rl: NewSequenceReplay(%d, %d, %d, %d): sizes must be >= 1", capacity, obsDim, actDim, seqLen))
	}
	return &SequenceReplay{
		capacity: capacity, obsDim: obsDim, actDim: actDim, seqLen: seqLen,
		obs:     make([]float32, capacity*obsDim),
		next:    make([]float32, capacity*obsDim),
		act:     make([]float32, capacity*actDim),
		rew:     make([]float32, capacity),
		done:    make([]float32, capacity),
		episode: make([]int64, capacity),
		step:    make([]int64, capacity),
	}
}

// Len is the number of stored transitions.
func (s *SequenceReplay) Len() int { return s.n }

// SeqLen is the window length L.
func (s *SequenceReplay) SeqLen() int { return s.seqLen }

// Add appends the next transition of the current episode. terminated marks
// next as terminal; terminated or truncated ends the episode, so the next
// Add starts a new one.
func (s *SequenceReplay) Add(obs, act []float64, reward float64, next []float64, terminated, truncated bool) {
	i := s.pos
	put(s.obs[i*s.obsDim:(i+1)*s.obsDim], obs)
	put(s.next[i*s.obsDim:(i+1)*s.obsDim], next)
	put(s.act[i*s.actDim:(i+1)*s.actDim], act)
	s.rew[i] = float32(reward)
	s.done[i] = 0
	if terminated {
		s.done[i] = 1
	}
	s.episode[i], s.step[i] = s.curEpisode, s.curStep
	s.curStep++
	if terminated || truncated {
		s.curEpisode++
		s.curStep = 0
	}
	s.pos = (s.pos + 1) % s.capacity
	s.n = min(s.n+1, s.capacity)
}

// EndEpisode marks the current episode as finished without a terminal
// transition (for example when collection stops); the next Add starts a new one.
func (s *SequenceReplay) EndEpisode() {
	if s.curStep > 0 {
		s.curEpisode++
		s.curStep = 0
	}
}

// Sample fills dst with n windows whose last transitions are drawn
// uniformly with replacement. It panics if the buffer is empty.
func (s *SequenceReplay) Sample(dst *SeqBatch, rng *rand.Rand, n int) {
	if s.n == 0 {
		panic("rl: Sample from an empty sequence replay buffer")
	}
	L, od := s.seqLen, s.obsDim
	dst.resize(n, L, od, s.actDim)
	for i := 0; i < n; i++ {
		j := rng.IntN(s.n)
		ep, st := s.episode[j], s.step[j]
		for k := 0; k < L; k++ {
			back := L - 1 - k // o_{t-back}
			obs := dst.Obs[(k*n+i)*od : (k*n+i+1)*od]
			nextObs := dst.NextObs[(k*n+i)*od : (k*n+i+1)*od]
			// Window at step k: o_{t-back}; next window at step k: o_{t-back+1}.
			if src, ok := s.slot(j, back, ep, st); ok {
				copy(obs, s.obs[src*od:(src+1)*od])
				dst.Mask[k*n+i] = 1
			} else {
				clear(obs)
				dst.Mask[k*n+i] = 0
			}
			if back == 0 {
				copy(nextObs, s.next[j*od:(j+1)*od])
				dst.NextMask[k*n+i] = 1
			} else if src, ok := s.slot(j, back-1, ep, st); ok {
				copy(nextObs, s.obs[src*od:(src+1)*od])
				dst.NextMask[k*n+i] = 1
			} else {
				clear(nextObs)
				dst.NextMask[k*n+i] = 0
			}
		}
		copy(dst.Act[i*s.actDim:(i+1)*s.actDim], s.act[j*s.actDim:(j+1)*s.actDim])
		dst.Reward[i] = s.rew[j]
		dst.Done[i] = s.done[j]
	}
}

// slot returns the ring slot holding the transition back steps before slot
// j in the same episode, if it is still stored.
func (s *SequenceReplay) slot(j, back int, ep, st int64) (int, bool) {
	if int64(back) > st || back >= s.n {
		return 0, false
	}
	src := ((j-back)%s.capacity + s.capacity) % s.capacity
	return src, s.episode[src] == ep && s.step[src] == st-int64(back)
}

// Window keeps the last L observations of the running episode for a
// recurrent policy at acting time, laid out like one sample of a SeqBatch
// (oldest first, zero-padded at the start of an episode).
type Window struct {
	L, ObsDim int
	// Data holds L×ObsDim values, oldest step first.
	Data []float32
	// Mask holds L values: 1 for real observations, 0 for padding.
	Mask []float32
}

// NewWindow returns an empty window of l steps of obsDim values.
func NewWindow(l, obsDim int) *Window {
	return &Window{L: l, ObsDim: obsDim, Data: make([]float32, l*obsDim), Mask: make([]float32, l)}
}

// Reset clears the window at the start of an episode.
func (w *Window) Reset() {
	clear(w.Data)
	clear(w.Mask)
}

// Push appends obs as the newest step, dropping the oldest.
func (w *Window) Push(obs []float64) {
	copy(w.Data, w.Data[w.ObsDim:])
	copy(w.Mask, w.Mask[1:])
	put(w.Data[(w.L-1)*w.ObsDim:], obs)
	w.Mask[w.L-1] = 1
}
