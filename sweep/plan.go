package sweep

import "fmt"

// Job is one unit of a sweep: a built-in policy on one scenario at one
// load, or a train step on one scenario (training, then its policies at
// every load).
type Job struct {
	Index    int
	Scenario string  // the sweep's entry
	Load     float64 // an evaluation's load (0: the scenario's)
	Policy   string  // an evaluation's policy
	Train    *Train  // a train step, nil for an evaluation
}

func (j Job) String() string {
	if j.Train != nil {
		return fmt.Sprintf("train %s on %s", j.Train.Learner, j.Scenario)
	}
	return fmt.Sprintf("%s on %s at load %s", j.Policy, j.Scenario, loadText(j.Load))
}

func loadText(l float64) string {
	if l == 0 {
		return "default"
	}
	return fmt.Sprint(l)
}

// loads are the sweep's loads, or the scenarios' own (0).
func (s *Spec) loads() []float64 {
	if len(s.Loads) == 0 {
		return []float64{0}
	}
	return s.Loads
}

// Jobs expands the sweep in its fixed order: every scenario's train steps
// first, then every scenario, load and policy. Training is the long work,
// so putting it first spreads it over the shards (i modulo n).
func (s *Spec) Jobs() []Job {
	var jobs []Job
	add := func(j Job) {
		j.Index = len(jobs)
		jobs = append(jobs, j)
	}
	for _, sc := range s.Scenarios {
		for i := range s.Train {
			add(Job{Scenario: sc, Train: &s.Train[i]})
		}
	}
	for _, sc := range s.Scenarios {
		for _, l := range s.loads() {
			for _, p := range s.policies() {
				add(Job{Scenario: sc, Load: l, Policy: p})
			}
		}
	}
	return jobs
}

// Shard returns the jobs of shard i of n: those whose index is i modulo n.
func Shard(jobs []Job, i, n int) []Job {
	var out []Job
	for _, j := range jobs {
		if j.Index%n == i {
			out = append(out, j)
		}
	}
	return out
}

// ParseShard reads "i/n" (0 <= i < n).
func ParseShard(s string) (i, n int, err error) {
	if _, err := fmt.Sscanf(s, "%d/%d", &i, &n); err != nil || n < 1 || i < 0 || i >= n || fmt.Sprintf("%d/%d", i, n) != s {
		return 0, 0, fmt.Errorf("shard %q: want i/n with 0 <= i < n, e.g. 0/4", s)
	}
	return i, n, nil
}
