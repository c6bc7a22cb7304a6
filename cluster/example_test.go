package cluster_test

import (
	"fmt"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/workload"
)

// An M/M/1 processor-sharing server at load 0.8 driven in control periods,
// with an action halfway (a second replica).
func Example() {
	cfg := cluster.Config{
		Services: []cluster.Service{{Name: "web", MaxReplicas: 2}},
		Classes: []cluster.Class{{Name: "get", Call: cluster.Call{Service: "web",
			CPU: workload.DistSpec{Dist: "exp", Mean: 0.1}}}},
		Sources: []cluster.Source{{Name: "users", Class: "get",
			Arrivals: workload.ProcessSpec{Kind: "poisson", Rate: 8}}},
	}
	const horizon = 2000 * time.Second
	cl, err := cluster.New(&cfg, cluster.Options{Seed: 1, Horizon: horizon})
	if err != nil {
		fmt.Println(err)
		return
	}
	var snap metrics.Snapshot
	for t := 100 * time.Second; t <= horizon; t += 100 * time.Second {
		cl.RunUntil(t)
		cl.Observe(&snap)
		if t == horizon/2 {
			if err := cl.Apply(t, control.SetReplicas{Service: "web", Replicas: 2}); err != nil {
				fmt.Println(err)
			}
		}
	}
	cl.Drain(time.Hour)
	r := cl.Results()
	fmt.Printf("replicas at the end: %d\n", snap.Services[0].Replicas)
	fmt.Printf("all served: %v, little's law holds: %v\n", r.Completed == r.Arrivals, r.Little.OK())
	// Output:
	// replicas at the end: 2
	// all served: true, little's law holds: true
}
