package forecast

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shoal-project/shoal/learn/nn"
)

// waves returns n periods of two noisy series with a period of 24: a
// rising sinusoid and a cosine about a constant level.
func waves(n int, seed uint64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 0))
	s := make([][]float64, n)
	for i := range s {
		x := 2 * math.Pi * float64(i) / 24
		s[i] = []float64{
			10 + 0.01*float64(i) + 3*math.Sin(x) + 0.3*rng.NormFloat64(),
			5 + 2*math.Cos(x) + 0.3*rng.NormFloat64(),
		}
	}
	return s
}

// smallConfig trains in about a tenth of a second.
var smallConfig = Config{Window: 24, Hidden: 16, Horizon: 6, Epochs: 15, Batch: 32}

func fit(t *testing.T, series [][]float64, cfg Config, seed uint64) *GRUForecaster {
	t.Helper()
	f, err := Fit(series, cfg, rand.New(rand.NewPCG(seed, 0)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestGRULearnsWaves: on a noisy sinusoid with a trend the GRU must beat
// persistence by a wide margin beyond one period ahead (where the wave has
// moved on) and come near the noise floor (variance 0.09 per series).
func TestGRULearnsWaves(t *testing.T) {
	series := waves(1200, 1)
	f := fit(t, series[:900], smallConfig, 7)
	gru, err := Evaluate(f, series, 900, 0)
	if err != nil {
		t.Fatal(err)
	}
	last, err := Evaluate(NewLastValue(2, smallConfig.Horizon), series, 900, 0)
	if err != nil {
		t.Fatal(err)
	}
	for h := 1; h <= smallConfig.Horizon; h++ {
		t.Logf("%d ahead: MSE GRU %.3f, last value %.3f; MAPE %.2f%%, %.2f%%", h, gru.MSE(h), last.MSE(h), gru.MAPE(h), last.MAPE(h))
		if h > 1 && !(gru.MSE(h) < 0.3*last.MSE(h)) {
			t.Errorf("%d ahead: GRU MSE %.3f is not below 0.3 × last value's %.3f", h, gru.MSE(h), last.MSE(h))
		}
		if !(gru.MSE(h) < 0.5) {
			t.Errorf("%d ahead: GRU MSE %.3f, want < 0.5 (noise variance 0.09)", h, gru.MSE(h))
		}
	}
	// Learning, not luck: one epoch leaves a much larger training loss.
	one := smallConfig
	one.Epochs = 1
	if f1 := fit(t, series[:900], one, 7); !(f.TrainLoss() < 0.5*f1.TrainLoss()) {
		t.Errorf("training loss after %d epochs %.4f, after 1 %.4f; want at most half", smallConfig.Epochs, f.TrainLoss(), f1.TrainLoss())
	}
}

func predictAll(f Forecaster, series [][]float64, from int) []float64 {
	var out []float64
	dst := make([]float64, f.Horizon()*f.Dims())
	for t := from; t <= len(series); t++ {
		f.Predict(dst, series[:t])
		out = append(out, dst...)
	}
	return out
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

func TestFitDeterministic(t *testing.T) {
	series := waves(400, 2)
	cfg := smallConfig
	cfg.Epochs = 3
	a, b, c := fit(t, series, cfg, 11), fit(t, series, cfg, 11), fit(t, series, cfg, 12)
	pa, pb, pc := predictAll(a, series, 300), predictAll(b, series, 300), predictAll(c, series, 300)
	if !sameBits(pa, pb) {
		t.Error("two fits with the same seed predict differently")
	}
	if sameBits(pa, pc) {
		t.Error("fits with seeds 11 and 12 predict the same")
	}
	var wa, wb bytes.Buffer
	if err := a.Write(&wa); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(&wb); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(wa.Bytes(), wb.Bytes()) {
		t.Error("two fits with the same seed write different files")
	}
}

// TestValidationKeepsBestEpoch: with a hold-out the forecaster keeps the
// weights of its best validation epoch, which are exactly those of a run
// stopped at that epoch (the random draws of earlier epochs are the same).
func TestValidationKeepsBestEpoch(t *testing.T) {
	series := waves(500, 4)
	cfg := smallConfig
	cfg.Epochs, cfg.Validation = 12, 0.2
	f := fit(t, series, cfg, 5)
	epoch, val := f.Epoch()
	if epoch < 1 || epoch > cfg.Epochs || !(val > 0) {
		t.Fatalf("kept epoch %d with validation loss %g", epoch, val)
	}
	if want := len(series) - 100 - cfg.Window - cfg.Horizon + 1; f.trainWindows != want {
		t.Errorf("trained on %d windows, want %d (none with a target in the last 100 periods)", f.trainWindows, want)
	}
	cfg.Epochs = epoch
	g := fit(t, series, cfg, 5)
	if !sameBits(predictAll(f, series, 400), predictAll(g, series, 400)) {
		t.Errorf("kept epoch %d of %d differs from a run of %d epochs", epoch, 12, epoch)
	}
	if e, v := g.Epoch(); e != epoch || v != val {
		t.Errorf("run of %d epochs kept epoch %d, loss %g; want %d, %g", epoch, e, v, epoch, val)
	}
}

// fitOneEpoch is a forecaster of three waves fitted for one epoch, and
// the waves.
func fitOneEpoch(t *testing.T) (*GRUForecaster, [][]float64) {
	series := waves(200, 3)
	cfg := smallConfig
	cfg.Epochs = 1
	return fit(t, series, cfg, 1), series
}

func TestGRUPredictAllocatesNothing(t *testing.T) {
	f, series := fitOneEpoch(t)
	dst := make([]float64, f.Horizon()*f.Dims())
	if n := testing.AllocsPerRun(100, func() { f.Predict(dst, series) }); n != 0 {
		t.Errorf("Predict: %g allocations, want 0", n)
	}
}

// TestCloneForecastsAlike: clones share the weights and forecast as the
// original does, each on its own goroutine (go test -race checks that they
// share no buffer).
func TestCloneForecastsAlike(t *testing.T) {
	f, series := fitOneEpoch(t)
	want := make([]float64, f.Horizon()*f.Dims())
	f.Predict(want, series)
	var wg sync.WaitGroup
	got := make([][]float64, 4)
	for i := range got {
		c := f.Clone()
		got[i] = make([]float64, len(want))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				c.Predict(got[i], series)
			}
		}()
	}
	wg.Wait()
	for i := range got {
		if !slices.Equal(got[i], want) {
			t.Fatalf("clone %d forecast %v, the original %v", i, got[i], want)
		}
	}
}

func TestLogForecasts(t *testing.T) {
	series := waves(300, 5)
	for _, row := range series {
		row[1] -= 4 // down to about -1: a negative value
	}
	cfg := smallConfig
	cfg.Epochs, cfg.Log = 2, true
	if _, err := Fit(series, cfg, rand.New(rand.NewPCG(1, 0))); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("negative values with log: error %v", err)
	}
	for _, row := range series {
		row[1] = max(row[1], 0)
	}
	f := fit(t, series, cfg, 1)
	for i, v := range predictAll(f, series, cfg.Window) {
		if !(v >= 0) {
			t.Fatalf("forecast %d is %g; log forecasts are non-negative", i, v)
		}
	}
}

func TestFitRejects(t *testing.T) {
	good := waves(100, 1)
	for _, c := range []struct {
		name   string
		series [][]float64
		cfg    Config
		want   string
	}{
		{"empty", nil, smallConfig, "empty"},
		{"too short", good[:29], smallConfig, "too few"},
		{"ragged", append(append([][]float64{}, good[:50]...), []float64{1}), smallConfig, "has 1 values"},
		{"not finite", append([][]float64{{math.Inf(1), 0}}, good...), smallConfig, "not finite"},
		{"window", good, Config{Window: -1}, "window"},
		{"lr", good, Config{LR: math.NaN()}, "lr"},
		{"validation", good, Config{Validation: 0.5}, "validation"},
		{"validation leaves nothing", good, Config{Window: 61, Horizon: 10, Validation: 0.3}, "too few"},
		{"too large", good, Config{Hidden: 4000, Horizon: 4000}, "parameters"},
	} {
		_, err := Fit(c.series, c.cfg, rand.New(rand.NewPCG(1, 0)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

func TestFileRoundTrip(t *testing.T) {
	series := waves(300, 6)
	cfg := smallConfig
	cfg.Epochs, cfg.Log = 2, true
	f := fit(t, series, cfg, 3)
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	file := append([]byte(nil), buf.Bytes()...)
	g, err := ReadGRUForecaster(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if g.Config() != f.Config() || g.TrainLoss() != f.TrainLoss() {
		t.Errorf("read config %+v, loss %g; wrote %+v, %g", g.Config(), g.TrainLoss(), f.Config(), f.TrainLoss())
	}
	if !sameBits(predictAll(f, series, 200), predictAll(g, series, 200)) {
		t.Error("the read forecaster predicts differently")
	}
	var again bytes.Buffer
	if err := g.Write(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, again.Bytes()) {
		t.Error("writing the read forecaster gives other bytes")
	}

	// Embedded in a larger stream: a *bufio.Reader is read exactly up to
	// the forecaster's end, twice in a row.
	stream := bufio.NewReader(io.MultiReader(bytes.NewReader(file), bytes.NewReader(file), strings.NewReader("rest\n")))
	for i := 0; i < 2; i++ {
		if _, err := ReadGRUForecaster(stream); err != nil {
			t.Fatalf("embedded copy %d: %v", i, err)
		}
	}
	if rest, _ := io.ReadAll(stream); string(rest) != "rest\n" {
		t.Errorf("after two forecasters the stream holds %q, want %q", rest, "rest\n")
	}
}

func TestReadRejects(t *testing.T) {
	f := fit(t, waves(100, 1), Config{Window: 8, Hidden: 4, Horizon: 2, Epochs: 1}, 1)
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	file := buf.String()
	header, weights, _ := strings.Cut(file, "\n")
	edit := func(change func(*fileHeader)) string {
		var h fileHeader
		if err := json.Unmarshal([]byte(header), &h); err != nil {
			t.Fatal(err)
		}
		change(&h)
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	for _, c := range []struct {
		name, file, want string
		is               error
	}{
		{"not a forecaster", "hello\n", "header", nil},
		{"no header line", "{}", "header", nil},
		{"format", strings.Replace(header, FileFormat, "shoal-lb-policy", 1) + "\n" + weights, "format", nil},
		{"version", strings.Replace(header, `"version":1`, `"version":9`, 1) + "\n" + weights, "version", nil},
		{"unknown field", strings.Replace(header, `{`, `{"extra":1,`, 1) + "\n" + weights, "extra", nil},
		{"dims", strings.Replace(header, `"dims":2`, `"dims":3`, 1) + "\n" + weights, "mean, std", nil},
		{"std", edit(func(h *fileHeader) { h.Std[1] = -1 }) + weights, "std[1]", nil},
		{"mean", edit(func(h *fileHeader) { h.Mean = h.Mean[:1] }) + weights, "mean, std", nil},
		{"header not matching weights", strings.Replace(header, `"hidden":4`, `"hidden":5`, 1) + "\n" + weights, "weights", nil},
		{"config", strings.Replace(header, `"hidden":4`, `"hidden":0`, 1) + "\n" + weights, "config.hidden", nil},
		{"truncated", file[:len(file)-10], "weights", nn.ErrFormat},
	} {
		_, err := ReadGRUForecaster(strings.NewReader(c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) || c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	_, err := ReadGRUForecaster(strings.NewReader(strings.Replace(header, `"hidden":4`, `"hidden":5`, 1) + "\n" + weights))
	if !errors.Is(err, nn.ErrMismatch) {
		t.Errorf("header not matching weights: %v does not wrap nn.ErrMismatch", err)
	}
}
