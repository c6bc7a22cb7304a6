package forecast

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/nn"
)

// FileFormat names Shoal's forecaster files in their header.
const FileFormat = "shoal-forecast"

// fileVersion is the file version this build writes and reads.
const fileVersion = 1

// A forecaster file is a learn/modelfile: one JSON header line
// (fileHeader) followed by one learn/nn parameter file holding the GRU and
// the head under an architecture string derived from the header, so a
// header that does not match its weights is refused.
type fileHeader struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	Dims    int    `json:"dims"`
	Config  Config `json:"config"`
	// Mean and Std normalise series k as (y−Mean[k])/Std[k], or
	// (log(1+y)−Mean[k])/Std[k] with Config.Log.
	Mean []float64 `json:"mean"`
	Std  []float64 `json:"std"`
	// TrainWindows, Epoch, TrainLoss and ValidationLoss record the
	// training run: the windows trained on, the epoch kept and its losses.
	TrainWindows   int     `json:"train_windows"`
	Epoch          int     `json:"epoch"`
	TrainLoss      float64 `json:"train_loss"`
	ValidationLoss float64 `json:"validation_loss,omitempty"`
}

func (f *GRUForecaster) arch() string {
	return fmt.Sprintf("%s/v%d %s %s", FileFormat, fileVersion, f.gru.Arch(), f.head.Arch())
}

func (f *GRUForecaster) state() []*nn.Node[float32] {
	return append(f.gru.State(), f.head.State()...)
}

// Write writes the forecaster file: the header line with the configuration
// and normalisation, then the network weights.
func (f *GRUForecaster) Write(w io.Writer) error {
	if err := modelfile.WriteHeader(w, fileHeader{Format: FileFormat, Version: fileVersion, Dims: f.dims, Config: f.cfg,
		Mean: f.mean, Std: f.std, TrainWindows: f.trainWindows, Epoch: f.epoch, TrainLoss: f.trainLoss, ValidationLoss: f.valLoss}); err != nil {
		return fmt.Errorf("forecast: write: %w", err)
	}
	if err := nn.Save(w, f.arch(), f.state()); err != nil {
		return fmt.Errorf("forecast: write: %w", err)
	}
	return nil
}

// ReadGRUForecaster reads a file written by Write, checking its header and
// that its weights match it. Given a *bufio.Reader (of the default size or
// larger) it reads exactly the forecaster's bytes, so a forecaster can be
// embedded in a larger file, such as a controller's policy file, and what
// follows it read from the same reader.
func ReadGRUForecaster(r io.Reader) (*GRUForecaster, error) {
	var hd fileHeader
	br, err := modelfile.ReadHeader(r, &hd, FileFormat)
	if err != nil {
		return nil, fmt.Errorf("forecast: read: %w", err)
	}
	if err := hd.validate(); err != nil {
		return nil, fmt.Errorf("forecast: read: header: %w", err)
	}
	// The weights are overwritten by Load; the source only shapes them.
	f := newGRUForecaster(hd.Config, hd.Dims, rand.New(rand.NewPCG(0, 0)))
	f.mean, f.std = hd.Mean, hd.Std
	f.trainWindows, f.epoch, f.trainLoss, f.valLoss = hd.TrainWindows, hd.Epoch, hd.TrainLoss, hd.ValidationLoss
	if err := nn.Load(br, f.arch(), f.state()); err != nil {
		return nil, fmt.Errorf("forecast: read: weights: %w", err)
	}
	return f, nil
}

func (h *fileHeader) validate() error {
	switch {
	case h.Format != FileFormat:
		return fmt.Errorf("format: %q is not a %s file", h.Format, FileFormat)
	case h.Version != fileVersion:
		return fmt.Errorf("version: %d, this build reads %d", h.Version, fileVersion)
	case h.Dims < 1 || h.Dims > maxWidth:
		return fmt.Errorf("dims: must be in [1, %d], got %d", maxWidth, h.Dims)
	case len(h.Mean) != h.Dims || len(h.Std) != h.Dims:
		return fmt.Errorf("mean, std: lengths %d and %d, want dims %d", len(h.Mean), len(h.Std), h.Dims)
	}
	// Defaults are filled when training, so a file must carry every field.
	if err := h.Config.validate(); err != nil {
		return fmt.Errorf("config.%w", err)
	}
	if n := params(h.Config, h.Dims); n > maxParams {
		return fmt.Errorf("network of %d parameters exceeds the limit of %d", n, maxParams)
	}
	for k := range h.Mean {
		if math.IsNaN(h.Mean[k]) || math.IsInf(h.Mean[k], 0) {
			return fmt.Errorf("mean[%d]: must be finite, got %g", k, h.Mean[k])
		}
		if !(h.Std[k] > 0) || math.IsInf(h.Std[k], 0) {
			return fmt.Errorf("std[%d]: must be positive and finite, got %g", k, h.Std[k])
		}
	}
	return nil
}
