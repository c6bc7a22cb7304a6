package forecast

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// spikes returns n periods of a level of 10 with noise and a burst to 40
// every period periods: only a window that reaches back to the last burst
// knows when the next one comes.
func spikes(n, period int, seed uint64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 0))
	s := make([][]float64, n)
	for i := range s {
		v := 10 + 0.3*rng.NormFloat64()
		if i%period == 0 {
			v = 40 + 0.3*rng.NormFloat64()
		}
		s[i] = []float64{v}
	}
	return s
}

// TestSelectPicksTheBetterCandidate: bursts every 12 periods are
// predictable with a window of 16 and not with one of 3, so the long
// window must win on validation wherever it is in the list, by a wide
// margin, and come back refitted on the whole series.
func TestSelectPicksTheBetterCandidate(t *testing.T) {
	series := spikes(600, 12, 1)
	short := Config{Window: 3, Hidden: 16, Horizon: 4, Epochs: 60, Batch: 32, LR: 1e-2}
	long := short
	long.Window = 16
	for _, c := range []struct {
		candidates []Config
		best       int
	}{{[]Config{short, long}, 1}, {[]Config{long, short}, 0}} {
		sel, err := Select(series, c.candidates, 0.25, rand.New(rand.NewPCG(1, 0)))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("validation MAPE %d ahead: %.2f%% (window %d), %.2f%% (window %d); chose %d",
			sel.ScoreHorizon, sel.MAPE[0], c.candidates[0].Window, sel.MAPE[1], c.candidates[1].Window, sel.Best)
		if sel.ScoreHorizon != 2 || sel.ValidationStart != 450 {
			t.Errorf("scored %d ahead from period %d, want 2 and 450", sel.ScoreHorizon, sel.ValidationStart)
		}
		if sel.Best != c.best {
			t.Fatalf("chose candidate %d (window %d), want %d (window 16)", sel.Best, c.candidates[sel.Best].Window, c.best)
		}
		if other := sel.MAPE[1-c.best]; !(sel.MAPE[c.best] < 0.5*other) {
			t.Errorf("window 16 scored %.2f%%, window 3 %.2f%%: want less than half", sel.MAPE[c.best], other)
		}
		f := sel.Forecaster
		if f.Config() != long.withDefaults() {
			t.Errorf("refitted config %+v, want %+v", f.Config(), long.withDefaults())
		}
		if want := len(series) - long.Window - long.Horizon + 1; f.trainWindows != want {
			t.Errorf("refit trained on %d windows, want %d (the whole series)", f.trainWindows, want)
		}
	}
}

func TestSelectRejects(t *testing.T) {
	series := spikes(200, 12, 1)
	small := Config{Window: 4, Hidden: 4, Horizon: 2, Epochs: 1}
	for _, c := range []struct {
		name       string
		candidates []Config
		frac       float64
		want       string
	}{
		{"no candidates", nil, 0.2, "no candidates"},
		{"fraction", []Config{small}, 0.5, "fraction"},
		{"zero fraction", []Config{small}, 0, "fraction"},
		{"horizons", []Config{small, {Window: 4, Hidden: 4, Horizon: 3, Epochs: 1}}, 0.2, "horizon"},
		{"unfittable", []Config{small, {Window: 190, Horizon: 2, Epochs: 1}}, 0.2, "candidate 1"},
	} {
		_, err := Select(series, c.candidates, c.frac, rand.New(rand.NewPCG(1, 0)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	if _, err := Select(series[:1], []Config{small}, 0.2, rand.New(rand.NewPCG(1, 0))); err == nil {
		t.Error("one period: no error")
	}
}
