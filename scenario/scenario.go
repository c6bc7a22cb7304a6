// Package scenario reads, validates and lists scenario files: a simulated
// system (cluster.Config) plus how to run it (horizon, warm-up, load level,
// seeds, the policies to compare).
//
// The usage loop:
//
//	sc, err := scenario.Lookup("lb-moderate-cpu")   // embedded, or scenario.Load(path)
//	rates, err := sc.SourceRates()                  // the load level turned into arrival rates
//	cl, err := cluster.New(&sc.Config, cluster.Options{Seed: sc.Seed, Rates: rates, ...})
//
// Decoding is strict (unknown fields are errors), defaults are applied, and
// every validation error names the field path and the bad value.
package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/workload"
	"go.yaml.in/yaml/v3"
)

// Scenario is one scenario file.
type Scenario struct {
	// Name names the scenario in tables, reports and the run store.
	Name string `yaml:"name"`
	// Description is one line on what the scenario models, shown under a
	// report's title and by 'shoal scenarios'.
	Description string `yaml:"description"`
	// Base names the scenario this one builds on: an embedded scenario, or
	// a file relative to this one's folder. The file's top-level fields
	// replace the base's whole (sources: replaces every source); the others
	// are the base's.
	Base string `yaml:"base"`
	// Seed is the root seed; run i of a multi-seed comparison uses Seed+i.
	Seed uint64 `yaml:"seed"`
	// Seeds is how many seeds a comparison runs by default (default 5).
	Seeds int `yaml:"seeds"`
	// Horizon is when arrivals stop (default 10m).
	Horizon time.Duration `yaml:"horizon"`
	// Warmup excludes earlier arrivals from the results (default horizon/20).
	Warmup time.Duration `yaml:"warmup"`
	// Drain bounds the time after the horizon to finish requests in
	// progress (default: the horizon).
	Drain time.Duration `yaml:"drain"`
	// SamplePeriod is the period of load time series (default 1s, at most
	// 2000 samples: longer horizons sample less often).
	SamplePeriod time.Duration `yaml:"sample_period"`
	// ControlPeriod is how often controllers observe and act (default 500ms).
	ControlPeriod time.Duration `yaml:"control_period"`
	// Load, when set, is the offered load as a fraction of the capacity of
	// the service the sources enter; it sets every source's mean rate
	// (split by share). Without it each source keeps its own rate.
	Load float64 `yaml:"load"`
	// Policies are compared by default, e.g. [ecmp, wcmp, lsq, sed, p2c, oracle].
	Policies []string `yaml:"policies"`

	// Autoscaling configures the autoscalers that policies can name.
	Autoscaling Autoscaling `yaml:"autoscaling"`

	cluster.Config `yaml:",inline"`

	// traces resolves trace names and paths relative to the file's folder.
	traces *workload.Traces
}

// Traces is the trace catalog of the scenario: embedded traces by name, and
// file paths relative to the scenario file's folder.
func (s *Scenario) Traces() *workload.Traces {
	if s.traces == nil {
		s.traces = workload.NewTraces("")
	}
	return s.traces
}

// Decode reads a scenario strictly from r, applies defaults and validates
// it. Name is the file name used in errors.
func Decode(r io.Reader, name string) (*Scenario, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read scenario %s: %w", name, err)
	}
	if data, err = withBase(data, name, 0); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", name, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	sc := Scenario{traces: workload.NewTraces(filepath.Dir(name))}
	if err := dec.Decode(&sc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("scenario %s: empty file", name)
		}
		return nil, fmt.Errorf("scenario %s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("scenario %s: more than one YAML document", name)
	}
	sc.applyDefaults()
	var loadErr error
	if sc.Load != 0 {
		for i, src := range sc.Sources {
			if src.Arrivals.Rate != 0 {
				loadErr = errors.Join(loadErr, fmt.Errorf("sources[%d].arrivals.rate: set %g, but load sets the rates; remove one", i, src.Arrivals.Rate))
			}
		}
		if loadErr == nil {
			loadErr = sc.SetLoad(sc.Load)
		}
	}
	if err := errors.Join(loadErr, sc.Validate()); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", name, err)
	}
	return &sc, nil
}

// Load reads a scenario file.
func Load(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open scenario: %w", err)
	}
	defer f.Close()
	return Decode(f, path)
}

// SetHorizon changes the horizon and resets what depends on it to its
// default: warm-up (horizon/20), drain (horizon) and sample period.
func (s *Scenario) SetHorizon(d time.Duration) {
	s.Horizon, s.Warmup, s.Drain, s.SamplePeriod = d, 0, 0, 0
	s.applyDefaults()
}

func (s *Scenario) applyDefaults() {
	if s.Seed == 0 {
		s.Seed = 1
	}
	if s.Seeds == 0 {
		s.Seeds = 5
	}
	if s.Horizon == 0 {
		s.Horizon = 10 * time.Minute
	}
	if s.Warmup == 0 {
		s.Warmup = s.Horizon / 20
	}
	if s.Drain == 0 {
		s.Drain = s.Horizon
	}
	if s.SamplePeriod == 0 {
		s.SamplePeriod = max(time.Second, (s.Horizon / 2000).Round(time.Second))
	}
	if s.ControlPeriod == 0 {
		s.ControlPeriod = 500 * time.Millisecond
	}
}

// Validate checks the scenario; errors name the field path and bad value.
func (s *Scenario) Validate() error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	if s.Name == "" {
		bad("name", "must not be empty")
	}
	if s.Seeds < 1 {
		bad("seeds", "must be >= 1, got %d", s.Seeds)
	}
	if s.Horizon <= 0 {
		bad("horizon", "must be > 0, got %v", s.Horizon)
	}
	if s.Warmup < 0 || s.Warmup >= s.Horizon {
		bad("warmup", "must be in [0, horizon %v), got %v", s.Horizon, s.Warmup)
	}
	if s.Drain < 0 {
		bad("drain", "must be >= 0, got %v", s.Drain)
	}
	if s.SamplePeriod < 0 {
		bad("sample_period", "must be > 0, got %v", s.SamplePeriod)
	}
	if s.ControlPeriod < 0 {
		bad("control_period", "must be > 0, got %v", s.ControlPeriod)
	}
	if s.Load < 0 || s.Load > 10 || math.IsNaN(s.Load) {
		bad("load", "must be in [0, 10] (a fraction of capacity), got %g", s.Load)
	}
	if err := s.Config.Validate(); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, s.checkTraces(), s.validateAutoscaling())
	}
	return errors.Join(errs...)
}

// checkTraces builds every arrival process and distribution, so missing or
// broken trace files are reported when the scenario is loaded, not mid-run.
func (s *Scenario) checkTraces() error {
	var errs []error
	for i := range s.Sources {
		src := &s.Sources[i]
		switch {
		case src.Users.Over != nil:
			if _, err := src.Users.Over.BuildWith(0, s.Traces()); err != nil {
				errs = append(errs, fmt.Errorf("sources[%d].users: %w", i, err))
			}
		case src.Users.IsSet():
		default:
			if _, err := src.Arrivals.BuildWith(0, s.Traces()); err != nil {
				errs = append(errs, fmt.Errorf("sources[%d].arrivals: %w", i, err))
			}
		}
		if src.Think.Trace != "" {
			if _, err := src.Think.BuildWith(s.Traces()); err != nil {
				errs = append(errs, fmt.Errorf("sources[%d].think: %w", i, err))
			}
		}
	}
	for i := range s.Classes {
		errs = append(errs, checkCallTraces(&s.Classes[i].Call, fmt.Sprintf("classes[%d].call", i), s.Traces()))
	}
	return errors.Join(errs...)
}

func checkCallTraces(c *cluster.Call, path string, t *workload.Traces) error {
	var errs []error
	for _, d := range []struct {
		name string
		spec workload.DistSpec
	}{{"cpu", c.CPU}, {"io", c.IO}} {
		if d.spec.Trace != "" {
			if _, err := d.spec.BuildWith(t); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: %w", path, d.name, err))
			}
		}
	}
	for i := range c.Stages {
		for j := range c.Stages[i].Calls {
			errs = append(errs, checkCallTraces(&c.Stages[i].Calls[j], fmt.Sprintf("%s.stages[%d].calls[%d]", path, i, j), t))
		}
	}
	return errors.Join(errs...)
}
