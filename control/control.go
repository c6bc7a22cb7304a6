// Package control defines the controller contract and the action vocabulary
// shared by the simulator and the real adapters.
//
// The usage loop, every control period:
//
//	sys.Observe(&snap)                     // metrics.Snapshot of the last period
//	for _, a := range ctl.Decide(now, &snap) {
//		if err := act.Apply(now, a); err != nil { ... }
//	}
//
// A controller never knows whether it drives the simulator or a real system.
package control

import (
	"time"

	"github.com/shoal-project/shoal/metrics"
)

// Controller decides actions from the telemetry of the last period. It is
// pure given its seed: same observations, same actions.
type Controller interface {
	Decide(now time.Duration, obs *metrics.Snapshot) []Action
}

// Actuator applies actions to a system: the simulator's cluster or a real one.
type Actuator interface {
	Apply(now time.Duration, a Action) error
}

// Action is one typed change to the system.
type Action interface{ action() }

// SetWeights sets the weights of an LB point's backends, in backend order.
type SetWeights struct {
	LB      string
	Weights []float64
}

// SetReplicas sets the number of instances of a service.
type SetReplicas struct {
	Service  string
	Replicas int
}

// SetResources sets a service's per-instance CPU limit (cores) and memory
// limit (MB); zero leaves a value unchanged.
type SetResources struct {
	Service  string
	CPU      float64
	MemoryMB float64
}

// SetConcurrency sets a service's per-instance concurrency limit (0 = none).
type SetConcurrency struct {
	Service string
	Limit   int
}

// SetRouteWeights sets the share of a service's calls from location From
// that go to each location, by location name.
type SetRouteWeights struct {
	Service string
	From    string
	Weights map[string]float64
}

// SetBrownout deactivates an optional service (On) or reactivates it: while
// it is browned out every call to it is skipped, and the requests that miss
// it count as degraded, not failed. Only a service the scenario marks
// optional can be browned out; others return an error.
type SetBrownout struct {
	Service string
	On      bool
}

func (SetWeights) action()      {}
func (SetReplicas) action()     {}
func (SetResources) action()    {}
func (SetConcurrency) action()  {}
func (SetRouteWeights) action() {}
func (SetBrownout) action()     {}
