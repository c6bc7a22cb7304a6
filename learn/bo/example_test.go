package bo_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/bo"
)

// The ask/tell loop: minimise a cost over a CPU limit, a replica count and a
// cloud, subject to a latency bound written as c(x) = latency − 0.2 <= 0.
func Example() {
	space := []bo.Param{
		{Name: "cpu", Kind: bo.Continuous, Low: 0.25, High: 4},
		{Name: "replicas", Kind: bo.Integer, Low: 1, High: 8},
		{Name: "cloud", Kind: bo.Categorical, Categories: []string{"aws", "gcp"}},
	}
	evaluate := func(x []float64) (cost, latency float64) {
		speed := x[0] * x[1]
		if x[2] == 1 {
			speed *= 1.2 // gcp is faster here
		}
		return x[0] * x[1], 1 / speed
	}
	opt, err := bo.NewBayesOpt(bo.Config{Space: space, Constraints: 1}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	for range 30 {
		x, err := opt.Ask()
		if err != nil {
			panic(err)
		}
		cost, latency := evaluate(x)
		if err := opt.Tell(x, cost, []float64{latency - 0.2}); err != nil {
			panic(err)
		}
	}
	best, ok := opt.Best()
	// The optimum is cost 5/1.2 ≈ 4.17 on gcp (cpu·replicas = 1/(0.2·1.2)),
	// on the constraint boundary; 30 evaluations get within 10%.
	fmt.Println(ok, best.X[2] == 1, best.Y < 1.1*5/1.2)
	// Output: true true true
}
