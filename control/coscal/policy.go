package coscal

import (
	"errors"
	"fmt"
	"io"

	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/learn/forecast"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/rl"
)

// PolicyFormat names CoScal policy files in their header.
const PolicyFormat = "shoal-coscal-policy"

const policyVersion = 1

// A policy file is one JSON header line holding the Q-table, followed,
// when Forecaster is set, by the learn/forecast GRU forecaster file.

// Policy is a trained CoScal-like policy.
type Policy struct {
	Format    string `json:"format"`
	Version   int    `json:"version"`
	Algorithm string `json:"algorithm"` // "coscal"
	// Period is the control period the policy was trained with.
	Period      drpc.Duration     `json:"period"`
	Deployments []drpc.Deployment `json:"deployments"`
	Ingress     []string          `json:"ingress"`
	SLO         drpc.Duration     `json:"slo"`
	Steps       drpc.Steps        `json:"steps"`
	// TrendBand is the forecast ratio's band around 1 that counts as flat.
	TrendBand float64 `json:"trend_band"`
	// Table holds the Q-values every deployment consults, States x Actions,
	// row-major by action (rl.LinearQ's W over one-hot states).
	Table []float64 `json:"table"`
	// Forecaster is whether a GRU forecaster follows the header.
	Forecaster bool       `json:"forecaster"`
	Provenance Provenance `json:"provenance"`

	fc *forecast.GRUForecaster
}

// Provenance records a policy's training.
type Provenance struct {
	Scenario      string  `json:"scenario"`
	Seed          uint64  `json:"seed"`
	Episodes      int     `json:"episodes"`
	EnvSteps      int     `json:"env_steps"`
	WallSeconds   float64 `json:"wall_seconds"`
	ForecastMAPE  float64 `json:"forecast_mape"` // percent, at the forecast horizon, on held-out generated workloads
	Score         float64 `json:"score"`         // mean reward of the last (greedy) episode
	SLOViolations float64 `json:"slo_violations"`
}

// NewPolicy returns a policy with a zero Q-table and forecaster fc (may be nil).
func NewPolicy(p Policy, fc *forecast.GRUForecaster) (*Policy, error) {
	p.Format, p.Version, p.Algorithm = PolicyFormat, policyVersion, "coscal"
	p.Table = make([]float64, States*Actions)
	p.fc, p.Forecaster = fc, fc != nil
	if err := p.check(); err != nil {
		return nil, err
	}
	return &p, nil
}

func (p *Policy) check() error {
	switch {
	case p.Format != PolicyFormat:
		return fmt.Errorf("format %q, want %s", p.Format, PolicyFormat)
	case p.Version != policyVersion:
		return fmt.Errorf("version %d, this build reads %d", p.Version, policyVersion)
	case len(p.Deployments) == 0:
		return errors.New("deployments: none")
	case len(p.Table) != States*Actions:
		return fmt.Errorf("table: %d values, want %d", len(p.Table), States*Actions)
	case p.Period <= 0:
		return errors.New("period: must be > 0")
	}
	return nil
}

// Q returns the Q-function; it shares the policy's table.
func (p *Policy) Q() *rl.LinearQ {
	return &rl.LinearQ{Features: States, Actions: Actions, W: p.Table}
}

// forecaster returns the GRU as a forecast.Forecaster, nil without one.
func (p *Policy) forecaster() forecast.Forecaster {
	if p.fc == nil {
		return nil
	}
	return p.fc
}

// Parameters is the number of values the controller runs on: the table
// and the forecaster's weights.
func (p *Policy) Parameters() int {
	n := States * Actions
	if p.fc != nil {
		n += p.fc.Parameters()
	}
	return n
}

// Write writes the policy file.
func (p *Policy) Write(w io.Writer) error {
	if err := modelfile.WriteHeader(w, p); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	if p.fc != nil {
		return p.fc.Write(w)
	}
	return nil
}

// ReadPolicy reads a policy file written by Write.
func ReadPolicy(r io.Reader) (*Policy, error) {
	p := &Policy{}
	br, err := modelfile.ReadHeader(r, p, PolicyFormat)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if p.Forecaster {
		if p.fc, err = forecast.ReadGRUForecaster(br); err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		if p.fc.Dims() != 1 {
			return nil, fmt.Errorf("policy: forecaster of %d series, want 1 (the ingress rate)", p.fc.Dims())
		}
	}
	return p, nil
}
