package autothrottle

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// PolicyFormat names the file 'shoal train autothrottle' writes.
const PolicyFormat = "shoal-autothrottle"

// Policy is a trained Autothrottle: the services' clusters, the Tower's
// settings and the minutes of its warm-up, which every run starts from
// (and adds its own to, as the release's Tower keeps learning).
type Policy struct {
	Format   string         `json:"format"`
	Version  int            `json:"version"`
	Scenario string         `json:"scenario"`
	Clusters map[string]int `json:"clusters"` // service -> 0 (the busier) or 1
	Tower    TowerConfig    `json:"tower"`
	Samples  []Sample       `json:"samples"`
	Seed     uint64         `json:"seed"`
}

// Write writes p as JSON.
func (p *Policy) Write(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", " ")
	return e.Encode(p)
}

// ReadPolicy reads a policy file.
func ReadPolicy(r io.Reader) (*Policy, error) {
	var p Policy
	if err := json.NewDecoder(r).Decode(&p); err != nil {
		return nil, fmt.Errorf("autothrottle: %w", err)
	}
	if p.Format != PolicyFormat || p.Version != 1 {
		return nil, fmt.Errorf("autothrottle: not a policy file (format %q, version %d)", p.Format, p.Version)
	}
	if len(p.Clusters) == 0 {
		return nil, errors.New("autothrottle: the policy names no service")
	}
	return &p, nil
}

// Clusters splits the services in two by their mean CPU use, as the
// release's k-means with k = 2 (§A.3): in one dimension the split of the
// sorted uses with the least within-cluster squared distance. Cluster 0
// holds the busier services.
func Clusters(use map[string]float64) map[string]int {
	names := make([]string, 0, len(use))
	for n := range use {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if use[names[i]] != use[names[j]] {
			return use[names[i]] > use[names[j]]
		}
		return names[i] < names[j]
	})
	ss := func(part []string) float64 {
		var sum, sq float64
		for _, n := range part {
			sum, sq = sum+use[n], sq+use[n]*use[n]
		}
		if len(part) == 0 {
			return 0
		}
		return sq - sum*sum/float64(len(part))
	}
	cut, best := 1, -1.0
	for k := 1; k < len(names); k++ {
		if s := ss(names[:k]) + ss(names[k:]); best < 0 || s < best {
			cut, best = k, s
		}
	}
	out := make(map[string]int, len(names))
	for i, n := range names {
		out[n] = 0
		if i >= cut {
			out[n] = 1
		}
	}
	return out
}

// Controller is the Autothrottle-like autoscaler of the policy's
// services: a Captain each, and the Tower.
type Controller struct {
	pol      *Policy
	captains []*Captain // created at the first snapshot, from the limits it shows
	cluster  []int
	tower    *Tower
	acts     []control.Action
}

// NewController returns the policy's controller. explore is the Tower's
// chance of trying a neighbouring action (the release measured with 0,
// after its warm-up); seed draws its models and explorations.
func NewController(p *Policy, explore float64, seed uint64) *Controller {
	cfg := p.Tower
	cfg.Explore = explore
	return &Controller{pol: p, tower: NewTower(cfg, p.Samples, seed)}
}

// Tower is the controller's Tower (its samples grow as it runs).
func (c *Controller) Tower() *Tower { return c.tower }

// Decide runs every Captain each period and the Tower each minute.
func (c *Controller) Decide(now time.Duration, snap *metrics.Snapshot) []control.Action {
	if c.captains == nil {
		c.start(snap)
	}
	c.tower.observe(snap, c.pol.Clusters)
	if now >= c.tower.next {
		first, second := c.tower.Targets(c.tower.decide(now))
		for i, cp := range c.captains {
			cp.Target = [2]float64{first, second}[c.cluster[i]]
		}
	}
	c.acts = c.acts[:0]
	for _, cp := range c.captains {
		c.acts = append(c.acts, cp.Decide(now, snap)...)
	}
	return c.acts
}

// start makes a Captain for each of the policy's services in the
// snapshot, at the limit it has.
func (c *Controller) start(snap *metrics.Snapshot) {
	c.captains = []*Captain{}
	for i := range snap.Services {
		s := &snap.Services[i]
		if k, ok := c.pol.Clusters[s.Name]; ok {
			c.captains = append(c.captains, NewCaptain(s.Name, s.CPULimit, CaptainConfig{}))
			c.cluster = append(c.cluster, k)
		}
	}
}
