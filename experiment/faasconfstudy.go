package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/envs/faasconfenv"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/scenario"
)

// FaaSConfStudy is FaaSConf's comparison of tuning methods (section
// 5.2.1, Fig. 8, and the ablations of 5.2.3, Figs. 11-14): for every
// workflow, each method tunes the workflow for Iterations rounds at each
// workload level, Seeds sessions each, on the same measurement seeds. A
// session's result is the price per hour (equation 2) of the cheapest
// configuration it measured that met the QoS (the paper's metric), and
// the cheapest of those that also meets the QoS on the oracle's three
// measurement seeds (verified). The Bayesian optimisations are warmed up
// with Warm random measurements at the level (the paper warms every
// method up with training samples; the learners' are their training
// history). The learners are trained, or reused from PolicyDir; the oracle
// (FaaSOracle) is searched, or reused from there.
type FaaSConfStudy struct {
	Name              string   // the study: its files are Dir/Name.csv and Name.json
	Methods           []string // default FaaSEffectiveness
	Scenarios         []string
	Seeds, Iterations int
	// FirstSeed is the first session's measurement seed (default 1; the
	// validation sessions, where settings are chosen, start at 1001).
	FirstSeed      uint64
	Warm           int
	Oracle         bool // search (or reuse) the exhaustive oracle
	TrainSeed      uint64
	Budget         time.Duration // wall-time cap of each training
	Dir, PolicyDir string
	Now            func() time.Time
	Log            io.Writer
}

// FaaSConfCell is one workflow, level and method over the sessions.
type FaaSConfCell struct {
	Scenario string  `json:"scenario"`
	Level    float64 `json:"level"`
	Tuner    string  `json:"tuner"`
	// Best is the mean over the sessions that found a configuration
	// meeting the QoS (Found of Sessions) of its price per hour.
	Best     Stat `json:"best"`
	Found    int  `json:"found"`
	Sessions int  `json:"sessions"`
	// Verified is the same for the configurations that also met the QoS
	// on the oracle's seeds (VerifiedFound sessions had one).
	Verified      Stat `json:"verified"`
	VerifiedFound int  `json:"verified_found"`
	// Met is the mean number of rounds whose configuration met the QoS.
	Met Stat `json:"met"`
}

// The methods. Learners: faasconf (AttMF in the hybrid space, with the
// safe exploration), its ablations faasconf-mf, -maddpg and -ddpg (the
// critic of Fig. 13), -hw (the hardware-only space, Fig. 11) and -noses
// (without the safe exploration, Fig. 14); faasconf-actors is the trained
// actors alone (no safe exploration, no noise, no fine-tuning). Baselines,
// in the hardware-only space as the paper runs them (section 5.2.1: they
// neglect the concurrency): firm (FirmTuner), rambo (RAMBOTuner), aquatope
// (AquatopeTuner), random; beyond the paper, jolteon (JolteonTuner, the
// 2024 state of the art, in the same space), and given the hybrid space:
// firm-hybrid (Fig. 12), aquatope-hybrid and random-hybrid.
var (
	FaaSEffectiveness = []string{"faasconf", "firm", "rambo", "aquatope", "random", "jolteon", "aquatope-hybrid", "random-hybrid"}
	FaaSAblation      = []string{"faasconf", "faasconf-mf", "faasconf-maddpg", "faasconf-ddpg", "faasconf-hw", "faasconf-noses", "firm", "firm-hybrid"}
	// FaaSValidation are the methods of the validation sessions: FaaSConf,
	// and its trained actors alone (no safe exploration, no noise, no
	// fine-tuning).
	FaaSValidation = []string{"faasconf", "faasconf-actors"}
	// FaaSBaselines are the paper's four baselines and the Jolteon-like.
	FaaSBaselines = []string{"firm", "rambo", "aquatope", "random", "jolteon"}
)

// faasLearner is the policy a learning method needs.
type faasLearner struct {
	variant rl.MADDPGVariant
	hw      bool
}

func learnerOf(method string) (faasLearner, bool) {
	switch method {
	case "faasconf", "faasconf-noses", "faasconf-actors":
		return faasLearner{rl.AttMF, false}, true
	case "faasconf-mf":
		return faasLearner{rl.MeanField, false}, true
	case "faasconf-maddpg":
		return faasLearner{rl.Vanilla, false}, true
	case "faasconf-ddpg", "firm-hybrid":
		return faasLearner{rl.IndependentDDPG, false}, true
	case "faasconf-hw":
		return faasLearner{rl.AttMF, true}, true
	case "firm":
		return faasLearner{rl.IndependentDDPG, true}, true
	}
	return faasLearner{}, false
}

// Run trains or loads the policies, runs the sessions, prints the table
// and writes Name.csv, Name.json and the report Name.html into Dir.
func (s FaaSConfStudy) Run(ctx context.Context, w io.Writer) ([]FaaSConfCell, error) {
	if len(s.Methods) == 0 {
		s.Methods = FaaSEffectiveness
	}
	var cells []FaaSConfCell
	for _, name := range s.Scenarios {
		c, err := s.workflow(ctx, name)
		if err != nil {
			return nil, err
		}
		cells = append(cells, c...)
	}
	if err := s.WriteTable(w, cells); err != nil {
		return nil, err
	}
	if err := s.write(cells); err != nil {
		return nil, err
	}
	return cells, s.writeFaaSReport(cells)
}

// faasSetup is a workflow, its environments in the hybrid and the
// hardware-only space (with the same QoS), its methods' policies and its
// oracle (three seeds, 0.125-core steps).
type faasSetup struct {
	sc         *scenario.Scenario
	hybrid, hw *faasconfenv.Env
	pols       map[faasLearner]*faasconf.Policy
	oracle     FaaSOracle
}

// setup returns the workflow's setup for the methods, training or loading
// their policies.
func (s FaaSConfStudy) setup(ctx context.Context, name string, methods []string) (*faasSetup, error) {
	sc, err := scenario.Lookup(name)
	if err != nil {
		return nil, err
	}
	st := &faasSetup{sc: sc, pols: map[faasLearner]*faasconf.Policy{}}
	if st.hybrid, err = faasconfenv.New(sc, faasconfenv.Config{}); err != nil {
		return nil, err
	}
	if st.hw, err = faasconfenv.New(sc, faasconfenv.Config{Space: st.hybrid.Space().HardwareOnly(), QoS: st.hybrid.QoS()}); err != nil {
		return nil, err
	}
	st.oracle = FaaSOracle{Env: st.hybrid, Seeds: 3, CPUStep: 0.125}
	for _, m := range methods {
		if l, ok := learnerOf(m); ok && st.pols[l] == nil {
			if st.pols[l], err = s.policy(ctx, sc, l, st.hybrid.QoS()); err != nil {
				return nil, err
			}
		}
	}
	return st, nil
}

// workflow runs every method at every level of one workflow.
func (s FaaSConfStudy) workflow(ctx context.Context, name string) ([]FaaSConfCell, error) {
	st, err := s.setup(ctx, name, s.Methods)
	if err != nil {
		return nil, err
	}
	hybrid := st.hybrid
	var orc []OracleResult
	if s.Oracle {
		if orc, err = s.oracle(ctx, st.sc, st.oracle); err != nil {
			return nil, err
		}
	}
	s.logf("%s: %d functions, QoS %v with %.0f%% served", name, len(hybrid.Functions()), hybrid.QoS(), 100*hybrid.QoS().MinServed)
	var cells []FaaSConfCell
	for li, level := range faasconfenv.DefaultConfig().Levels {
		runs := map[string][]FaaSSession{}
		for i := range s.Seeds {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			seed := max(s.FirstSeed, 1) + uint64(i)
			measure := func() *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6d656173+uint64(li))) } // "meas": the same for every method
			for _, m := range s.Methods {
				env, t, err := s.tuner(m, st, level, seed, false)
				if err != nil {
					return nil, err
				}
				r := RunFaaSSession(env, level, t, s.Iterations, measure())
				r.Verified = st.oracle.verify(level, r)
				runs[m] = append(runs[m], r)
			}
		}
		for _, m := range s.Methods {
			cells = append(cells, faasCell(name, level, m, runs[m]))
		}
		if s.Oracle {
			o := FaaSConfCell{Scenario: name, Level: level, Tuner: "oracle", Sessions: 1}
			if p := orc[li].Price; p > 0 {
				o.Best, o.Found, o.Verified, o.VerifiedFound = Stat{Mean: Num(p)}, 1, Stat{Mean: Num(p)}, 1
			}
			cells = append(cells, o)
		}
		s.logf("%s level %g: done", name, level)
	}
	return cells, nil
}

// tuner returns the method's tuner for one session and the environment
// (space) it tunes in; FaaSConf's agent explores every round, or, with
// settle, as it does when it serves.
func (s FaaSConfStudy) tuner(m string, st *faasSetup, level float64, seed uint64, settle bool) (*faasconfenv.Env, FaaSTuner, error) {
	env := st.hw
	if strings.HasSuffix(m, "-hybrid") {
		env = st.hybrid
	}
	n := len(st.hybrid.Functions())
	if l, ok := learnerOf(m); ok {
		p := st.pols[l]
		if l.hw {
			env = st.hw
		} else {
			env = st.hybrid
		}
		if strings.HasPrefix(m, "firm") {
			return env, &FirmTuner{Policy: p, Noise: 0.1, Rng: rand.New(rand.NewPCG(seed, 0x6669726d))}, nil // "firm"
		}
		alone := m == "faasconf-actors"
		opt := faasconf.Options{Seed: seed, NoSES: m == "faasconf-noses" || alone, Frozen: alone, Restless: !settle}
		return env, FaaSConfTuner{Agent: faasconf.NewAgent(p, opt)}, nil
	}
	switch strings.TrimSuffix(m, "-hybrid") {
	case "random":
		return env, RandomTuner{Space: env.Space(), N: n, Rng: rand.New(rand.NewPCG(seed, 0x72616e64))}, nil // "rand"
	case "aquatope":
		t, err := NewAquatopeTuner(env.Space(), n, env.QoS(), s.warm(env, level, seed), rand.New(rand.NewPCG(seed, 0x6171)))
		return env, t, err
	case "jolteon":
		return env, NewJolteonTuner(env, s.warm(env, level, seed), seed), nil
	case "rambo":
		return env, NewRAMBOTuner(env.Space(), n, env.QoS(), s.warm(env, level, seed), rand.New(rand.NewPCG(seed, 0x72616d))), nil
	}
	return nil, nil, fmt.Errorf("faasconf study: unknown method %q", m)
}

// warm returns Warm random measurements at the level (seeds of their own).
func (s FaaSConfStudy) warm(env *faasconfenv.Env, level float64, seed uint64) []faasconfenv.Measurement {
	rng := rand.New(rand.NewPCG(seed, 0x7761726d)) // "warm"
	rs := RandomTuner{Space: env.Space(), N: len(env.Functions()), Rng: rng}
	out := make([]faasconfenv.Measurement, s.Warm)
	for k := range out {
		out[k], _ = env.Measure(level, rs.Next(level, faasconfenv.Measurement{}, nil, true), rng)
	}
	return out
}

func faasCell(scenario string, level float64, tuner string, runs []FaaSSession) FaaSConfCell {
	c := FaaSConfCell{Scenario: scenario, Level: level, Tuner: tuner, Sessions: len(runs)}
	var found, verified []FaaSSession
	for _, r := range runs {
		if r.Best > 0 {
			found = append(found, r)
		}
		if r.Verified > 0 {
			verified = append(verified, r)
		}
	}
	c.Found, c.VerifiedFound = len(found), len(verified)
	c.Best = meanCI(found, func(r *FaaSSession) float64 { return r.Best })
	c.Verified = meanCI(verified, func(r *FaaSSession) float64 { return r.Verified })
	c.Met = meanCI(runs, func(r *FaaSSession) float64 { return float64(r.Met) })
	return c
}

// WriteTable prints Fig. 8 as a table: per workflow and level, each
// method's cheapest price meeting the QoS ($/h, the mean over the sessions
// that found one, and how many did), then per workflow how far FaaSConf
// is from the best of the paper's baselines and from the oracle.
func (s FaaSConfStudy) WriteTable(w io.Writer, cells []FaaSConfCell) error {
	cols := slices.Clone(s.Methods)
	if s.Oracle {
		cols = append(cols, "oracle")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "workflow\tlevel\t%s\n", strings.Join(cols, "\t"))
	for i := 0; i < len(cells); i += len(cols) {
		row := cells[i : i+len(cols)]
		fmt.Fprintf(tw, "%s\t%g", row[0].Scenario, row[0].Level)
		for _, c := range row {
			if c.Found == 0 {
				fmt.Fprintf(tw, "\tX (0/%d)", c.Sessions)
				continue
			}
			fmt.Fprintf(tw, "\t%.3f (%d/%d)", float64(c.Best.Mean), c.Found, c.Sessions)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, g := range s.gaps(cells) {
		fmt.Fprintf(w, "%s: faasconf %+.1f%% vs the best baseline (%d levels), verified %+.1f%% vs the oracle (%d levels)\n",
			g.Scenario, 100*g.VsBaseline, g.BaselineLevels, 100*g.VsOracle, g.OracleLevels)
	}
	return nil
}

// gaps are FaaSGaps when the study runs FaaSConf against the paper's four
// baselines, else none.
func (s FaaSConfStudy) gaps(cells []FaaSConfCell) []FaaSGap {
	for _, b := range append([]string{"faasconf"}, FaaSBaselines...) {
		if !slices.Contains(s.Methods, b) {
			return nil
		}
	}
	return FaaSGaps(cells)
}

// FaaSGap is, for one workflow, FaaSConf's price relative to the cheapest
// of the paper's four baselines (mean over the levels at which FaaSConf
// and at least one baseline found a configuration meeting the QoS; −0.2
// is 20% cheaper) and, verified, to the oracle (mean over the levels both
// have one).
type FaaSGap struct {
	Scenario                     string
	VsBaseline, VsOracle         float64
	BaselineLevels, OracleLevels int
}

// FaaSGaps returns the gaps of every workflow whose cells hold faasconf.
func FaaSGaps(cells []FaaSConfCell) []FaaSGap {
	type key struct {
		sc    string
		level float64
	}
	by := map[key]map[string]FaaSConfCell{}
	var order []string
	for _, c := range cells {
		k := key{c.Scenario, c.Level}
		if by[k] == nil {
			by[k] = map[string]FaaSConfCell{}
		}
		by[k][c.Tuner] = c
		if !slices.Contains(order, c.Scenario) {
			order = append(order, c.Scenario)
		}
	}
	var out []FaaSGap
	for _, sc := range order {
		g := FaaSGap{Scenario: sc}
		for k, m := range by {
			f, ok := m["faasconf"]
			if k.sc != sc || !ok {
				continue
			}
			best := 0.0
			for _, b := range FaaSBaselines {
				if c, ok := m[b]; ok && c.Found > 0 && (best == 0 || float64(c.Best.Mean) < best) {
					best = float64(c.Best.Mean)
				}
			}
			if f.Found > 0 && best > 0 {
				g.VsBaseline += float64(f.Best.Mean)/best - 1
				g.BaselineLevels++
			}
			if o, ok := m["oracle"]; ok && o.Found > 0 && f.VerifiedFound > 0 {
				g.VsOracle += float64(f.Verified.Mean)/float64(o.Best.Mean) - 1
				g.OracleLevels++
			}
		}
		if g.BaselineLevels > 0 {
			g.VsBaseline /= float64(g.BaselineLevels)
		}
		if g.OracleLevels > 0 {
			g.VsOracle /= float64(g.OracleLevels)
		}
		if g.BaselineLevels+g.OracleLevels > 0 {
			out = append(out, g)
		}
	}
	return out
}

func (s FaaSConfStudy) write(cells []FaaSConfCell) error {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	err := writeFile(filepath.Join(s.Dir, s.Name+".csv"), func(w io.Writer) error {
		fmt.Fprintln(w, "workflow,level,tuner,best_per_hour,best_ci95,found,verified_per_hour,verified_ci95,verified_found,sessions,met_rounds,met_rounds_ci95,train_seed")
		for _, c := range cells {
			fmt.Fprintf(w, "%s,%g,%s,%g,%g,%d,%g,%g,%d,%d,%g,%g,%d\n", c.Scenario, c.Level, c.Tuner, float64(c.Best.Mean), float64(c.Best.CI95),
				c.Found, float64(c.Verified.Mean), float64(c.Verified.CI95), c.VerifiedFound, c.Sessions, float64(c.Met.Mean), float64(c.Met.CI95), s.TrainSeed)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(s.Dir, s.Name+".json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			TrainSeed uint64         `json:"train_seed"`
			Seeds     int            `json:"seeds"`
			Cells     []FaaSConfCell `json:"cells"`
			Gaps      []FaaSGap      `json:"gaps"`
		}{s.TrainSeed, s.Seeds, cells, s.gaps(cells)})
	})
}

// policy loads the workflow's policy of the learner from PolicyDir, or
// trains and saves it (the QoS the study's, whatever the space).
func (s FaaSConfStudy) policy(ctx context.Context, sc *scenario.Scenario, l faasLearner, qos faasconf.QoS) (*faasconf.Policy, error) {
	tag := ""
	if l.variant != rl.AttMF {
		tag += "-" + string(l.variant)
	}
	if l.hw {
		tag += "-hw"
	}
	file := filepath.Join(s.PolicyDir, fmt.Sprintf("faasconf-%s%s-seed%d.policy", sc.Name, tag, s.TrainSeed))
	var p *faasconf.Policy
	err := reuseOrTrain(file, s.logf, func(r io.Reader) (err error) { p, err = faasconf.ReadPolicy(r); return err },
		func() (func(io.Writer) error, error) {
			cfg := faasconfenv.DefaultTrainConfig()
			cfg.Seed, cfg.Learner.Variant, cfg.Env.QoS = s.TrainSeed, l.variant, qos
			if l.hw {
				cfg.Env.Space = faasconfenv.SpaceOf(sc).HardwareOnly()
			}
			if s.Budget > 0 && s.Now != nil {
				cfg.Deadline, cfg.Now = s.Now().Add(s.Budget), s.Now
			}
			cfg.Progress = func(e faasconfenv.Episode) {
				if e.Index%20 == 0 {
					s.logf("train %s%s: episode %d, level %g, reward %.3f, QoS met %d/15", sc.Name, tag, e.Index, e.Level, e.Reward, e.Met)
				}
			}
			start := time.Now()
			s.logf("training faasconf%s on %s", tag, sc.Name)
			tr, err := faasconfenv.TrainBest(ctx, sc, cfg, faasconfenv.DefaultSeeds)
			if err != nil {
				return nil, err
			}
			p = tr.Policy
			p.Provenance.WallSeconds = time.Since(start).Seconds()
			return p.Write, nil
		})
	return p, err
}

// oracle loads the workflow's oracle from PolicyDir, or searches every
// level and saves it.
func (s FaaSConfStudy) oracle(ctx context.Context, sc *scenario.Scenario, o FaaSOracle) ([]OracleResult, error) {
	file := filepath.Join(s.PolicyDir, fmt.Sprintf("oracle-%s.json", sc.Name))
	var out []OracleResult
	err := reuseOrTrain(file, s.logf, func(r io.Reader) error { return json.NewDecoder(r).Decode(&out) },
		func() (func(io.Writer) error, error) {
			for _, level := range faasconfenv.DefaultConfig().Levels {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				start := time.Now()
				r := o.Search(level)
				s.logf("oracle %s level %g: %.3f $/h after %d measurements (%s)", sc.Name, level, r.Price, r.Measured, time.Since(start).Round(time.Second))
				out = append(out, r)
			}
			return func(w io.Writer) error {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}, nil
		})
	if err == nil && len(out) != len(faasconfenv.DefaultConfig().Levels) {
		err = fmt.Errorf("%s: %d levels, want %d", file, len(out), len(faasconfenv.DefaultConfig().Levels))
	}
	return out, err
}

func (s FaaSConfStudy) logf(format string, a ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, format+"\n", a...)
	}
}
