package rl

import (
	"math/rand/v2"
	"testing"

	"github.com/shoal-project/shoal/learn/nn"
)

// TestBCOnTrainsTheGivenNetwork: NewBCOn fits the network it is given (a
// deployed student), and refuses one of another shape.
func TestBCOnTrainsTheGivenNetwork(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	spec := Spec{Observation: UniformBox(2, -1, 1), Action: UniformBox(1, -1, 1)}
	net := nn.NewMLP[float32](rng, "student", []int{2, 8, 1}, nn.ReLU, nn.Tanh)
	cfg := DefaultBCConfig()
	cfg.Hidden, cfg.Epochs = []int{8}, 2000
	b, err := NewBCOn(spec, cfg, net, rng)
	if err != nil {
		t.Fatal(err)
	}
	var obs, act [][]float64
	for i := range 64 {
		x := float64(i)/32 - 1
		obs, act = append(obs, []float64{x, -x}), append(act, []float64{0.5 * x})
	}
	loss, err := b.Fit(obs, act)
	if err != nil {
		t.Fatal(err)
	}
	out := net.NewPredictor().Predict(make([]float32, 1), []float32{0.5, -0.5})
	if loss > 1e-3 || out[0] < 0.2 || out[0] > 0.3 {
		t.Errorf("loss %v, net(0.5, -0.5) = %v, want about 0.25: the given network was not trained", loss, out[0])
	}
	if _, err := NewBCOn(spec, cfg, nn.NewMLP[float32](rng, "x", []int{3, 8, 1}, nn.ReLU, nn.Tanh), rng); err == nil {
		t.Error("a network of another shape was accepted")
	}
}
