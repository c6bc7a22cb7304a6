package workload

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Process kinds accepted in ProcessSpec.Kind.
const (
	KindPoisson = "poisson"
	KindMMPP    = "mmpp"
	KindDiurnal = "diurnal"
	KindTrace   = "trace"
	KindSeries  = "series"
)

// DefaultDiurnalPeriod is the period of a diurnal process whose spec sets none.
const DefaultDiurnalPeriod = 24 * time.Hour

// ProcessSpec is the YAML form of an arrival process (strict-decodable: yaml tags, snake_case).
// Durations are YAML strings parsed by time.ParseDuration ("90s", "24h").
//
//	{kind: poisson, rate: 50}
//	{kind: diurnal, rate: 50, amplitude: 0.6, period: 24h, peak: 14h}
//	{kind: mmpp, rate: 50, states: [{rate: 20, dwell: 60s}, {rate: 200, dwell: 10s}]}
//	{kind: mmpp, states: [{rate: 20}, {rate: 200}], generator: [[0, 0.02], [0.1, 0]]}
//	{kind: trace, trace: nasa, rate: 100, speedup: 60, start: 24h, window: 6h, loop: true}
//	{kind: trace, trace: azure-llm, speedup: 2}
//	{kind: trace, trace: alibaba, column: cpu_util_percent, rate: 30}
type ProcessSpec struct {
	// Kind is poisson | mmpp | diurnal | trace.
	Kind string `yaml:"kind"`
	// Rate is the mean rate in requests per second. Required for poisson and diurnal; for mmpp,
	// trace and series it is optional and, when set, rescales the process to this long-run mean
	// (for a replay: the mean over the replayed window).
	Rate float64 `yaml:"rate"`

	// Amplitude is the diurnal relative amplitude in [0, 1]: rate·(1 ± amplitude) at peak/trough.
	Amplitude float64 `yaml:"amplitude"`
	// Period is the diurnal period (default 24h).
	Period time.Duration `yaml:"period"`
	// Peak is the instant within the period at which the diurnal rate is highest.
	Peak time.Duration `yaml:"peak"`

	// States are the MMPP phases: rate in requests per second and, without Generator, the mean
	// dwell time (the chain then leaves a phase to one of the others chosen uniformly).
	States []MMPPState `yaml:"states"`
	// Generator is the MMPP generator matrix (per second, k×k, off-diagonal >= 0; the diagonal is
	// ignored). When set, States give the rates only.
	Generator [][]float64 `yaml:"generator"`

	// Trace names an embedded trace (nasa, wikipedia, alibaba, azure-llm) or a file path
	// (absolute, or relative to the catalog's base directory).
	Trace string `yaml:"trace"`
	// Format is the file format of a trace given by path (nasa, wikipedia, alibaba, azure-llm);
	// empty means detected from the file's first line.
	Format string `yaml:"format"`
	// Column selects the replayed series: alibaba cpu_util_percent (default), mem_util_percent,
	// net_in, net_out, disk_io_percent; wikipedia sum_req (default); ignored for nasa.
	Column string `yaml:"column"`
	// Bin, when set, replays a rate series averaged over bins of this trace-time width (a multiple
	// of the trace step), or turns recorded instants (azure-llm) into counts per bin replayed as a
	// rate series, so that rate scaling does not warp time.
	Bin time.Duration `yaml:"bin"`
	// Scale multiplies the replayed rate (0 = 1); exclusive with Rate.
	Scale float64 `yaml:"scale"`
	// Speedup compresses trace time: 60 replays one trace hour in one simulated minute, with the
	// same arrivals (so 60 times the rate, before Rate/Scale). 0 = 1.
	Speedup float64 `yaml:"speedup"`
	// Start is the trace-time offset where replay starts.
	Start time.Duration `yaml:"start"`
	// Window is the trace-time length replayed (0 = to the end).
	Window time.Duration `yaml:"window"`
	// Loop repeats the window forever; false ends the source after one pass.
	Loop bool `yaml:"loop"`

	// Step is the bucket width of an inline series.
	Step time.Duration `yaml:"step"`
	// Rates are the per-bucket rates of an inline series in requests per second.
	Rates []float64 `yaml:"rates"`
}

// MMPPState is one phase of an MMPP in a ProcessSpec.
type MMPPState struct {
	// Rate is the arrival rate in this phase in requests per second (>= 0).
	Rate float64 `yaml:"rate"`
	// Dwell is the mean time spent in this phase (only without a generator).
	Dwell time.Duration `yaml:"dwell"`
}

func field(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func badFinite(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }

// Validate checks the spec without loading traces. Errors name the field path, e.g.
// `sources[0].arrivals.rate: must be > 0, got -1`; path is the spec's own path ("" for none).
func (s *ProcessSpec) Validate(path string) error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field(path, name), fmt.Sprintf(format, args...)))
	}
	unused := func(name string, set bool) {
		if set {
			bad(name, "not used by kind %s", s.Kind)
		}
	}
	if badFinite(s.Rate) {
		bad("rate", "must be finite, got %v", s.Rate)
	}
	noDiurnal := func() {
		unused("amplitude", s.Amplitude != 0)
		unused("period", s.Period != 0)
		unused("peak", s.Peak != 0)
	}
	noMMPP := func() {
		unused("states", s.States != nil)
		unused("generator", s.Generator != nil)
	}
	noTraceFile := func() {
		unused("trace", s.Trace != "")
		unused("format", s.Format != "")
		unused("column", s.Column != "")
	}
	noSeries := func() {
		unused("step", s.Step != 0)
		unused("rates", s.Rates != nil)
	}
	noTrace := func() {
		noTraceFile()
		noSeries()
		unused("bin", s.Bin != 0)
		unused("scale", s.Scale != 0)
		unused("speedup", s.Speedup != 0)
		unused("start", s.Start != 0)
		unused("window", s.Window != 0)
		unused("loop", s.Loop)
	}
	switch s.Kind {
	case KindPoisson:
		if !(s.Rate > 0) {
			bad("rate", "must be > 0, got %v", s.Rate)
		}
		noDiurnal()
		noMMPP()
		noTrace()
	case KindDiurnal:
		if !(s.Rate > 0) {
			bad("rate", "must be > 0, got %v", s.Rate)
		}
		if !(s.Amplitude >= 0 && s.Amplitude <= 1) {
			bad("amplitude", "must be in [0, 1], got %v", s.Amplitude)
		}
		if s.Period < 0 {
			bad("period", "must be > 0, got %v", s.Period)
		}
		noMMPP()
		noTrace()
	case KindMMPP:
		if s.Rate < 0 {
			bad("rate", "must be >= 0 (0 keeps the phase rates), got %v", s.Rate)
		}
		if len(s.States) == 0 {
			bad("states", "must list at least one phase")
		}
		k := len(s.States)
		positive := false
		for i, st := range s.States {
			p := fmt.Sprintf("states[%d]", i)
			if !(st.Rate >= 0) || badFinite(st.Rate) {
				bad(p+".rate", "must be >= 0, got %v", st.Rate)
			}
			positive = positive || st.Rate > 0
			if s.Generator != nil {
				if st.Dwell != 0 {
					bad(p+".dwell", "must be unset when generator is given, got %v", st.Dwell)
				}
			} else if k > 1 && st.Dwell <= 0 {
				bad(p+".dwell", "must be > 0, got %v", st.Dwell)
			}
		}
		if k > 0 && !positive {
			bad("states", "at least one phase needs rate > 0")
		}
		if s.Generator != nil {
			if len(s.Generator) != k {
				bad("generator", "must have %d rows (one per state), got %d", k, len(s.Generator))
			}
			for i, row := range s.Generator {
				if len(row) != k {
					bad(fmt.Sprintf("generator[%d]", i), "must have %d entries, got %d", k, len(row))
					continue
				}
				for j, v := range row {
					if i != j && (!(v >= 0) || badFinite(v)) {
						bad(fmt.Sprintf("generator[%d][%d]", i, j), "must be >= 0, got %v", v)
					}
				}
			}
		}
		noDiurnal()
		noTrace()
	case KindTrace, KindSeries:
		if s.Rate < 0 {
			bad("rate", "must be >= 0 (0 keeps the replayed rate), got %v", s.Rate)
		}
		if s.Kind == KindTrace {
			if s.Trace == "" {
				bad("trace", "must name a trace (nasa, wikipedia, alibaba, azure-llm) or a file path")
			}
			if s.Format != "" && !validFormat(s.Format) {
				bad("format", "must be one of nasa, wikipedia, alibaba, azure-llm, got %q", s.Format)
			}
			noSeries()
		} else {
			if s.Step <= 0 {
				bad("step", "must be > 0, got %v", s.Step)
			}
			if len(s.Rates) == 0 {
				bad("rates", "must list at least one rate")
			}
			positive := false
			for i, r := range s.Rates {
				if !(r >= 0) || badFinite(r) {
					bad(fmt.Sprintf("rates[%d]", i), "must be >= 0, got %v", r)
				}
				positive = positive || r > 0
			}
			if len(s.Rates) > 0 && !positive {
				bad("rates", "at least one rate must be > 0")
			}
			noTraceFile()
		}
		if s.Bin < 0 {
			bad("bin", "must be >= 0, got %v", s.Bin)
		}
		if !(s.Scale >= 0) || badFinite(s.Scale) {
			bad("scale", "must be > 0, got %v", s.Scale)
		}
		if s.Scale != 0 && s.Rate != 0 {
			bad("scale", "cannot be combined with rate (rate already sets the scale)")
		}
		if !(s.Speedup >= 0) || badFinite(s.Speedup) {
			bad("speedup", "must be > 0, got %v", s.Speedup)
		}
		if s.Start < 0 {
			bad("start", "must be >= 0, got %v", s.Start)
		}
		if s.Window < 0 {
			bad("window", "must be >= 0, got %v", s.Window)
		}
		noDiurnal()
		noMMPP()
	case "":
		bad("kind", "must be set (poisson, mmpp, diurnal, trace, series)")
	default:
		bad("kind", "must be one of poisson, mmpp, diurnal, trace, series, got %q", s.Kind)
	}
	return errors.Join(errs...)
}

// Build returns a fresh Process for the spec. meanRate > 0 rescales the process to that long-run
// mean (load levels); 0 keeps the spec's own. Traces are resolved in a new catalog of the embedded
// traces (paths relative to the working directory); use BuildWith to share a catalog.
func (s ProcessSpec) Build(meanRate float64) (Process, error) {
	return s.BuildWith(meanRate, nil)
}

// BuildWith is Build resolving traces in the catalog c (nil: a new catalog with base directory "").
func (s ProcessSpec) BuildWith(meanRate float64, c *Traces) (Process, error) {
	if err := s.Validate(""); err != nil {
		return nil, fmt.Errorf("workload: building %s process: %w", s.Kind, err)
	}
	if !(meanRate >= 0) || badFinite(meanRate) {
		return nil, fmt.Errorf("workload: building %s process: mean rate must be >= 0, got %v", s.Kind, meanRate)
	}
	target := s.Rate
	if meanRate > 0 {
		target = meanRate
	}
	switch s.Kind {
	case KindPoisson:
		return NewPoisson(target)
	case KindDiurnal:
		period := s.Period
		if period == 0 {
			period = DefaultDiurnalPeriod
		}
		return NewDiurnal(target, s.Amplitude, period, s.Peak)
	case KindMMPP:
		rates := make([]float64, len(s.States))
		for i, st := range s.States {
			rates[i] = st.Rate
		}
		q := s.Generator
		if q == nil {
			dw := make([]time.Duration, len(s.States))
			for i, st := range s.States {
				dw[i] = st.Dwell
			}
			var err error
			if q, err = dwellGenerator(dw); err != nil {
				return nil, err
			}
		}
		if target > 0 && len(q) == len(rates) {
			// Rescale the phase rates so that Σ π_i λ_i = target (π does not depend on the rates).
			full := make([][]float64, len(q))
			for i, row := range q {
				full[i] = append([]float64(nil), row...)
				full[i][i] = 0
				for j, v := range row {
					if j != i {
						full[i][i] -= v
					}
				}
			}
			if pi, err := stationary(full); err == nil {
				mean := 0.0
				for i, p := range pi {
					mean += p * rates[i]
				}
				if mean > 0 {
					for i := range rates {
						rates[i] *= target / mean
					}
				}
			}
		}
		return NewMMPP(rates, q)
	case KindSeries:
		var series = &RateSeries{Step: s.Step, Values: s.Rates}
		if s.Bin > 0 && s.Bin != s.Step {
			var err error
			if series, err = series.Aggregate(s.Bin); err != nil {
				return nil, err
			}
		}
		return NewSeriesReplay(series, s.replayOptions(target))
	default: // KindTrace
		if c == nil {
			c = NewTraces("")
		}
		tr, err := c.Load(s.Trace, s.Format)
		if err != nil {
			return nil, err
		}
		o := s.replayOptions(target)
		if tr.Requests != nil && s.Bin == 0 {
			p, err := NewInstantReplay(tr.Requests.At, o)
			if err != nil {
				return nil, fmt.Errorf("workload: replaying trace %q: %w", s.Trace, err)
			}
			return p, nil
		}
		series, err := tr.Series(s.Column, s.Bin)
		if err != nil {
			return nil, fmt.Errorf("workload: replaying trace %q: %w", s.Trace, err)
		}
		p, err := NewSeriesReplay(series, o)
		if err != nil {
			return nil, fmt.Errorf("workload: replaying trace %q: %w", s.Trace, err)
		}
		return p, nil
	}
}

func (s ProcessSpec) replayOptions(target float64) ReplayOptions {
	return ReplayOptions{
		Start: s.Start, Window: s.Window, Speedup: s.Speedup, Scale: s.Scale,
		TargetRate: target, Loop: s.Loop,
	}
}

// Distribution names accepted in DistSpec.Dist.
const (
	DistExp       = "exp"
	DistLogNormal = "lognormal"
	DistDet       = "det"
	DistUniform   = "uniform"
	DistEmpirical = "empirical"
	DistPareto    = "pareto"
)

// DistSpec is the YAML form of a distribution:
//
//	{dist: exp, mean: 0.01}                      # exponential, mean in the caller's unit (seconds)
//	{dist: lognormal, mean: 0.01, cv: 2}         # mean and coefficient of variation
//	{dist: det, mean: 0.01}                      # constant
//	{dist: uniform, min: 0.005, max: 0.015}      # or {dist: uniform, mean: m, cv: c}, c <= 1/√3
//	{dist: pareto, alpha: 1.5, min: 0.001, max: 1} # bounded Pareto
//	{dist: empirical, values: [1, 2, 5], interpolate: true}
//	{dist: empirical, trace: azure-llm, column: generated_tokens, scale: 0.02}
//
// Scale (default 1) multiplies every sample and the mean, e.g. tokens → seconds.
type DistSpec struct {
	// Dist is exp | lognormal | det | uniform | empirical | pareto.
	Dist string `yaml:"dist"`
	// Mean is the mean (exp, lognormal, det, uniform with cv).
	Mean float64 `yaml:"mean"`
	// CV is the coefficient of variation, standard deviation / mean (lognormal, uniform).
	CV float64 `yaml:"cv"`
	// Min is the lower bound (uniform, pareto).
	Min float64 `yaml:"min"`
	// Max is the upper bound (uniform, pareto).
	Max float64 `yaml:"max"`
	// Alpha is the Pareto shape.
	Alpha float64 `yaml:"alpha"`
	// Values are the observations of an empirical distribution.
	Values []float64 `yaml:"values"`
	// Trace names a per-request trace whose token counts form an empirical distribution (azure-llm
	// or a path to a file in that format).
	Trace string `yaml:"trace"`
	// Column is context_tokens or generated_tokens (default) for Trace.
	Column string `yaml:"column"`
	// Interpolate samples an empirical distribution by inverse-CDF interpolation instead of resampling.
	Interpolate bool `yaml:"interpolate"`
	// Scale multiplies samples (0 = 1).
	Scale float64 `yaml:"scale"`
}

// Validate checks the spec without loading traces; errors name the field path.
func (s *DistSpec) Validate(path string) error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field(path, name), fmt.Sprintf(format, args...)))
	}
	unused := func(name string, set bool) {
		if set {
			bad(name, "not used by dist %s", s.Dist)
		}
	}
	posMean := func() {
		if !(s.Mean > 0) || badFinite(s.Mean) {
			bad("mean", "must be > 0, got %v", s.Mean)
		}
	}
	noBounds := func() {
		unused("min", s.Min != 0)
		unused("max", s.Max != 0)
		unused("alpha", s.Alpha != 0)
	}
	noEmp := func() {
		unused("values", s.Values != nil)
		unused("trace", s.Trace != "")
		unused("column", s.Column != "")
		unused("interpolate", s.Interpolate)
	}
	if !(s.Scale >= 0) || badFinite(s.Scale) {
		bad("scale", "must be > 0, got %v", s.Scale)
	}
	switch s.Dist {
	case DistExp:
		posMean()
		unused("cv", s.CV != 0)
		noBounds()
		noEmp()
	case DistLogNormal:
		posMean()
		if !(s.CV > 0) || badFinite(s.CV) {
			bad("cv", "must be > 0, got %v", s.CV)
		}
		noBounds()
		noEmp()
	case DistDet:
		if !(s.Mean >= 0) || badFinite(s.Mean) {
			bad("mean", "must be >= 0, got %v", s.Mean)
		}
		unused("cv", s.CV != 0)
		noBounds()
		noEmp()
	case DistUniform:
		if s.Mean != 0 || s.CV != 0 {
			posMean()
			if !(s.CV >= 0 && s.CV <= 1/math.Sqrt(3)) {
				bad("cv", "must be in [0, 1/√3≈0.577] so that min >= 0, got %v", s.CV)
			}
			unused("min", s.Min != 0)
			unused("max", s.Max != 0)
		} else if !(s.Min >= 0 && s.Max >= s.Min) || badFinite(s.Max) {
			bad("max", "must satisfy 0 <= min <= max, got min %v max %v", s.Min, s.Max)
		}
		unused("alpha", s.Alpha != 0)
		noEmp()
	case DistPareto:
		if !(s.Alpha > 0) || badFinite(s.Alpha) {
			bad("alpha", "must be > 0, got %v", s.Alpha)
		}
		if !(s.Min > 0) {
			bad("min", "must be > 0, got %v", s.Min)
		}
		if !(s.Max > s.Min) || badFinite(s.Max) {
			bad("max", "must be > min (%v), got %v", s.Min, s.Max)
		}
		unused("mean", s.Mean != 0)
		unused("cv", s.CV != 0)
		noEmp()
	case DistEmpirical:
		switch {
		case s.Values != nil && s.Trace != "":
			bad("values", "cannot be combined with trace")
		case s.Values == nil && s.Trace == "":
			bad("values", "must list at least one value (or set trace)")
		case s.Trace == "" && len(s.Values) == 0:
			bad("values", "must list at least one value")
		}
		for i, v := range s.Values {
			if !(v >= 0) || badFinite(v) {
				bad(fmt.Sprintf("values[%d]", i), "must be >= 0, got %v", v)
			}
		}
		if s.Column != "" && s.Column != "context_tokens" && s.Column != "generated_tokens" {
			bad("column", "must be context_tokens or generated_tokens, got %q", s.Column)
		}
		if s.Column != "" && s.Trace == "" {
			bad("column", "needs trace")
		}
		unused("mean", s.Mean != 0)
		unused("cv", s.CV != 0)
		noBounds()
	case "":
		bad("dist", "must be set (exp, lognormal, det, uniform, empirical, pareto)")
	default:
		bad("dist", "must be one of exp, lognormal, det, uniform, empirical, pareto, got %q", s.Dist)
	}
	return errors.Join(errs...)
}

// Build returns the distribution. An empirical distribution from a trace is resolved in a new
// catalog of the embedded traces; use BuildWith to share a catalog.
func (s DistSpec) Build() (Dist, error) { return s.BuildWith(nil) }

// BuildWith is Build resolving traces in the catalog c (nil: a new catalog with base directory "").
func (s DistSpec) BuildWith(c *Traces) (Dist, error) {
	if err := s.Validate(""); err != nil {
		return nil, fmt.Errorf("workload: building %s distribution: %w", s.Dist, err)
	}
	d, err := s.build(c)
	if err != nil {
		return nil, err
	}
	if s.Scale != 0 && s.Scale != 1 {
		return Scaled{D: d, Factor: s.Scale}, nil
	}
	return d, nil
}

func (s DistSpec) build(c *Traces) (Dist, error) {
	switch s.Dist {
	case DistExp:
		return NewExponential(s.Mean)
	case DistLogNormal:
		return NewLogNormal(s.Mean, s.CV)
	case DistDet:
		return NewDeterministic(s.Mean)
	case DistUniform:
		if s.Mean != 0 {
			h := s.Mean * s.CV * math.Sqrt(3)
			return NewUniform(math.Max(0, s.Mean-h), s.Mean+h)
		}
		return NewUniform(s.Min, s.Max)
	case DistPareto:
		return NewBoundedPareto(s.Alpha, s.Min, s.Max)
	default: // DistEmpirical
		if s.Trace == "" {
			return NewEmpirical(s.Values, s.Interpolate)
		}
		if c == nil {
			c = NewTraces("")
		}
		tr, err := c.Load(s.Trace, FormatAzureLLM)
		if err != nil {
			return nil, err
		}
		if tr.Requests == nil {
			return nil, fmt.Errorf("workload: trace %q has no per-request token counts", s.Trace)
		}
		vals := tr.Requests.Generated
		if s.Column == "context_tokens" {
			vals = tr.Requests.Context
		}
		return NewEmpirical(vals, s.Interpolate)
	}
}
