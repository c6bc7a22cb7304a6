// Package faasconf runs FaaSConf (Wang et al., ASE 2024; docs/PAPERS.md):
// one agent per serverless function sets the function's CPU and memory
// limits, instances and concurrency limit together, the hybrid
// configuration that is the paper's point, from the telemetry OpenFaaS and
// Prometheus expose (Table 2), and a safe exploration strategy (section
// 4.3) keeps the configurations inside price bounds learnt from history.
// The training environment is envs/faasconfenv; the algorithm is learn/rl's
// MADDPG with the attention mean-field.
package faasconf

import (
	"fmt"
	"math"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// Space is the configuration space of one function (section 5.1.2).
type Space struct {
	CPU         [2]float64 `json:"cpu"`       // cores
	MemoryMB    [2]float64 `json:"memory_mb"` // MB
	Instances   [2]int     `json:"instances"`
	Concurrency [2]int     `json:"concurrency"` // per instance (OpenFaaS max_inflight)
}

// MLSpace is the space of the paper's ML workflows: CPU 250-2000
// millicores, memory 256-2024 MB, 1-8 instances, concurrency 1-10.
func MLSpace() Space {
	return Space{CPU: [2]float64{0.25, 2}, MemoryMB: [2]float64{256, 2024}, Instances: [2]int{1, 8}, Concurrency: [2]int{1, 10}}
}

// WebSpace is the space of the web service (TcktApp): CPU and memory at
// most 1000 millicores and 1024 MB.
func WebSpace() Space {
	s := MLSpace()
	s.CPU[1], s.MemoryMB[1] = 1, 1024
	return s
}

// HardwareOnly is the space without the concurrency limit: CPU, memory and
// instances only (section 5.2.3's hardware-only configuration, and the
// baselines' space in Table 1). Every function then admits any number of
// requests, as OpenFaaS does without max_inflight.
func (s Space) HardwareOnly() Space {
	s.Concurrency = [2]int{0, 0}
	return s
}

// Hybrid reports whether the space sets the concurrency limit.
func (s Space) Hybrid() bool { return s.Concurrency != [2]int{0, 0} }

// Validate reports the first bound that is empty or out of order.
func (s Space) Validate() error {
	switch {
	case !(s.CPU[0] > 0 && s.CPU[0] <= s.CPU[1]):
		return fmt.Errorf("cpu: bounds %v must be positive and in order", s.CPU)
	case !(s.MemoryMB[0] > 0 && s.MemoryMB[0] <= s.MemoryMB[1]):
		return fmt.Errorf("memory_mb: bounds %v must be positive and in order", s.MemoryMB)
	case !(s.Instances[0] >= 1 && s.Instances[0] <= s.Instances[1]):
		return fmt.Errorf("instances: bounds %v must be >= 1 and in order", s.Instances)
	case s.Hybrid() && !(s.Concurrency[0] >= 1 && s.Concurrency[0] <= s.Concurrency[1]):
		return fmt.Errorf("concurrency: bounds %v must be >= 1 and in order ([0, 0]: no limit)", s.Concurrency)
	}
	return nil
}

// Config is one function's hybrid configuration.
type Config struct {
	CPU         float64 `json:"cpu"`
	MemoryMB    float64 `json:"memory_mb"`
	Instances   int     `json:"instances"`
	Concurrency int     `json:"concurrency"`
}

// ActionDim is the width of an agent's action: CPU, memory, instances and
// concurrency, each in [-1, 1] across the space.
const ActionDim = 4

// Decode maps an action in [-1, 1]^4 (clipped) to a configuration of the
// space, instances and concurrency rounded to the nearest whole number (a
// hardware-only space's concurrency is 0: no limit).
func (s Space) Decode(a []float64) Config {
	at := func(x, lo, hi float64) float64 { return lo + (math.Max(-1, math.Min(1, x))+1)/2*(hi-lo) }
	return Config{
		CPU:         at(a[0], s.CPU[0], s.CPU[1]),
		MemoryMB:    at(a[1], s.MemoryMB[0], s.MemoryMB[1]),
		Instances:   int(math.Round(at(a[2], float64(s.Instances[0]), float64(s.Instances[1])))),
		Concurrency: int(math.Round(at(a[3], float64(s.Concurrency[0]), float64(s.Concurrency[1])))),
	}
}

// Encode is Decode's inverse: the action in [-1, 1]^4 of c, written to dst.
func (s Space) Encode(dst []float64, c Config) {
	unit := func(x, lo, hi float64) float64 {
		if hi == lo {
			return 0
		}
		return math.Max(-1, math.Min(1, 2*(x-lo)/(hi-lo)-1))
	}
	dst[0] = unit(c.CPU, s.CPU[0], s.CPU[1])
	dst[1] = unit(c.MemoryMB, s.MemoryMB[0], s.MemoryMB[1])
	dst[2] = unit(float64(c.Instances), float64(s.Instances[0]), float64(s.Instances[1]))
	dst[3] = unit(float64(c.Concurrency), float64(s.Concurrency[0]), float64(s.Concurrency[1]))
}

// EncodeAll is every configuration as its action (Encode), one per
// function.
func (s Space) EncodeAll(cs []Config) [][]float64 {
	out := make([][]float64, len(cs))
	for j, c := range cs {
		out[j] = make([]float64, ActionDim)
		s.Encode(out[j], c)
	}
	return out
}

// LargestPrice is the price per hour of n functions each at the space's
// largest configuration.
func (s Space) LargestPrice(n int) float64 {
	largest := make([]Config, n)
	for j := range largest {
		largest[j] = s.Decode([]float64{1, 1, 1, 1})
	}
	return Price(largest)
}

// Prices are the paper's (equation 2), Azure Functions' premium plan.
const (
	VCPUHour = 0.173
	GBHour   = 0.0123
)

// Price is equation 2's y(C) per hour of the configurations: the sum over
// functions of (α CPU + β memory) × instances.
func Price(cs []Config) float64 {
	y := 0.0
	for _, c := range cs {
		y += (VCPUHour*c.CPU + GBHour*c.MemoryMB/1024) * float64(c.Instances)
	}
	return y
}

// Actions are the changes that move service svc, as the snapshot shows it,
// to c: nothing when it is already there.
func Actions(dst []control.Action, svc string, s *metrics.ServiceStats, c Config) []control.Action {
	if s.CPULimit != c.CPU || s.MemoryLimit != c.MemoryMB {
		dst = append(dst, control.SetResources{Service: svc, CPU: c.CPU, MemoryMB: c.MemoryMB})
	}
	if s.Replicas != c.Instances {
		dst = append(dst, control.SetReplicas{Service: svc, Replicas: c.Instances})
	}
	if s.Concurrency != c.Concurrency {
		dst = append(dst, control.SetConcurrency{Service: svc, Limit: c.Concurrency})
	}
	return dst
}
