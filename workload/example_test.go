package workload_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/workload"
	"go.yaml.in/yaml/v3"
)

// A source decoded strictly from YAML, validated with its field path, built against a shared
// trace catalog, and driven from time 0.
func Example() {
	src := []byte("{kind: trace, trace: azure-llm, speedup: 2}")
	var spec workload.ProcessSpec
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&spec); err != nil {
		panic(err)
	}
	if err := spec.Validate("sources[0].arrivals"); err != nil {
		panic(err)
	}
	traces := workload.NewTraces("")
	p, err := spec.BuildWith(0, traces)
	if err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var at time.Duration
	for range 3 {
		at, _ = p.Next(at, rng)
		fmt.Println(at)
	}
	fmt.Printf("%.2f req/s\n", p.MeanRate())
	// Output:
	// 0s
	// 2.1572895s
	// 2.2709385s
	// 11.06 req/s
}

func ExampleProcessSpec_Validate() {
	spec := workload.ProcessSpec{Kind: "poisson", Rate: -1}
	fmt.Println(spec.Validate("sources[0].arrivals"))
	// Output: sources[0].arrivals.rate: must be > 0, got -1
}

func ExampleNewLogNormal() {
	d, _ := workload.NewLogNormal(0.010, 2) // mean 10 ms, standard deviation 20 ms
	mu, sigma := d.Params()
	fmt.Printf("mu=%.4f sigma=%.4f mean=%.3f\n", mu, sigma, d.Mean())
	// Output: mu=-5.4099 sigma=1.2686 mean=0.010
}
