// Package sweep runs a sweep: scenarios x loads x policies x seeds, with
// policies trained first where the sweep asks, recorded in the run store.
// A sweep expands into jobs in a fixed order; shard i of n runs the jobs
// whose index is i modulo n, so the shards of one sweep together run every
// job exactly once and their runs equal a local run's, row for row. A job
// skips the runs the store already has, so a sweep that stopped resumes
// where it was.
package sweep

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/shoal-project/shoal/control/policy"
	"github.com/shoal-project/shoal/envs/lbenv"
	"go.yaml.in/yaml/v3"
)

// Spec is a sweep file.
type Spec struct {
	// Name is the sweep's default id in the store.
	Name string `yaml:"name"`
	// Scenarios are embedded names or files (relative to the sweep file).
	Scenarios []string `yaml:"scenarios"`
	// Loads are offered loads (fractions of capacity); none: each
	// scenario's own.
	Loads []float64 `yaml:"loads"`
	// Policies are the built-in policies every scenario and load runs,
	// with their settings (hpa:target=45); a range runs one policy per
	// setting (hpa:target=30..90/15; 'shoal policies' lists them).
	Policies []string `yaml:"policies"`
	// Seed and Seeds: every run uses seeds Seed, Seed+1, ... (default: the
	// scenario's).
	Seed  uint64 `yaml:"seed"`
	Seeds int    `yaml:"seeds"`
	// Horizon overrides the scenarios' horizons.
	Horizon time.Duration `yaml:"horizon"`
	// Train steps: each trains a policy on every scenario, then evaluates
	// it at every load.
	Train []Train `yaml:"train"`

	dir string // the sweep file's folder
}

// Train is a train-then-evaluate step.
type Train struct {
	// Learner is distr-lb, centr-lb or qmix-lb.
	Learner  string `yaml:"learner"`
	Episodes int    `yaml:"episodes"`
	// EpisodeSteps is the control periods per episode (default 200).
	EpisodeSteps int `yaml:"episode_steps"`
	// Seed is the training seed (default 1).
	Seed uint64 `yaml:"seed"`
	// Load is the training load (default: the scenario's).
	Load float64 `yaml:"load"`
	// As are the policies evaluated with the trained file: the learner, or
	// distr-lb+probing (default: the learner).
	As []string `yaml:"as"`
}

// learners are the algorithms a train step knows.
var learners = []string{string(lbenv.DistrLB), string(lbenv.CentrLB), string(lbenv.QMixLB)}

// hybrid runs a Distr-LB file over the probing data plane.
const hybrid = "distr-lb+probing"

// Load reads a sweep file strictly.
func Load(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.dir = filepath.Dir(path)
	return s, nil
}

// Decode reads a sweep from YAML: unknown fields are errors.
func Decode(b []byte) (*Spec, error) {
	var s Spec
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	s.defaults()
	return &s, s.validate()
}

func (s *Spec) defaults() {
	for i := range s.Train {
		t := &s.Train[i]
		if t.Seed == 0 {
			t.Seed = 1
		}
		if len(t.As) == 0 {
			t.As = []string{t.Learner}
		}
	}
}

func (s *Spec) validate() error {
	var bad []string
	add := func(field, format string, args ...any) {
		bad = append(bad, field+": "+fmt.Sprintf(format, args...))
	}
	if s.Name == "" || strings.ContainsAny(s.Name, " /\t") {
		add("name", "want a name without spaces or slashes, got %q", s.Name)
	}
	if len(s.Scenarios) == 0 {
		add("scenarios", "want at least one")
	}
	if len(s.Policies) == 0 && len(s.Train) == 0 {
		add("policies", "want at least one policy or train step")
	}
	for i, l := range s.Loads {
		if !(l > 0 && l <= 10) {
			add(fmt.Sprintf("loads[%d]", i), "want a load in (0, 10], got %g", l)
		}
	}
	for i, p := range s.Policies {
		names, err := policy.Expand(p)
		if err != nil {
			add(fmt.Sprintf("policies[%d]", i), "%v", err)
			continue
		}
		for _, n := range names {
			if spec, _ := policy.Parse(n); spec.File != "" {
				add(fmt.Sprintf("policies[%d]", i), "%q: a policy file belongs in a train step", p)
				break
			}
		}
	}
	if s.Seeds < 0 {
		add("seeds", "must not be negative")
	}
	if s.Horizon < 0 {
		add("horizon", "must not be negative")
	}
	for i, t := range s.Train {
		f := fmt.Sprintf("train[%d]", i)
		if !slices.Contains(learners, t.Learner) {
			add(f+".learner", "%q is none of %s", t.Learner, strings.Join(learners, ", "))
		}
		if t.Episodes < 0 || t.EpisodeSteps < 0 {
			add(f, "episodes and episode_steps must not be negative")
		}
		if t.Load < 0 || t.Load > 10 {
			add(f+".load", "want a load in (0, 10], got %g", t.Load)
		}
		for _, as := range t.As {
			if as != t.Learner && !(as == hybrid && t.Learner == string(lbenv.DistrLB)) {
				add(f+".as", "%q: want %s or, for distr-lb, %s", as, t.Learner, hybrid)
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("sweep: %s", strings.Join(bad, "; "))
	}
	return nil
}

// scenarioPath resolves a scenario entry: an embedded name as it is, a
// file relative to the sweep file.
func (s *Spec) scenarioPath(name string) string {
	if !strings.ContainsAny(name, "/.") || filepath.IsAbs(name) || s.dir == "" {
		return name
	}
	return filepath.Join(s.dir, name)
}

// policies are Policies with each range expanded (validated by Validate).
func (s *Spec) policies() []string {
	var out []string
	for _, p := range s.Policies {
		names, _ := policy.Expand(p)
		out = append(out, names...)
	}
	return out
}
