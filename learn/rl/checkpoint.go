package rl

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/shoal-project/shoal/learn/nn"
)

// Checkpoints: an agent's whole training state, so that training stopped
// between two steps resumes exactly as if it had not stopped. The random
// source the agent was given is the caller's to save (rand.PCG and
// rand.ChaCha8 implement encoding.BinaryMarshaler).

// Save writes the stored transitions and the ring's position.
func (r *Replay) Save(w io.Writer) error {
	if err := binary.Write(w, binary.LittleEndian, [2]int64{int64(r.n), int64(r.pos)}); err != nil {
		return fmt.Errorf("rl: replay: %w", err)
	}
	return nn.Save(w, r.arch(), r.tensors(r.n))
}

// Load reads transitions written by Save into a buffer of the same
// capacity and dimensions, replacing its contents. Give it a *bufio.Reader
// when more follows in the same stream.
func (r *Replay) Load(rd io.Reader) error {
	br := bufio.NewReader(rd)
	var c [2]int64
	if err := binary.Read(br, binary.LittleEndian, &c); err != nil {
		return fmt.Errorf("rl: replay: %w", err)
	}
	n, pos := int(c[0]), int(c[1])
	if n < 0 || n > r.capacity || pos < 0 || pos >= r.capacity || (n < r.capacity && pos != n) {
		return fmt.Errorf("rl: replay: %d transitions at position %d do not fit a buffer of %d: %w", n, pos, r.capacity, nn.ErrFormat)
	}
	if err := nn.Load(br, r.arch(), r.tensors(n)); err != nil {
		return fmt.Errorf("rl: replay: %w", err)
	}
	r.n, r.pos = n, pos
	return nil
}

func (r *Replay) arch() string {
	return fmt.Sprintf("replay capacity %d obs %d act %d costs", r.capacity, r.obsDim, r.actDim)
}

// tensors are the first n transitions' columns, sharing the buffer's memory.
func (r *Replay) tensors(n int) []*nn.Node[float32] {
	t := func(name string, data []float32, cols int) *nn.Node[float32] {
		return &nn.Node[float32]{Name: name, Value: nn.Tensor[float32]{Rows: n, Cols: cols, Data: data[:n*cols]}}
	}
	return []*nn.Node[float32]{t("obs", r.obs, r.obsDim), t("act", r.act, r.actDim), t("next", r.next, r.obsDim),
		t("reward", r.rew, 1), t("cost", r.cost, 1), t("done", r.done, 1)}
}

// Save writes the agent's training state: actor, critics and their
// targets, both optimisers, the replay buffer and the update counters.
// Load into an agent built by NewTD3 with the same spec and configuration
// (and the random source restored) continues training exactly.
func (t *TD3) Save(w io.Writer) error {
	counters := [3]int64{int64(t.Updates), int64(t.sched.steps), int64(t.sched.sinceTrain)}
	if err := binary.Write(w, binary.LittleEndian, counters); err != nil {
		return fmt.Errorf("rl: td3: %w", err)
	}
	if err := nn.Save(w, t.arch(), t.networks()); err != nil {
		return err
	}
	if err := t.actorOpt.Save(w); err != nil {
		return err
	}
	if err := t.qOpt.Save(w); err != nil {
		return err
	}
	return t.replay.Save(w)
}

// Load reads a state written by Save. Give it a *bufio.Reader when more
// follows in the same stream.
func (t *TD3) Load(r io.Reader) error {
	br := bufio.NewReader(r)
	var c [3]int64
	if err := binary.Read(br, binary.LittleEndian, &c); err != nil {
		return fmt.Errorf("rl: td3: %w", err)
	}
	if err := nn.Load(br, t.arch(), t.networks()); err != nil {
		return fmt.Errorf("rl: td3: %w", err)
	}
	if err := t.actorOpt.Load(br); err != nil {
		return err
	}
	if err := t.qOpt.Load(br); err != nil {
		return err
	}
	if err := t.replay.Load(br); err != nil {
		return err
	}
	t.Updates, t.sched.steps, t.sched.sinceTrain = int(c[0]), int(c[1]), int(c[2])
	return nil
}

func (t *TD3) arch() string {
	return fmt.Sprintf("td3 obs %d act %d hidden %v critics %d", t.obsDim, t.actDim, t.Config.Hidden, len(t.q))
}

// networks are every parameter of the actor, the critics and their targets.
func (t *TD3) networks() []*nn.Node[float32] {
	nodes := append(t.actor.Params(), t.actorTarget.Params()...)
	for i := range t.q {
		nodes = append(nodes, t.q[i].Params()...)
		nodes = append(nodes, t.qTarget[i].Params()...)
	}
	return nodes
}
