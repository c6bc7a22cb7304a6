package drpc

import (
	"errors"
	"fmt"
	"strings"
)

// Service is what a world (a scenario, a cluster) says of one of its
// services, against which a policy is checked when it is loaded.
type Service struct {
	Name string
	// Optional services may be browned out.
	Optional bool
	// MinReplicas and MaxReplicas bound its replicas (0: not stated).
	MinReplicas, MaxReplicas int
	// CPU and MemoryMB are its limits per replica now (0: not stated).
	CPU, MemoryMB float64
}

// Mismatch is one way a policy does not fit its world, and what Fit did
// about it when told to drop what does not fit.
type Mismatch struct {
	Deployment string
	Problem    string
	Dropped    string // "" when the mismatch cannot be dropped
}

func (m Mismatch) String() string {
	s := m.Deployment + ": " + m.Problem
	if m.Dropped != "" {
		s += "; " + m.Dropped
	}
	return s
}

// MismatchError lists the mismatches that refused a policy.
type MismatchError []Mismatch

func (e MismatchError) Error() string {
	parts := make([]string, len(e))
	for i, m := range e {
		parts[i] = m.Deployment + ": " + m.Problem
	}
	return fmt.Sprintf("the policy does not fit (%d mismatches): %s", len(e), strings.Join(parts, "; "))
}

// Fit checks the policy against the services of the world it is to run
// in, before it runs: every deployment must be there; one the policy may
// brown out must be optional there; its replica bounds must be the
// world's; its CPU and memory limits now must lie within the policy's
// rails (else the students' inputs leave the trained range at once).
//
// Without drop, any mismatch refuses the policy (a MismatchError naming
// each). With drop, what can be dropped is, and the mismatches are
// returned: brownout is taken from a deployment that is not optional,
// replica bounds are narrowed to the world's, and a deployment whose
// limits are outside the rails is handed to the fallback for the run. A
// missing deployment is always refused.
func (p *Policy) Fit(world []Service, drop bool) ([]Mismatch, error) {
	byName := map[string]*Service{}
	for i := range world {
		byName[world[i].Name] = &world[i]
	}
	var all, refused []Mismatch
	note := func(d *Deployment, problem, dropped string, apply func()) {
		m := Mismatch{Deployment: d.Name, Problem: problem}
		if drop && apply != nil {
			m.Dropped = dropped
			apply()
		} else {
			refused = append(refused, m)
		}
		all = append(all, m)
	}
	for i := range p.Deployments {
		d := &p.Deployments[i]
		s, ok := byName[d.Name]
		if !ok {
			note(d, "not a service of this world", "", nil)
			continue
		}
		if d.Optional && !s.Optional {
			note(d, "the policy may brown it out, but it is not optional here", "brownout dropped", func() { d.Optional = false })
		}
		if s.MaxReplicas > 0 && d.MaxReplicas > s.MaxReplicas {
			note(d, fmt.Sprintf("max replicas %d, the world's %d", d.MaxReplicas, s.MaxReplicas),
				fmt.Sprintf("held to %d", s.MaxReplicas), func() { d.MaxReplicas = s.MaxReplicas })
		}
		if d.MinReplicas < s.MinReplicas {
			note(d, fmt.Sprintf("min replicas %d, the world's %d", d.MinReplicas, s.MinReplicas),
				fmt.Sprintf("held to %d", s.MinReplicas), func() { d.MinReplicas = s.MinReplicas })
		}
		if s.CPU > 0 && (s.CPU < d.CPUMin || s.CPU > d.CPUMax) {
			note(d, fmt.Sprintf("CPU limit %g outside the policy's [%g, %g]", s.CPU, d.CPUMin, d.CPUMax),
				"left to the fallback", func() { d.handover = true })
		}
		if s.MemoryMB > 0 && d.MemoryMax > 0 && (s.MemoryMB < d.MemoryMin || s.MemoryMB > d.MemoryMax) {
			note(d, fmt.Sprintf("memory limit %g MB outside the policy's [%g, %g]", s.MemoryMB, d.MemoryMin, d.MemoryMax),
				"left to the fallback", func() { d.handover = true })
		}
	}
	if len(refused) > 0 {
		return all, MismatchError(refused)
	}
	return all, nil
}

// ErrMismatch is what errors.Is finds in a MismatchError.
var ErrMismatch = errors.New("policy does not fit")

func (e MismatchError) Is(target error) bool { return target == ErrMismatch }
