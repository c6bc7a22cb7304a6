package nn

import (
	"strings"
	"testing"
)

// TestProgrammerErrorsPanic checks that shape and usage errors panic with
// a message naming the problem.
func TestProgrammerErrorsPanic(t *testing.T) {
	var other Tape[float64]
	foreign := other.Input(2, 2)
	tests := []struct {
		name string
		f    func(t *Tape[float64])
		want string
	}{
		{"Backward of a non-scalar", func(t *Tape[float64]) { t.Backward(t.Tanh(t.Input(2, 2))) }, "want a 1x1 loss"},
		{"Add bad broadcast", func(t *Tape[float64]) { t.Add(t.Input(2, 3), t.Input(2, 2)) }, "cannot broadcast 2x2 to 2x3"},
		{"MatMul shapes", func(t *Tape[float64]) { t.MatMul(t.Input(2, 3), t.Input(2, 3)) }, "MatMul: 2x3 times 2x3"},
		{"input from another tape", func(t *Tape[float64]) { t.Tanh(foreign) }, "another tape"},
		{"MSE shapes", func(t *Tape[float64]) { t.MSE(t.Input(2, 1), t.Input(1, 2)) }, "MSE: shapes 2x1 and 1x2 differ"},
		{"Gather index", func(t *Tape[float64]) { t.Gather(t.Input(1, 2), []int{2}) }, "index 2 out of range"},
		{"Clip bounds", func(t *Tape[float64]) { t.Clip(t.Input(1, 1), 1, 0) }, "lo=1 > hi=0"},
		{"Attention groups", func(t *Tape[float64]) {
			t.Attention(t.Input(3, 2), t.Input(4, 2), t.Input(4, 2), 2, Tensor[float64]{}, NoMask)
		}, "2 groups"},
		{"BatchNorm one row", func(t *Tape[float64]) { NewBatchNorm[float64]("b", 2).Forward(t, t.Input(1, 2), true) }, "at least 2 rows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("no panic")
				}
				if msg, _ := r.(string); !strings.Contains(msg, tc.want) {
					t.Fatalf("panic %q does not mention %q", r, tc.want)
				}
			}()
			var tp Tape[float64]
			tc.f(&tp)
		})
	}
}
