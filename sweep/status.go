package sweep

import (
	"context"
	"fmt"
)

// ShardStatus is one shard's progress: the runs it makes and those the
// store has.
type ShardStatus struct {
	Shard, Runs, Stored int
}

// Status counts, per shard of r.Shards, the runs planned and stored.
func (r *Runner) Status(ctx context.Context) ([]ShardStatus, error) {
	if r.ID == "" {
		r.ID = r.Spec.Name
	}
	n := max(r.Shards, 1)
	stored, err := r.Store.Keys(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	out := make([]ShardStatus, n)
	for i := range out {
		out[i].Shard = i
	}
	for _, j := range r.Spec.Jobs() {
		p, err := r.plan(j)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", j, err)
		}
		s := &out[j.Index%n]
		for _, k := range p.keys {
			s.Runs++
			if stored[k] {
				s.Stored++
			}
		}
	}
	return out, nil
}
