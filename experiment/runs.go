package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/store"
	"go.yaml.in/yaml/v3"
)

type recorderKey struct{}

// Recorded is what a Comparison hands its context's recorder.
type Recorded struct {
	Scenario *scenario.Scenario // as it ran
	Result   *Result
	Started  time.Time
	// PolicyHashes are the hashes of the learned policies' files (what
	// Learned.Write writes), by name.
	PolicyHashes map[string]string
}

// WithRecorder returns a context under which every Comparison hands what
// it ran to record (concurrently, from the comparisons' goroutines): how
// 'shoal experiment' records every comparison an experiment makes,
// however deep in its study.
func WithRecorder(ctx context.Context, record func(Recorded)) context.Context {
	return context.WithValue(ctx, recorderKey{}, record)
}

// ScenarioHash identifies what a scenario runs: the hash of its resolved
// form (its base merged, --load, --horizon and the like applied), so two
// files that run the same system hash the same, and a changed one does not.
func ScenarioHash(sc *scenario.Scenario) (string, error) {
	b, err := yaml.Marshal(sc)
	if err != nil {
		return "", fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	return store.Hash(b), nil
}

// StoreRuns turns a comparison's result into one run per policy, each with
// the template's fields (kind, hashes, flags, times, sweep) and the
// policy's summary and per-class statistics. policyHash gives a policy's
// file hash ("" for a built-in policy).
func StoreRuns(r *Result, tmpl store.Run, policyHash func(policy string) string) ([]*store.Run, error) {
	var runs []*store.Run
	for _, p := range r.Policies {
		run := tmpl
		run.Scenario, run.Policy, run.RootSeed, run.Seeds = r.Scenario, p.Policy, r.RootSeed, r.Seeds
		run.Load = r.Load
		if policyHash != nil {
			run.PolicyHash = policyHash(p.Policy)
		}
		var err error
		if run.Summary, err = statMap(p.Summary, false); err != nil {
			return nil, err
		}
		for _, c := range p.Classes {
			m, err := statMap(c, false)
			if err != nil {
				return nil, err
			}
			run.Classes = append(run.Classes, store.ClassResult{Class: c.Class, Stats: m})
		}
		runs = append(runs, &run)
	}
	return runs, nil
}

// StudyRow is one policy's row of a study that is not made of
// Comparisons (FaaSConf's, edge's): where it ran, and its measures.
type StudyRow struct {
	Scenario, Policy string
	Load             float64 // 0: none
	RootSeed         uint64
	Seeds            int
	// Row holds the measures: its Stat fields, and its other numbers as
	// figures without an interval, by their JSON names (those of the
	// study's JSON file).
	Row any
}

// StudyRuns turns a study's rows into one run each, with the template's
// fields (kind, hashes, flags, times).
func StudyRuns(rows []StudyRow, tmpl store.Run) ([]*store.Run, error) {
	runs := make([]*store.Run, 0, len(rows))
	for _, r := range rows {
		run := tmpl
		run.Scenario, run.Policy, run.Load, run.RootSeed, run.Seeds = r.Scenario, r.Policy, r.Load, r.RootSeed, r.Seeds
		var err error
		if run.Summary, err = statMap(r.Row, true); err != nil {
			return nil, err
		}
		runs = append(runs, &run)
	}
	return runs, nil
}

// statMap reads the Stat fields of a summary by their JSON names (the
// names of results.json, which the store keeps too), and with numbers its
// other numeric fields as Stats without an interval.
func statMap(v any, numbers bool) (map[string]store.Stat, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	m := map[string]store.Stat{}
	for name, msg := range raw {
		var x float64
		if numbers && json.Unmarshal(msg, &x) == nil {
			m[name] = store.Stat{Mean: x, CI95: math.NaN()}
			continue
		}
		var st map[string]*float64
		if json.Unmarshal(msg, &st) != nil || len(st) != 2 {
			continue // not a Stat (a class's name, its SLO)
		}
		mean, ok1 := st["mean"]
		ci, ok2 := st["ci95"]
		if ok1 && ok2 {
			m[name] = store.Stat{Mean: orNaN(mean), CI95: orNaN(ci)}
		}
	}
	return m, nil
}

// orNaN is *f, or NaN for a JSON null (Num encodes NaN so).
func orNaN(f *float64) float64 {
	if f == nil {
		return math.NaN()
	}
	return *f
}
