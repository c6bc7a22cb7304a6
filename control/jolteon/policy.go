package jolteon

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/metrics"
)

// PolicyFormat names the policy file in errors.
const PolicyFormat = "jolteon policy"

// Policy is what profiling a workflow gives: its model, and at every
// workload level the configuration the chance-constrained optimisation
// chose, which a Controller serves.
type Policy struct {
	Functions []string           `json:"functions"`
	QoS       faasconf.QoS       `json:"qos"`
	Window    modelfile.Duration `json:"window"`
	BaseRate  float64            `json:"base_rate"` // requests/s at level 1
	Levels    []float64          `json:"levels"`
	// Configs are every level's configuration, one per function.
	Configs    [][]faasconf.Config `json:"configs"`
	Model      *Model              `json:"model"`
	Provenance Provenance          `json:"provenance"`
}

// Provenance is how a policy was made.
type Provenance struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	// Profiled counts the measurements taken.
	Profiled    int     `json:"profiled"`
	WallSeconds float64 `json:"wall_seconds"`
}

// Validate reports a policy that cannot be served.
func (p *Policy) Validate() error {
	switch {
	case len(p.Functions) == 0:
		return fmt.Errorf("functions: none")
	case len(p.Levels) == 0 || !slices.IsSorted(p.Levels):
		return fmt.Errorf("levels %v: want at least one, in increasing order", p.Levels)
	case len(p.Configs) != len(p.Levels):
		return fmt.Errorf("configs: %d levels of configurations for %d levels", len(p.Configs), len(p.Levels))
	case p.BaseRate <= 0 || p.Window <= 0:
		return fmt.Errorf("base_rate %v and window %v: must be positive", p.BaseRate, time.Duration(p.Window))
	}
	for i, cs := range p.Configs {
		if len(cs) != len(p.Functions) {
			return fmt.Errorf("configs[%d]: %d configurations for %d functions", i, len(cs), len(p.Functions))
		}
	}
	return p.QoS.Validate()
}

// Write writes the policy file (one JSON header line).
func (p *Policy) Write(w io.Writer) error { return modelfile.WriteHeader(w, p) }

// ReadPolicy reads a policy file written by Write.
func ReadPolicy(r io.Reader) (*Policy, error) {
	p := &Policy{}
	if _, err := modelfile.ReadHeader(r, p, PolicyFormat); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return p, nil
}

// Controller serves a policy: at the end of every window it runs the
// configuration of the window's workload level (faasconf.Leveller, as
// FaaSConf's controller levels its windows). It implements
// control.Controller; call it once per window (Policy.Window).
type Controller struct {
	pol  *Policy
	lev  faasconf.Leveller
	idx  []int
	acts []control.Action
}

// NewController returns a controller serving pol.
func NewController(pol *Policy) *Controller {
	c := &Controller{pol: pol, lev: faasconf.Leveller{Levels: pol.Levels, BaseRate: pol.BaseRate}, idx: make([]int, len(pol.Functions))}
	for j := range c.idx {
		c.idx[j] = -1
	}
	return c
}

// Decide implements control.Controller.
func (c *Controller) Decide(_ time.Duration, snap *metrics.Snapshot) []control.Action {
	c.acts = c.acts[:0]
	if snap.Period <= 0 {
		return nil
	}
	cs := c.pol.Configs[slices.Index(c.pol.Levels, c.lev.Of(snap))]
	for j, f := range c.pol.Functions {
		if c.idx[j] = snap.ServiceIndex(f, c.idx[j]); c.idx[j] < 0 {
			panic(fmt.Sprintf("jolteon: function %q is not in the snapshot", f))
		}
		c.acts = faasconf.Actions(c.acts, f, &snap.Services[c.idx[j]], cs[j])
	}
	return c.acts
}
