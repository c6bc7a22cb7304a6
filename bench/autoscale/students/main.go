// Command students prints what a DRPC policy's students do over the input
// range they were trained on: each deployment's mean action (CPU, memory,
// replicas, brownout) over inputs drawn uniformly from the policy's Low and
// High bounds, and the share of draws whose replicas action is above 0.5:
// where it acts (Algorithm 2's threshold), or, over the HPA
// (drpc.OverHPA), where it puts the HPA's target below 0.71 times its own.
// Uniform draws are not the states a cluster visits; they show the shape
// of what was learned.
//
//	go run ./bench/autoscale/students FILE
package main

import (
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/shoal-project/shoal/control/drpc"
)

const draws = 2000 // per deployment, seeded

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: students FILE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	p, err := drpc.ReadPolicy(f)
	f.Close()
	if err != nil || p.Low == nil {
		fmt.Fprintln(os.Stderr, "students:", err, "(or no trained range)")
		os.Exit(1)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	in, out := make([]float32, drpc.LocalFeatures), make([]float32, drpc.ActionDim)
	above := 0
	fmt.Println("deployment                        cpu  memory replicas brownout")
	for i, d := range p.Deployments {
		pr := p.Student(i).NewPredictor()
		var mean [drpc.ActionDim]float64
		for range draws {
			for k := range in {
				in[k] = float32(p.Low[k] + rng.Float64()*(p.High[k]-p.Low[k]))
			}
			pr.Predict(out, in)
			for k, v := range out {
				mean[k] += float64(v) / draws
			}
			if out[2] > 0.5 {
				above++
			}
		}
		fmt.Printf("%-32s %5.2f %6.2f %8.2f %8.2f\n", d.Name, mean[0], mean[1], mean[2], mean[3])
	}
	n := draws * len(p.Deployments)
	fmt.Printf("replicas action above 0.5 in %d of %d draws (%.1f%%)\n", above, n, 100*float64(above)/float64(n))
}
