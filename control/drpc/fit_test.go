package drpc

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
)

// TestFitRefusesOrDrops: a policy is checked against its world when it is
// loaded. Refusing names every mismatch; dropping takes brownout from a
// deployment that is not optional, narrows replica bounds to the world's,
// and leaves a deployment whose limits are outside the rails to the
// fallback, every period. A missing deployment cannot be dropped.
func TestFitRefusesOrDrops(t *testing.T) {
	world := []Service{{Name: "front", MinReplicas: 2, MaxReplicas: 6, CPU: 0.5}, {Name: "back", MaxReplicas: 10, CPU: 4}}
	p := testPolicy(t)
	p.Deployments[0].Optional = true
	_, err := p.Fit(world, false)
	var mm MismatchError
	if !errors.As(err, &mm) || !errors.Is(err, ErrMismatch) || len(mm) != 4 {
		t.Fatalf("refusing: %v", err)
	}
	for _, want := range []string{"front: the policy may brown it out, but it is not optional here", "front: max replicas 10, the world's 6",
		"front: min replicas 1, the world's 2", "back: CPU limit 4 outside the policy's [0.25, 2]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if p.Deployments[0].MaxReplicas != 10 || !p.Deployments[0].Optional {
		t.Fatal("refusing changed the policy")
	}
	dropped, err := p.Fit(world, true)
	if err != nil || len(dropped) != 4 {
		t.Fatalf("dropping: %v, %v", dropped, err)
	}
	if d := p.Deployments[0]; d.Optional || d.MaxReplicas != 6 || d.MinReplicas != 2 {
		t.Fatalf("front after dropping: %+v", d)
	}
	fb := &recorder{}
	c, err := NewController(p, Options{Fallback: []control.Controller{fb}})
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} {
		acts := c.Decide(at, testSnapshot(at, 100))
		if !c.Fallback("back") || c.Fallback("front") {
			t.Fatalf("at %v: back in fallback %v, front %v", at, c.Fallback("back"), c.Fallback("front"))
		}
		for _, a := range acts {
			if r, ok := a.(control.SetReplicas); ok && r.Replicas == 7 && r.Service != "back" {
				t.Errorf("at %v: the fallback acted for %s", at, r.Service)
			}
		}
	}
	if _, err := p.Fit(world[:1], true); err == nil || !strings.Contains(err.Error(), "back: not a service of this world") {
		t.Fatalf("a world without back: %v", err)
	}
}

// TestHoldKeepsACalmDeploymentFromGrowing: with no reason to grow, the
// replicas, CPU and memory components may only hold or shrink (brownout
// is left alone); demand or CPU above High, errors, a response time above
// RT_max or a forecast rise each lift the hold.
func TestHoldKeepsACalmDeploymentFromGrowing(t *testing.T) {
	h := Hold{High: 0.75}
	d := Deployment{RTMax: Duration(100 * time.Millisecond)}
	calm := make([]float64, LocalFeatures)
	calm[fDemand], calm[fCPUUtil], calm[fLatency] = 0.5, 0.6, math.Log1p(40)
	a := []float64{0.9, 0.8, 1, 1}
	h.Apply(a, calm, &d)
	if !slices.Equal(a, []float64{0, 0, 0, 1}) {
		t.Fatalf("calm: %v, want growth clipped and brownout kept", a)
	}
	a = []float64{-0.9, -1, -0.7, 0}
	h.Apply(a, calm, &d)
	if !slices.Equal(a, []float64{-0.9, -1, -0.7, 0}) {
		t.Fatalf("calm, shrinking: %v", a)
	}
	for name, set := range map[string]func(f []float64){
		"demand": func(f []float64) { f[fDemand] = 0.8 }, "cpu": func(f []float64) { f[fCPUUtil] = 0.9 },
		"errors": func(f []float64) { f[fErrors] = 0.01 }, "slow": func(f []float64) { f[fLatency] = math.Log1p(150) },
		"forecast": func(f []float64) { f[fForecast] = math.Log(1.2) },
	} {
		f := slices.Clone(calm)
		set(f)
		a := []float64{0.9, 0.8, 1, 1}
		h.Apply(a, f, &d)
		if !slices.Equal(a, []float64{0.9, 0.8, 1, 1}) {
			t.Errorf("%s: %v, want the action as it was", name, a)
		}
	}
}
