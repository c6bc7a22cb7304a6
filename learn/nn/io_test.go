package nn

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// bnNet is a small composite module used to test saving non-trainable state.
type bnNet struct {
	mlp *MLP[float32]
	bn  *BatchNorm[float32]
}

func newBNNet(seed uint64, sizes []int) *bnNet {
	rng := rand.New(rand.NewPCG(seed, 1))
	return &bnNet{mlp: NewMLP[float32](rng, "mlp", sizes, ReLU, Identity), bn: NewBatchNorm[float32]("bn", sizes[0])}
}

func (n *bnNet) Params() []*Node[float32] { return append(n.bn.Params(), n.mlp.Params()...) }
func (n *bnNet) State() []*Node[float32]  { return append(n.bn.State(), n.mlp.State()...) }
func (n *bnNet) Arch() string             { return n.bn.Arch() + "+" + n.mlp.Arch() }

func TestSaveLoadRoundTrip(t *testing.T) {
	src := newBNNet(1, []int{4, 8, 2})
	// Give the running statistics non-default values.
	var tp Tape[float32]
	x := tp.Input(6, 4)
	for i := range x.Value.Data {
		x.Value.Data[i] = float32(i%5) - 1.5
	}
	src.bn.Forward(&tp, x, true)
	var buf bytes.Buffer
	if err := SaveModule[float32](&buf, src); err != nil {
		t.Fatal(err)
	}
	dst := newBNNet(2, []int{4, 8, 2})
	if err := LoadModule[float32](bytes.NewReader(buf.Bytes()), dst); err != nil {
		t.Fatal(err)
	}
	ss, ds := src.State(), dst.State()
	for i := range ss {
		if !equalSlices(ss[i].Value.Data, ds[i].Value.Data) {
			t.Errorf("tensor %q differs after round trip", ss[i].Name)
		}
	}
	if dst.bn.RunMean.Value.Data[1] == 0 {
		t.Errorf("running mean not restored")
	}
	// A float32 file loads into a float64 network of the same architecture.
	rng := rand.New(rand.NewPCG(3, 3))
	m64 := NewMLP[float64](rng, "mlp", []int{4, 8, 2}, ReLU, Identity)
	if err := Load(bytes.NewReader(buf.Bytes()[0:0]), m64.Arch(), m64.Params()); !errors.Is(err, ErrFormat) {
		t.Errorf("empty file: got %v, want ErrFormat", err)
	}
	var b32 bytes.Buffer
	if err := SaveModule[float32](&b32, src.mlp); err != nil {
		t.Fatal(err)
	}
	if err := LoadModule[float64](&b32, m64); err != nil {
		t.Fatal(err)
	}
	if got, want := m64.Layers[1].W.Value.Data[3], float64(src.mlp.Layers[1].W.Value.Data[3]); got != want {
		t.Errorf("float32→float64 load: got %v, want %v", got, want)
	}
}

func equalSlices[T Float](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLoadErrors(t *testing.T) {
	src := newBNNet(1, []int{4, 8, 2})
	var buf bytes.Buffer
	if err := SaveModule[float32](&buf, src); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-10] ^= 0x40
	badVersion := append([]byte(nil), good...)
	badVersion[8] = 9
	renamed := newBNNet(1, []int{4, 8, 2})
	renamed.mlp.Layers[0].W.Name = "other.W"
	tests := []struct {
		name    string
		data    []byte
		into    *bnNet
		is      error
		wantSub []string
	}{
		{"other sizes", good, newBNNet(1, []int{4, 16, 2}), ErrMismatch, []string{"architecture mismatch", "mlp(4,8,2;relu;identity)", "mlp(4,16,2;relu;identity)"}},
		{"other tensor name", good, renamed, ErrMismatch, []string{"tensor 4", `"mlp.0.W" 4x8 in the file`, `"other.W" 4x8 in the network`}},
		{"corrupt byte", corrupt, newBNNet(1, []int{4, 8, 2}), ErrFormat, []string{"checksum"}},
		{"truncated", good[:len(good)-7], newBNNet(1, []int{4, 8, 2}), ErrFormat, []string{"truncated"}},
		{"bad magic", append([]byte("GARBAGE!"), good[8:]...), newBNNet(1, []int{4, 8, 2}), ErrFormat, []string{"bad magic"}},
		{"bad version", badVersion, newBNNet(1, []int{4, 8, 2}), ErrFormat, []string{"unsupported version 9"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]float32(nil), tc.into.mlp.Layers[0].W.Value.Data...)
			err := LoadModule[float32](bytes.NewReader(tc.data), tc.into)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("error %v does not wrap %v", err, tc.is)
			}
			for _, s := range tc.wantSub {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			if !equalSlices(before, tc.into.mlp.Layers[0].W.Value.Data) {
				t.Errorf("failed Load modified the network")
			}
		})
	}
}

func FuzzLoad(f *testing.F) {
	src := newBNNet(1, []int{2, 3, 1})
	var buf bytes.Buffer
	if err := SaveModule[float32](&buf, src); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(fileMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		dst := newBNNet(2, []int{2, 3, 1})
		if err := LoadModule[float32](bytes.NewReader(data), dst); err == nil {
			// Whatever loaded must save back to the same bytes.
			var out bytes.Buffer
			if err := SaveModule[float32](&out, dst); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), data[:out.Len()]) {
				t.Fatalf("loaded file does not round-trip")
			}
		}
	})
}
