package nn_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/nn"
)

// The training loop of the package documentation, fitting y = sum(x) on
// random inputs, then inference and a save/load round trip.
func Example() {
	rng := rand.New(rand.NewPCG(1, 0))
	net := nn.NewMLP[float32](rng, "q", []int{4, 32, 1}, nn.ReLU, nn.Identity)
	cfg := nn.DefaultAdam()
	cfg.LR = 3e-3
	opt := nn.NewAdam(net.Params(), cfg)
	var tp nn.Tape[float32]
	const batch = 64
	var loss float32
	for step := 0; step < 1500; step++ {
		tp.Reset()
		x := tp.Input(batch, 4)
		y := tp.Input(batch, 1)
		for i := 0; i < batch; i++ {
			var s float32
			for j := 0; j < 4; j++ {
				v := float32(rng.NormFloat64())
				x.Value.Set(i, j, v)
				s += v
			}
			y.Value.Data[i] = s
		}
		l := tp.MSE(net.Forward(&tp, x), y)
		opt.ZeroGrad()
		tp.Backward(l)
		nn.ClipGradNorm(net.Params(), 10)
		opt.Step()
		loss = l.Scalar()
	}
	fmt.Println("training MSE below 0.01:", loss < 0.01)

	p := net.NewPredictor()
	out := p.Predict(make([]float32, 1), []float32{0.5, -0.25, 1, 0.25})
	fmt.Printf("f(0.5, -0.25, 1, 0.25) ≈ %.1f\n", out[0])

	var file bytes.Buffer
	if err := nn.SaveModule[float32](&file, net); err != nil {
		panic(err)
	}
	other := nn.NewMLP[float32](rng, "q", []int{4, 16, 1}, nn.ReLU, nn.Identity)
	fmt.Println(nn.LoadModule[float32](bytes.NewReader(file.Bytes()), other))
	// Output:
	// training MSE below 0.01: true
	// f(0.5, -0.25, 1, 0.25) ≈ 1.5
	// nn: load: architecture mismatch: file has "mlp(4,32,1;relu;identity)", network is "mlp(4,16,1;relu;identity)"
}
