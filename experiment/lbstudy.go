package experiment

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/envs/lbenv"
	"github.com/shoal-project/shoal/experiment/report"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/scenario"
)

// LBStudy is one experiment of the Distr-LB reproduction: for every case (a
// scenario at a load) it trains every learner in the simulator, or reuses
// the policy file a previous run saved, then compares the learned policies
// with the classical selectors and the Oracle on evaluation seeds (the
// scenario's seed + i) that training never uses (training systems have the
// top seed bit set, see lbenv.TrainConfig).
type LBStudy struct {
	Name     string
	Cases    []LBCase
	Learners []LBLearner
	// Baselines are the selectors compared with the learned policies.
	Baselines []string
	// Episodes per training run (0: lbenv's default); Seeds evaluation
	// seeds (0: the scenario's); Horizon of the evaluation (0: the
	// scenario's); TrainSeed seeds training.
	Episodes  int
	Seeds     int
	Horizon   time.Duration
	TrainSeed uint64
	// Dir receives one directory per case and summary.txt.
	Dir string
	// PolicyDir holds the policy files and learning curves (default
	// Dir/policies); studies sharing it reuse each other's policies.
	PolicyDir string
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// LBCase is a scenario evaluated at Load (0: the scenario's), with policies
// trained at TrainLoad (0: Load).
type LBCase struct {
	Scenario  string
	Load      float64
	TrainLoad float64
}

// LBLearner is a learned policy to train and evaluate.
type LBLearner struct {
	Name      string // e.g. "distr-lb/vbf"
	Algorithm lbenv.Algorithm
	Reward    lb.Reward
	Estimate  lb.Estimate
	NoGRU     bool
}

// LBStudyResult is the outcome of every case.
type LBStudyResult struct {
	Study string
	Cases []LBCaseResult
}

// LBCaseResult is one case: the comparison and each learner's training.
type LBCaseResult struct {
	Case     LBCase
	Compare  *Result
	Training []LBTraining
}

// LBTraining is one learner's training run, as saved with its policy.
type LBTraining struct {
	Learner    string
	File       string
	Provenance lb.Provenance
	Curve      []lbenv.Episode
}

// Key names a case in file names.
func (c LBCase) Key() string {
	k := c.Scenario
	if c.Load > 0 {
		k += fmt.Sprintf("@%g", c.Load)
	}
	return k
}

// Run trains what is missing, evaluates every case and writes the results.
func (s *LBStudy) Run(ctx context.Context) (*LBStudyResult, error) {
	out := &LBStudyResult{Study: s.Name}
	for _, c := range s.Cases {
		cr, err := s.runCase(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", s.Name, c.Key(), err)
		}
		out.Cases = append(out.Cases, *cr)
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := writeFile(filepath.Join(s.Dir, "summary.txt"), out.WriteTable); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *LBStudy) logf(format string, args ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, format+"\n", args...)
	}
}

func (s *LBStudy) runCase(ctx context.Context, c LBCase) (*LBCaseResult, error) {
	sc, err := scenario.Lookup(c.Scenario)
	if err != nil {
		return nil, err
	}
	if c.Load > 0 {
		if err := sc.SetLoad(c.Load); err != nil {
			return nil, err
		}
	}
	cr := &LBCaseResult{Case: c}
	learned := map[string]Learned{}
	for _, l := range s.Learners {
		tr, pol, err := s.policy(ctx, c, l)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.Name, err)
		}
		cr.Training = append(cr.Training, *tr)
		learned[l.Name] = LBPolicy(pol)
	}
	if s.Horizon > 0 {
		sc.SetHorizon(s.Horizon)
	}
	cmp := Comparison{Scenario: sc, Seeds: s.Seeds, Selectors: lb.Classical(), Learned: learned,
		Policies: append(append([]string(nil), s.Baselines...), names(s.Learners)...)}
	s.logf("%s: evaluating %d policies x %d seeds", c.Key(), len(cmp.Policies), max(s.Seeds, sc.Seeds))
	res, err := cmp.Run(ctx)
	if err != nil {
		return nil, err
	}
	cr.Compare = res
	res.Figures = append(res.Figures, learningCurves(cr.Training))
	meta := []report.KV{{Key: "study", Value: s.Name}, {Key: "training seed", Value: fmt.Sprint(s.TrainSeed)}}
	for _, t := range cr.Training {
		p := t.Provenance
		meta = append(meta, report.KV{Key: "policy " + t.Learner, Value: fmt.Sprintf("%s: trained on %s, reward %s of %s, %d episodes in %.0f s (%.1f steps/s); the policy of episode %d (after %d steps) validated best",
			t.File, p.Scenario, p.Reward, p.Estimate, p.Episodes, p.WallSeconds, p.StepsPerSecond, p.Selected, p.EnvSteps)})
	}
	if err := res.WriteFiles(filepath.Join(s.Dir, c.Key()), meta); err != nil {
		return nil, err
	}
	return cr, nil
}

func names(ls []LBLearner) []string {
	var n []string
	for _, l := range ls {
		n = append(n, l.Name)
	}
	return n
}

// policy loads the learner's policy for the case from the study's
// directory, or trains and saves it.
func (s *LBStudy) policy(ctx context.Context, c LBCase, l LBLearner) (*LBTraining, *lb.Policy, error) {
	load := c.TrainLoad
	if load == 0 {
		load = c.Load
	}
	key := c.Scenario
	if load > 0 {
		key += fmt.Sprintf("@%g", load)
	}
	dir := s.PolicyDir
	if dir == "" {
		dir = filepath.Join(s.Dir, "policies")
	}
	base := filepath.Join(dir, key+"-"+strings.ReplaceAll(l.Name, "/", "-"))
	file := base + ".slb"
	tr := &LBTraining{Learner: l.Name, File: file}
	if f, err := os.Open(file); err == nil {
		defer f.Close()
		p, err := lb.ReadPolicy(f)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w (delete it to retrain)", file, err)
		}
		tr.Provenance = p.Provenance
		tr.Curve, err = readCurve(base + ".curve.csv")
		s.logf("%s: %s: reusing %s", key, l.Name, file)
		return tr, p, err
	}
	sc, err := scenario.Lookup(c.Scenario)
	if err != nil {
		return nil, nil, err
	}
	if load > 0 {
		if err := sc.SetLoad(load); err != nil {
			return nil, nil, err
		}
	}
	start := time.Now()
	cfg := lbenv.TrainConfig{Algorithm: l.Algorithm, Reward: l.Reward, Estimate: l.Estimate, NoGRU: l.NoGRU, Episodes: s.Episodes, Seed: s.TrainSeed,
		Progress: func(e lbenv.Episode) {
			if e.Index%5 == 0 {
				s.logf("%s: %s: episode %d, mean %.3f s, p99 %.3f s, %d steps, %.0f s", key, l.Name, e.Index, e.Mean, e.P99, e.EnvSteps, time.Since(start).Seconds())
			}
		}}
	t, err := lbenv.Train(ctx, sc, cfg)
	if err != nil {
		return nil, nil, err
	}
	wall := time.Since(start).Seconds()
	p := t.Policy
	p.Provenance.WallSeconds, p.Provenance.StepsPerSecond = wall, float64(t.EnvSteps)/wall
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, nil, err
	}
	if err := writeFile(file, p.Write); err != nil {
		return nil, nil, err
	}
	if err := writeFile(base+".curve.csv", func(w io.Writer) error { return WriteCurve(w, t.Curve) }); err != nil {
		return nil, nil, err
	}
	s.logf("%s: %s: trained in %.0f s (%d steps, %.1f steps/s), saved %s", key, l.Name, wall, t.EnvSteps, p.Provenance.StepsPerSecond, file)
	tr.Provenance, tr.Curve = p.Provenance, t.Curve
	return tr, p, nil
}

// WriteCurve writes a learning curve as CSV: episode, environment steps,
// mean and p99 completion time (s) while exploring, the deterministic
// policy's validation mean (s, NaN when not run), and every agent's return.
func WriteCurve(w io.Writer, curve []lbenv.Episode) error {
	fmt.Fprintln(w, "episode,env_steps,mean_s,p99_s,validation_mean_s,returns")
	for _, e := range curve {
		rs := make([]string, len(e.Returns))
		for i, r := range e.Returns {
			rs[i] = fmt.Sprintf("%g", r)
		}
		if _, err := fmt.Fprintf(w, "%d,%d,%g,%g,%g,%s\n", e.Index, e.EnvSteps, e.Mean, e.P99, e.Validation, strings.Join(rs, " ")); err != nil {
			return err
		}
	}
	return nil
}

func readCurve(path string) ([]lbenv.Episode, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var curve []lbenv.Episode
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i, line := range lines[1:] {
		f := strings.Split(line, ",")
		e := lbenv.Episode{Validation: math.NaN()}
		var err error
		if len(f) < 5 {
			err = fmt.Errorf("want at least 5 fields, got %d", len(f))
		}
		for k, dst := range []any{&e.Index, &e.EnvSteps, &e.Mean, &e.P99} {
			if err == nil {
				_, err = fmt.Sscan(f[k], dst)
			}
		}
		if err == nil && len(f) >= 6 {
			_, err = fmt.Sscan(f[4], &e.Validation)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, i+2, err)
		}
		curve = append(curve, e)
	}
	return curve, nil
}

// learningCurves plots every learner's mean completion time per training
// episode.
func learningCurves(ts []LBTraining) report.Figure {
	f := report.Figure{Title: "Learning curves", XLabel: "training episode", YLabel: "mean completion time (s)", LogY: true,
		Caption: "Mean completion time per training episode: while exploring (a fresh system per episode; the first " +
			"episodes act at random), and of the deterministic policy on the validation systems every few episodes (the saved policy is the best of these)."}
	for _, t := range ts {
		s := report.Series{Name: t.Learner + " (exploring)"}
		v := report.Series{Name: t.Learner + " (validation)"}
		for _, e := range t.Curve {
			s.X = append(s.X, float64(e.Index))
			s.Y = append(s.Y, e.Mean)
			if !math.IsNaN(e.Validation) {
				v.X = append(v.X, float64(e.Index))
				v.Y = append(v.Y, e.Validation)
			}
		}
		f.Series = append(f.Series, s, v)
	}
	return f
}

// WriteTable prints, per case, every policy's mean and p99 completion time
// with their confidence intervals, the mean's ratio to the Oracle, and the
// p99's change against the best classical selector with its paired 95%
// confidence interval over seeds (same arrivals).
func (r *LBStudyResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tpolicy\tmean (s)\tp99 (s)\tmean/oracle\tp99 vs best classical\n", r.Study)
	for _, c := range r.Cases {
		res := c.Compare
		oracle := res.policy("oracle")
		best := res.bestClassical()
		for i := range res.Policies {
			p := &res.Policies[i]
			ratio, vs := "", ""
			if oracle != nil {
				ratio = fmt.Sprintf("%.3f", float64(p.Summary.Mean.Mean)/float64(oracle.Summary.Mean.Mean))
			}
			if best != nil && !lb.IsClassical(p.Policy) && !lb.IsBound(p.Policy) {
				m, h := pairedChange(p, best)
				vs = fmt.Sprintf("%+.1f%% ± %.1f%% (vs %s)", 100*m, 100*h, best.Policy)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Case.Key(), p.Policy, cell(p.Summary.Mean), cell(p.Summary.P99), ratio, vs)
		}
	}
	return tw.Flush()
}

func (r *Result) policy(name string) *PolicyResult {
	for i := range r.Policies {
		if r.Policies[i].Policy == name {
			return &r.Policies[i]
		}
	}
	return nil
}

// bestClassical is the classical selector (not the Oracle) with the lowest
// mean p99 over seeds.
func (r *Result) bestClassical() *PolicyResult {
	var best *PolicyResult
	for i := range r.Policies {
		p := &r.Policies[i]
		if lb.IsClassical(p.Policy) && (best == nil || p.Summary.P99.Mean < best.Summary.P99.Mean) {
			best = p
		}
	}
	return best
}

// pairedChange is the mean over seeds of p99(p)/p99(q) − 1 and the
// half-width of its 95% confidence interval.
func pairedChange(p, q *PolicyResult) (float64, float64) {
	var xs []float64
	for s := range p.Runs {
		if s < len(q.Runs) && q.Runs[s].Seed == p.Runs[s].Seed {
			xs = append(xs, float64(p.Runs[s].P99)/float64(q.Runs[s].P99)-1)
		}
	}
	m, h := metrics.MeanCI(xs, 0.95)
	if math.IsNaN(h) {
		h = 0
	}
	return m, h
}
