package edgesched

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/learn/nn"
)

func nets(t *testing.T, n int, head nn.Activation) []*nn.MLP[float32] {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var out []*nn.MLP[float32]
	for i := range n {
		out = append(out, nn.NewMLP[float32](rng, "pi"+string(rune('a'+i)), []int{4, 8, 3}, nn.ReLU, head))
	}
	return out
}

// TestActAndRoundTrip: actions are the networks' outputs mapped into [0,
// 1] by the file's head, and a policy read back acts exactly as written.
func TestActAndRoundTrip(t *testing.T) {
	for _, c := range []struct {
		output string
		head   nn.Activation
		want   func(y float32) float64
	}{
		{OutputLinear, nn.Identity, func(y float32) float64 { return min(max(float64(y), 0), 1) }},
		{OutputTanh, nn.Tanh, func(y float32) float64 { return (float64(y) + 1) / 2 }},
	} {
		ns := nets(t, 2, c.head)
		p, err := New(Policy{Method: "test", Agents: 2, ObsDim: 4, ActDim: 3, Hidden: []int{8}, Output: c.output, Provenance: Provenance{Seed: 7}}, ns)
		if err != nil {
			t.Fatal(err)
		}
		obs := []float64{0.5, -1, 2, 0.1}
		for a := range 2 {
			y := ns[a].NewPredictor().Predict(nil, []float32{0.5, -1, 2, 0.1})
			got := p.Act(a, obs, nil)
			for j := range y {
				if diff := got[j] - c.want(y[j]); diff > 1e-6 || diff < -1e-6 {
					t.Errorf("%s agent %d action %d: %g, want %g", c.output, a, j, got[j], c.want(y[j]))
				}
			}
		}
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			t.Fatal(err)
		}
		q, err := Read(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if q.Method != "test" || q.Provenance.Seed != 7 {
			t.Errorf("header read back as %+v", q)
		}
		for a := range 2 {
			if w, g := p.Act(a, obs, nil), q.Act(a, obs, nil); !slices.Equal(w, g) {
				t.Errorf("%s agent %d: read back acts %v, written %v", c.output, a, g, w)
			}
		}
	}
}

// TestRefusesWhatDoesNotFit names the field at fault.
func TestRefusesWhatDoesNotFit(t *testing.T) {
	ok := Policy{Method: "test", Agents: 2, ObsDim: 4, ActDim: 3, Hidden: []int{8}, Output: OutputLinear}
	for _, c := range []struct {
		change func(*Policy)
		nets   int
		want   string
	}{
		{func(p *Policy) { p.Output = "softmax" }, 2, "output"},
		{func(p *Policy) { p.Hidden = nil }, 2, "hidden"},
		{func(p *Policy) { p.ObsDim = 5 }, 2, "is 4x8, want 5x8"},
		{func(p *Policy) {}, 1, "1 networks for 2 agents"},
	} {
		h := ok
		c.change(&h)
		_, err := New(h, nets(t, c.nets, nn.Identity))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error with %q, got %v", c.want, err)
		}
	}
	if _, err := Read(strings.NewReader(`{"format":"shoal-lb-policy"}` + "\n")); err == nil {
		t.Error("another format: no error")
	}
}
