package lbenv

import (
	"math/rand/v2"
	"testing"

	"github.com/shoal-project/shoal/control/lb"
)

// An untrained general policy, whose network outputs 0, is probing-sed
// exactly: the same mean and p99 on the same worlds.
func TestUntrainedGeneralIsProbingSED(t *testing.T) {
	f := DefaultFamily()
	f.Requests = 3000
	rng := rand.New(rand.NewPCG(3, 5))
	pol, err := lb.NewGeneralPolicy([]int{8}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		sc, err := f.Draw(rng, i)
		if err != nil {
			t.Fatal(err)
		}
		m0, p0, err := RunGeneral(sc, nil)
		if err != nil {
			t.Fatal(err)
		}
		m1, p1, err := RunGeneral(sc, pol)
		if err != nil {
			t.Fatal(err)
		}
		if m0 != m1 || p0 != p1 {
			t.Errorf("world %d: probing-sed %g/%g, untrained general %g/%g", i, m0, p0, m1, p1)
		}
	}
}
