// Package multicloud routes the calls of a microservice system deployed in
// several clouds: the learning-based load balancing of Cui, Chen and Yu
// ("A Learning-based Dynamic Load Balancing Approach for Microservice
// Systems in Multi-cloud Environment", ICPADS 2020; multicloud-routing-bo.txt)
// and the routes people run today.
//
// Every controller here reads only what a mesh's monitor gives (section
// II-B): per call-graph edge and pair of clouds, the calls and their summed
// response time (Istio's request metrics); per service and cloud, the
// replicas; per pair of clouds, the RTT; per cloud, the CPU other tenants
// take. It acts through control.SetRouteWeights, as Istio's
// VirtualService and DestinationRule do.
package multicloud

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shoal-project/shoal/metrics"
)

// Topology is the mesh as a snapshot shows it: the clouds, the services
// placed in several of them, and their call depth.
type Topology struct {
	Locations []string
	// Services are the routed services, parents before children (by call
	// depth, then by name).
	Services []Service
	// Layers groups the indices of Services by call depth (Fig. 4): a
	// layer's routes are updated together, after its parents'.
	Layers [][]int
}

// Service is a service deployed in several clouds.
type Service struct {
	Name string
	// Parts are the snapshot indices of NAME@LOCATION by location (-1 where
	// the service is not placed).
	Parts []int
	Depth int
}

// Placed reports whether the service runs in location l.
func (s *Service) Placed(l int) bool { return s.Parts[l] >= 0 }

// ReadTopology reads the topology from a snapshot. The call graph comes
// from the route telemetry's edges: a service's depth is the longest call
// path to it from the system's clients.
func ReadTopology(s *metrics.Snapshot) (*Topology, error) {
	t := &Topology{}
	for _, l := range s.Locations {
		t.Locations = append(t.Locations, l.Name)
	}
	if len(t.Locations) < 2 {
		return nil, fmt.Errorf("multicloud: the system has %d location(s): routing needs at least 2", len(t.Locations))
	}
	byName := map[string]int{}
	for i := range s.Services {
		name, loc, ok := strings.Cut(s.Services[i].Name, "@")
		l := slices.Index(t.Locations, loc)
		if !ok || l < 0 {
			continue
		}
		k, seen := byName[name]
		if !seen {
			k = len(t.Services)
			byName[name] = k
			parts := make([]int, len(t.Locations))
			for j := range parts {
				parts[j] = -1
			}
			t.Services = append(t.Services, Service{Name: name, Parts: parts})
		}
		t.Services[k].Parts[l] = i
	}
	if len(t.Services) == 0 {
		return nil, fmt.Errorf("multicloud: no service is placed in several locations")
	}
	depth := callDepths(s.Routes)
	for i := range t.Services {
		t.Services[i].Depth = depth[t.Services[i].Name]
	}
	slices.SortStableFunc(t.Services, func(a, b Service) int {
		if a.Depth != b.Depth {
			return a.Depth - b.Depth
		}
		return strings.Compare(a.Name, b.Name)
	})
	for i, sv := range t.Services {
		if len(t.Layers) == 0 || t.Services[t.Layers[len(t.Layers)-1][0]].Depth != sv.Depth {
			t.Layers = append(t.Layers, nil)
		}
		t.Layers[len(t.Layers)-1] = append(t.Layers[len(t.Layers)-1], i)
	}
	return t, nil
}

// callDepths returns the longest call path from the clients ("" callers)
// to each service, over the edges of routes (a call graph is acyclic).
func callDepths(routes []metrics.RouteStats) map[string]int {
	children := map[string][]string{}
	for _, r := range routes {
		if !slices.Contains(children[r.Caller], r.Service) {
			children[r.Caller] = append(children[r.Caller], r.Service)
		}
	}
	depth := map[string]int{}
	var walk func(name string, d int)
	walk = func(name string, d int) {
		for _, c := range children[name] {
			if d+1 > depth[c] || depth[c] == 0 {
				depth[c] = d + 1
				walk(c, d+1)
			}
		}
	}
	walk("", 0)
	return depth
}
