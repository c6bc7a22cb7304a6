package experiment

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/envs/faasconfenv"
	"github.com/shoal-project/shoal/scenario"
)

// The Jolteon-like configurator, profiled on the warm-up's twenty random
// configurations of Sequential, finds a configuration cheaper than the
// workflow's own that meets the QoS when measured on seeds of its own.
func TestJolteonFindsACheaperConfiguration(t *testing.T) {
	if testing.Short() {
		t.Skip("profiles a workflow")
	}
	sc, err := scenario.Lookup("faas-sequential")
	if err != nil {
		t.Fatal(err)
	}
	for _, qos := range []string{"mean", "p99"} {
		q, _ := faasconf.ParseQoS(qos)
		hy, err := faasconfenv.New(sc, faasconfenv.Config{QoS: q})
		if err != nil {
			t.Fatal(err)
		}
		env, err := faasconfenv.New(sc, faasconfenv.Config{Space: hy.Space().HardwareOnly(), QoS: hy.QoS()})
		if err != nil {
			t.Fatal(err)
		}
		warm := FaaSConfStudy{Warm: 20}.warm(env, 1, 1)
		own, _ := env.Measure(1, env.Defaults(), rand.New(rand.NewPCG(9, 9)))
		start := time.Now()
		r := RunFaaSSession(env, 1, NewJolteonTuner(env, warm, 1), 8, rand.New(rand.NewPCG(7, 7)))
		took := time.Since(start)
		var prices []float64
		for _, m := range r.Measurements {
			prices = append(prices, m.Price)
		}
		t.Logf("%v: cheapest met %.3f $/h against the own %.3f; met %d of %d rounds in %v; prices %.3f", env.QoS(), r.Best, own.Price, r.Met, len(r.Measurements), took.Round(time.Millisecond), prices)
		if r.Best == 0 || r.Best >= own.Price {
			t.Errorf("%v: cheapest met %.3f $/h against the own configuration's %.3f", env.QoS(), r.Best, own.Price)
		}
	}
}
