package forecast

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/nn"
)

// Config sets up a GRUForecaster and its training. A zero field takes the
// default given in its comment (DefaultConfig returns them all).
type Config struct {
	// Window is the number of past periods the GRU reads per forecast.
	// Default 24.
	Window int `json:"window"`
	// Hidden is the GRU's hidden-state width. Default 32.
	Hidden int `json:"hidden"`
	// Horizon is the number of future periods forecast at once. Default 5:
	// DRPC's Table 2 forecasts 5 to 25 minutes at its 5-minute scheduling
	// interval (section V-B).
	Horizon int `json:"horizon"`
	// Epochs is the number of passes over the training windows. Default 20.
	Epochs int `json:"epochs"`
	// Batch is the number of windows per Adam step. Default 64.
	Batch int `json:"batch"`
	// LR is Adam's step size. Default 1e-3.
	LR float64 `json:"lr"`
	// ClipNorm bounds the global gradient norm of each step. Default 1.
	ClipNorm float64 `json:"clip_norm"`
	// EpochWindows, when positive, caps the windows of one epoch at a random
	// subset of that size (redrawn every epoch), which bounds the cost of
	// an epoch on long series. Default 0: every window.
	EpochWindows int `json:"epoch_windows,omitempty"`
	// Validation, when positive, holds out the windows whose targets lie
	// in the last Validation fraction of the training series (less than
	// 0.5), measures their loss after every epoch and keeps the weights of
	// the best epoch, so Epochs is a cap rather than a setting to get
	// exactly right. Default 0: no hold-out, the weights of the last epoch.
	Validation float64 `json:"validation,omitempty"`
	// Log forecasts log(1+y) instead of y, which suits rates whose
	// variation grows with their level; the series must then be
	// non-negative and so are the forecasts. Default off.
	Log bool `json:"log,omitempty"`
}

// DefaultConfig returns the defaults of every field of Config.
func DefaultConfig() Config {
	return Config{Window: 24, Hidden: 32, Horizon: 5, Epochs: 20, Batch: 64, LR: 1e-3, ClipNorm: 1}
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	setDefault(&c.Window, d.Window)
	setDefault(&c.Hidden, d.Hidden)
	setDefault(&c.Horizon, d.Horizon)
	setDefault(&c.Epochs, d.Epochs)
	setDefault(&c.Batch, d.Batch)
	setDefault(&c.LR, d.LR)
	setDefault(&c.ClipNorm, d.ClipNorm)
	return c
}

func setDefault[T int | float64](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}

// Limits that keep a hostile file header from allocating without bound.
const (
	maxWidth  = 1 << 12
	maxParams = 1 << 22
)

// validate checks a Config after defaults, naming the offending field.
func (c Config) validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"window", c.Window}, {"hidden", c.Hidden}, {"horizon", c.Horizon}, {"batch", c.Batch}} {
		if f.v < 1 || f.v > maxWidth {
			return fmt.Errorf("%s: must be in [1, %d], got %d", f.name, maxWidth, f.v)
		}
	}
	switch {
	case c.Epochs < 1:
		return fmt.Errorf("epochs: must be >= 1, got %d", c.Epochs)
	case !(c.Validation >= 0 && c.Validation < 0.5):
		return fmt.Errorf("validation: must be in [0, 0.5), got %g", c.Validation)
	case c.EpochWindows < 0:
		return fmt.Errorf("epoch_windows: must be >= 0, got %d", c.EpochWindows)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("lr: must be positive and finite, got %g", c.LR)
	case !(c.ClipNorm > 0) || math.IsInf(c.ClipNorm, 0):
		return fmt.Errorf("clip_norm: must be positive and finite, got %g", c.ClipNorm)
	}
	return nil
}

// GRUForecaster is DRPC's Workload Predictor (section V-B): multivariate
// time-series forecasting cast as supervised learning, with a GRU as the
// predictor. A GRU reads the last Window periods of the Dims series,
// normalised, from a zero state; a linear head maps its last hidden state
// to all Horizon·Dims future values at once (direct multi-horizon output,
// so errors do not compound through fed-back forecasts).
//
// The head predicts the change from the newest observation in normalised
// units, not the level: its output starts near zero, so an untrained
// network is close to LastValue and training learns the correction.
//
// Predict reuses buffers and allocates nothing; it is not safe for
// concurrent use.
type GRUForecaster struct {
	cfg       Config
	dims      int
	mean, std []float64 // per series, of the (log-)values on the training data
	gru       *nn.GRU[float32]
	head      *nn.MLP[float32]

	trainWindows int     // windows trained on
	trainLoss    float64 // mean training loss of the kept epoch (normalised units)
	valLoss      float64 // validation loss of the kept epoch (0 without validation)
	epoch        int     // the kept epoch, from 1

	gp        *nn.GRUPredictor[float32]
	hp        *nn.MLPPredictor[float32]
	x, h, out []float32
}

// newGRUForecaster builds the networks for cfg (after defaults) and dims
// series, initialised from rng, and the inference buffers.
func newGRUForecaster(cfg Config, dims int, rng *rand.Rand) *GRUForecaster {
	f := &GRUForecaster{cfg: cfg, dims: dims,
		gru:  nn.NewGRU[float32](rng, "gru", dims, cfg.Hidden),
		head: nn.NewMLP[float32](rng, "head", []int{cfg.Hidden, cfg.Horizon * dims}, nn.Identity, nn.Identity)}
	f.gp = f.gru.NewPredictor()
	f.hp = f.head.NewPredictor()
	f.x = make([]float32, dims)
	f.h = make([]float32, cfg.Hidden)
	f.out = make([]float32, cfg.Horizon*dims)
	return f
}

// Clone returns a forecaster that shares f's trained weights, read only,
// with inference buffers of its own, for use on another goroutine.
func (f *GRUForecaster) Clone() *GRUForecaster {
	c := *f
	c.gp, c.hp = f.gru.NewPredictor(), f.head.NewPredictor()
	c.x, c.h, c.out = make([]float32, len(f.x)), make([]float32, len(f.h)), make([]float32, len(f.out))
	return &c
}

// params counts the parameters of a forecaster of cfg and dims series.
func params(cfg Config, dims int) int {
	return 3*cfg.Hidden*(dims+cfg.Hidden) + 6*cfg.Hidden + (cfg.Hidden+1)*cfg.Horizon*dims
}

// Fit trains a GRUForecaster on series (series[t][k]: period t, series k,
// every row the same width) with cfg, drawing the initial weights and the
// order of the training windows from rng; the same rng state gives the
// same forecaster, bit for bit, on a given machine and build.
//
// Every Window consecutive periods followed by Horizon periods are one
// sample (DRPC's supervised form of MTFS, section V-B). The normalisation
// (per-series mean and standard deviation of the values, or of log(1+y)
// with cfg.Log) is fitted on the training periods and kept in the model.
// Each epoch visits the training windows in a new random order (or a random
// subset of cfg.EpochWindows of them) in batches, minimising with Adam the
// mean squared error of all Horizon·Dims normalised outputs.
func Fit(series [][]float64, cfg Config, rng *rand.Rand) (*GRUForecaster, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("forecast: fit: config: %w", err)
	}
	if len(series) == 0 || len(series[0]) == 0 {
		return nil, errors.New("forecast: fit: empty series")
	}
	K, W, H := len(series[0]), cfg.Window, cfg.Horizon
	if K > maxWidth || params(cfg, K) > maxParams {
		return nil, fmt.Errorf("forecast: fit: %d series with hidden %d and horizon %d exceed the limit of %d parameters", K, cfg.Hidden, H, maxParams)
	}
	if err := checkSeries(series, K); err != nil {
		return nil, fmt.Errorf("forecast: fit: %w", err)
	}
	if cfg.Log {
		for t, row := range series {
			for k, v := range row {
				if v < 0 {
					return nil, fmt.Errorf("forecast: fit: log: period %d, series %d: value %g is negative", t, k, v)
				}
			}
		}
	}
	// Window s reads periods s..s+W-1 and predicts s+W..s+W+H-1. With
	// validation, training windows predict only periods before valStart and
	// validation windows only periods from valStart; the windows that
	// straddle it are left out, so no validation target is trained on.
	valStart := len(series)
	if cfg.Validation > 0 {
		valStart -= int(math.Round(cfg.Validation * float64(len(series))))
	}
	nTrain := valStart - W - H + 1
	var valWindows []int
	for s := max(valStart-W, 0); s+W+H <= len(series) && cfg.Validation > 0; s++ {
		valWindows = append(valWindows, s)
	}
	if nTrain < 1 || cfg.Validation > 0 && len(valWindows) == 0 {
		return nil, fmt.Errorf("forecast: fit: %d periods (%d for training) are too few for window %d + horizon %d", len(series), valStart, W, H)
	}

	f := newGRUForecaster(cfg, K, rng)
	f.trainWindows = nTrain
	f.fitScale(series[:valStart])
	z := make([]float32, len(series)*K) // the normalised series
	for t, row := range series {
		for k, v := range row {
			z[t*K+k] = float32(f.normalise(k, v))
		}
	}

	B := min(cfg.Batch, nTrain)
	perEpoch := nTrain
	if cfg.EpochWindows > 0 {
		perEpoch = min(nTrain, cfg.EpochWindows)
	}
	steps := max(1, perEpoch/B) // a partial last batch is dropped; shuffling reaches it in other epochs
	ps := append(f.gru.Params(), f.head.Params()...)
	ad := nn.DefaultAdam()
	ad.LR = cfg.LR
	opt := nn.NewAdam(ps, ad)
	order := make([]int, nTrain)
	for i := range order {
		order[i] = i
	}
	var best [][]float32 // the weights of the best validation epoch
	var tp nn.Tape[float32]
	for epoch := 1; epoch <= cfg.Epochs; epoch++ {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		var sum float64
		for s := 0; s < steps; s++ {
			loss := f.batchLoss(&tp, z, order[s*B:(s+1)*B])
			opt.ZeroGrad()
			tp.Backward(loss)
			nn.ClipGradNorm(ps, cfg.ClipNorm)
			opt.Step()
			sum += float64(loss.Scalar())
		}
		trainLoss := sum / float64(steps)
		if math.IsNaN(trainLoss) || math.IsInf(trainLoss, 0) {
			return nil, fmt.Errorf("forecast: fit: training diverged in epoch %d (loss %g); lower lr", epoch, trainLoss)
		}
		if cfg.Validation == 0 {
			f.trainLoss, f.epoch = trainLoss, epoch
			continue
		}
		var val float64
		for i := 0; i < len(valWindows); i += B {
			chunk := valWindows[i:min(i+B, len(valWindows))]
			val += float64(f.batchLoss(&tp, z, chunk).Scalar()) * float64(len(chunk))
		}
		val /= float64(len(valWindows))
		if best == nil || val < f.valLoss {
			f.trainLoss, f.valLoss, f.epoch = trainLoss, val, epoch
			if best == nil {
				best = make([][]float32, len(ps))
			}
			for i, p := range ps {
				best[i] = append(best[i][:0], p.Value.Data...)
			}
		}
	}
	for i, w := range best {
		copy(ps[i].Value.Data, w)
	}
	return f, nil
}

// batchLoss records on tp (after resetting it) the loss of the windows
// starting at starts: the mean squared error of the predicted changes from
// each window's newest period, over all horizons and series of z, the
// normalised series.
func (f *GRUForecaster) batchLoss(tp *nn.Tape[float32], z []float32, starts []int) *nn.Node[float32] {
	K, W, H, B := f.dims, f.cfg.Window, f.cfg.Horizon, len(starts)
	tp.Reset()
	x := tp.Input(W*B, K) // time-major: row j·B+b is step j of window b
	y := tp.Input(B, H*K)
	for b, s := range starts {
		for j := 0; j < W; j++ {
			copy(x.Value.Data[(j*B+b)*K:(j*B+b+1)*K], z[(s+j)*K:(s+j+1)*K])
		}
		last := z[(s+W-1)*K : (s+W)*K]
		for h := 0; h < H; h++ {
			fut := z[(s+W+h)*K : (s+W+h+1)*K]
			for k := range fut {
				y.Value.Data[(b*H+h)*K+k] = fut[k] - last[k]
			}
		}
	}
	return tp.MSE(f.head.Forward(tp, f.gru.UnrollMasked(tp, x, W, nil)), y)
}

// fitScale sets the per-series mean and standard deviation of the
// (log-)values of series. A constant series gets a scale of 1.
func (f *GRUForecaster) fitScale(series [][]float64) {
	K := f.dims
	f.mean, f.std = make([]float64, K), make([]float64, K)
	n := float64(len(series))
	for _, row := range series {
		for k, v := range row {
			f.mean[k] += f.transform(v) / n
		}
	}
	for _, row := range series {
		for k, v := range row {
			d := f.transform(v) - f.mean[k]
			f.std[k] += d * d / n
		}
	}
	for k, v := range f.std {
		f.std[k] = math.Sqrt(v)
		if !(f.std[k] > 1e-9*(1+math.Abs(f.mean[k]))) {
			f.std[k] = 1
		}
	}
}

func (f *GRUForecaster) transform(v float64) float64 {
	if f.cfg.Log {
		return math.Log1p(max(v, 0))
	}
	return v
}

func (f *GRUForecaster) normalise(k int, v float64) float64 {
	return (f.transform(v) - f.mean[k]) / f.std[k]
}

func (f *GRUForecaster) denormalise(k int, z float64) float64 {
	v := z*f.std[k] + f.mean[k]
	if f.cfg.Log {
		return max(math.Expm1(v), 0)
	}
	return v
}

// Dims implements Forecaster.
func (f *GRUForecaster) Dims() int { return f.dims }

// Horizon implements Forecaster.
func (f *GRUForecaster) Horizon() int { return f.cfg.Horizon }

// Window implements Forecaster.
func (f *GRUForecaster) Window() int { return f.cfg.Window }

// Config returns the configuration the forecaster was trained with, with
// defaults filled in.
func (f *GRUForecaster) Config() Config { return f.cfg }

// TrainLoss returns the mean training loss of the kept epoch: the mean
// squared error of the normalised changes the head predicts.
func (f *GRUForecaster) TrainLoss() float64 { return f.trainLoss }

// Epoch returns the epoch whose weights the forecaster kept (from 1; the
// last one without validation) and its validation loss (0 without
// validation).
func (f *GRUForecaster) Epoch() (epoch int, validationLoss float64) { return f.epoch, f.valLoss }

// Predict implements Forecaster: it runs the GRU over the last Window rows
// of recent from a zero state and the head on its final state. It
// allocates nothing.
func (f *GRUForecaster) Predict(dst []float64, recent [][]float64) {
	checkPredict(f, dst, recent)
	clear(f.h)
	for _, row := range recent[len(recent)-f.cfg.Window:] {
		for k, v := range row {
			f.x[k] = float32(f.normalise(k, v))
		}
		f.gp.Step(f.h, f.h, f.x)
	}
	f.hp.Predict(f.out, f.h)
	for i, d := range f.out { // f.x holds the newest normalised row
		k := i % f.dims
		dst[i] = f.denormalise(k, float64(f.x[k]+d))
	}
}
