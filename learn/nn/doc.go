// Package nn is Shoal's small neural-network library: dense row-major
// tensors over float32 (networks) or float64 (precise checks), reverse-mode
// automatic differentiation on a recycled Tape, layers (Linear, MLP, GRU,
// attention, batch and layer normalisation), losses, the distributions RL
// needs (tanh-squashed Gaussian), optimisers (Adam, RMSProp, SGD), target
// network updates, allocation-free inference paths, and a versioned binary
// parameter file format.
//
// Speed: float64 products go through gonum's blas64. On amd64 with AVX2 and
// FMA, float32 products use a packed GEMM with a 6×16 register-blocked
// kernel (sgemm*.go/.s), the GRU's float32 gate activations are computed
// four at a time in float64 and rounded (act32*.go/.s, within one ulp of
// math.Exp/math.Tanh), and Adam's float32 step is vectorised with results
// identical to its scalar loop. Elsewhere, or with the build tag noasm,
// gonum's blas32 and scalar Go are used. Results are deterministic for a
// given machine and build; the two paths agree to float32 rounding, not
// bit for bit.
//
// Shapes: every tensor is a matrix; a batch is one sample per row. Types are
// generic over Float; use float32 for networks (T is then float32 in every
// signature) and float64 where precision matters.
//
// Contents:
//   - Tape ops: Add, Sub, Mul, Min, Max (second operand broadcasts), Scale,
//     AddScalar, ReLU, LeakyReLU, ELU, Tanh, Sigmoid, Softplus, Exp, Log,
//     Abs, Square, Clip, MatMul, Linear, BatchVecMat, Concat, SliceCols, Sum,
//     Reshape, Transpose, RepeatRows, SumRowGroups, Mean, RowSum, ColSum, Softmax,
//     LogSoftmax, Gather, MSE, Huber,
//     SquashedGaussian, GaussianLogProb, LayerNorm, Attention.
//   - Layers (Module): Linear, MLP, GRU (Step, Unroll, and UnrollMasked
//     for a whole masked window as one op), BatchNorm, LayerNormLayer,
//     AttentionLayer; initialisers NewLinear (PyTorch default), Orthogonal.
//   - Optimisers (Optimizer): Adam, RMSProp, SGD; ZeroGrad, GradNorm,
//     ClipGradNorm; SoftUpdate (Polyak) and HardCopy for target networks.
//   - Inference without allocation: MLPPredictor, GRUPredictor.
//   - Files: Save, Load, SaveModule, LoadModule; errors wrap ErrMismatch or
//     ErrFormat.
//
// Training loop:
//
//	rng := rand.New(rand.NewPCG(seed, 0))
//	net := nn.NewMLP[float32](rng, "q", []int{16, 64, 64, 4}, nn.ReLU, nn.Identity)
//	opt := nn.NewAdam(net.Params(), nn.DefaultAdam())
//	var tp nn.Tape[float32]
//	for step := 0; step < steps; step++ {
//		tp.Reset()                       // recycles every buffer of the last step
//		x := tp.Input(batch, 16)         // fill x.Value.Data with the batch
//		y := tp.Input(batch, 4)          // and y.Value.Data with the targets
//		loss := tp.MSE(net.Forward(&tp, x), y)
//		opt.ZeroGrad()                   // parameter gradients accumulate until cleared
//		tp.Backward(loss)
//		nn.ClipGradNorm(net.Params(), 10)
//		opt.Step()
//	}
//
// Inference without allocation:
//
//	p := net.NewPredictor()
//	out := make([]float32, 4)
//	p.Predict(out, obs)
//
// Gradients stop at constants: Tape.Input, Tape.Const (Const(n.Value)
// detaches n). Parameter gradients accumulate across Backward calls, so an
// actor loss that flows through a critic leaves gradients in the critic that
// the critic's optimiser must clear (ZeroGrad) before its own update.
//
// Save and Load write and read parameters with the network's architecture
// string; loading into another architecture fails with an error naming the
// mismatch.
package nn
