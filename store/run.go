package store

import (
	"fmt"
	"math"
	"time"
)

// Kinds of run.
const (
	KindSim        = "sim"
	KindTrain      = "train"
	KindExperiment = "experiment"
	KindSweep      = "sweep"
)

// Stat is one measure of a run over its seeds.
type Stat struct {
	Mean float64
	CI95 float64 // half-width of the 95% confidence interval
}

// NoStat stands for a statistic a run does not have.
var NoStat = Stat{Mean: math.NaN(), CI95: math.NaN()}

// StatOf is the named statistic of m, NoStat when m has none.
func StatOf(m map[string]Stat, name string) Stat {
	if s, ok := m[name]; ok {
		return s
	}
	return NoStat
}

// ClassResult is the statistics of one request class.
type ClassResult struct {
	Class string
	Stats map[string]Stat
}

// Run is one recorded run.
type Run struct {
	ID           string // Record draws one when empty (NewID)
	Kind         string // KindSim, KindTrain, KindExperiment or KindSweep
	Scenario     string // name
	ScenarioHash string // Hash of the scenario file's bytes
	Policy       string
	PolicyHash   string // Hash of the policy file's bytes, "" when none
	RootSeed     uint64
	Seeds        int     // seeds derived from RootSeed
	Load         float64 // 0: the scenario's own
	CodeVersion  string
	Flags        map[string]string // the command line's flags, by name
	Started      time.Time         // read back in UTC, to the nanosecond
	Finished     time.Time         // zero when unknown
	Summary      map[string]Stat   // the whole run's measures, by name ("mean", "p99", ...)
	Classes      []ClassResult     // per request class, in the scenario's order
	Key          string            // Record sets ComputeKey() when empty
	Sweep        string            // the sweep's id, "" outside a sweep
	Shard        string            // the sweep's shard that ran it, if sharded
}

// validate rejects what the store could not read back as written.
func (r *Run) validate() error {
	switch r.Kind {
	case KindSim, KindTrain, KindExperiment, KindSweep:
	default:
		return fmt.Errorf("kind %q is none of sim, train, experiment, sweep", r.Kind)
	}
	if r.Started.IsZero() {
		return fmt.Errorf("no start time")
	}
	for _, t := range []time.Time{r.Started, r.Finished} {
		if !t.IsZero() && !time.Unix(0, t.UnixNano()).Equal(t) {
			return fmt.Errorf("time %v is outside the years 1678-2262 that nanoseconds since 1970 can hold", t)
		}
	}
	if r.Seeds < 0 {
		return fmt.Errorf("%d seeds", r.Seeds)
	}
	for _, c := range r.Classes {
		if c.Class == "" {
			return fmt.Errorf("a class without a name (class \"\" is the whole run's summary)")
		}
	}
	if math.IsNaN(r.Load) || math.IsInf(r.Load, 0) || r.Load < 0 {
		return fmt.Errorf("load %v is not a finite non-negative number", r.Load)
	}
	return nil
}
