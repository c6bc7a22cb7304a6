package main

import (
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/shoal-project/shoal/control/drpc"
)

func main() {
	f, _ := os.Open(os.Args[1])
	p, err := drpc.ReadPolicy(f)
	if err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	in := make([]float32, drpc.LocalFeatures)
	out := make([]float32, drpc.ActionDim)
	for i := range p.Deployments {
		pr := p.Student(i).NewPredictor()
		var sum [drpc.ActionDim]float64
		var mn, mx [drpc.ActionDim]float64
		for k := range mn {
			mn[k], mx[k] = 9, -9
		}
		for range 2000 {
			for k := range in {
				in[k] = float32(p.Low[k] + rng.Float64()*(p.High[k]-p.Low[k]))
			}
			pr.Predict(out, in)
			for k, v := range out {
				sum[k] += float64(v) / 2000
				mn[k], mx[k] = min(mn[k], float64(v)), max(mx[k], float64(v))
			}
		}
		if i < 8 {
			fmt.Printf("%-28s mean %.2f %.2f %.2f %.2f  repl [%.2f, %.2f]\n", p.Deployments[i].Name, sum[0], sum[1], sum[2], sum[3], mn[2], mx[2])
		}
	}
}
