package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/envs/faasconfenv"
	"github.com/shoal-project/shoal/scenario"
)

// FaaSConfStudy is FaaSConf's effectiveness comparison (section 5.2.1,
// Fig. 8): for every workflow, FaaSConf (trained, or reused from
// PolicyDir), random search and the Aquatope-like Bayesian optimisation
// each tune the workflow for Iterations rounds at each workload level,
// Seeds sessions each, on the same measurement seeds. A session's result is
// the price per hour (equation 2) of the cheapest configuration it measured
// that met the QoS. The Bayesian optimisation is warmed up with Warm random
// measurements at the level (the paper warms every method up with training
// samples; FaaSConf's are its training history).
type FaaSConfStudy struct {
	Scenarios         []string
	Seeds, Iterations int
	Warm              int
	TrainSeed         uint64
	Budget            time.Duration // wall-time cap of each training
	Dir, PolicyDir    string
	Now               func() time.Time
	Log               io.Writer
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
	// Met is the mean number of rounds whose configuration met the QoS.
	Met Stat `json:"met"`
}

// FaaSConfTuners are the methods of the effectiveness study, in order.
var FaaSConfTuners = []string{"faasconf", "random", "aquatope"}

// Run trains or loads the policies, runs the sessions, prints the table
// and writes effectiveness.csv and effectiveness.json into Dir.
func (s FaaSConfStudy) Run(ctx context.Context, w io.Writer) ([]FaaSConfCell, error) {
	var cells []FaaSConfCell
	for _, name := range s.Scenarios {
		sc, err := scenario.Lookup(name)
		if err != nil {
			return nil, err
		}
		pol, err := s.policy(ctx, sc)
		if err != nil {
			return nil, err
		}
		env, err := faasconfenv.New(sc, faasconfenv.Config{})
		if err != nil {
			return nil, err
		}
		s.logf("%s: %d functions, QoS %v mean latency with %.0f%% served", name, len(env.Functions()), env.QoS().Latency, 100*env.QoS().MinServed)
		for li, level := range pol.Levels {
			runs := map[string][]FaaSSession{}
			for i := range s.Seeds {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				seed := uint64(i + 1)
				measure := func() *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6d656173+uint64(li))) } // "meas": the same for every method
				agent := faasconf.NewAgent(pol, faasconf.Options{Seed: seed})
				runs["faasconf"] = append(runs["faasconf"], RunFaaSSession(env, level, FaaSConfTuner{Agent: agent}, s.Iterations, measure()))
				rs := RandomTuner{Space: env.Space(), N: len(env.Functions()), Rng: rand.New(rand.NewPCG(seed, 0x72616e64))} // "rand"
				runs["random"] = append(runs["random"], RunFaaSSession(env, level, rs, s.Iterations, measure()))
				aq, err := NewAquatopeTuner(env.Space(), len(env.Functions()), env.QoS(), s.warm(env, level, seed), rand.New(rand.NewPCG(seed, 0x6171)))
				if err != nil {
					return nil, err
				}
				runs["aquatope"] = append(runs["aquatope"], RunFaaSSession(env, level, aq, s.Iterations, measure()))
			}
			for _, t := range FaaSConfTuners {
				cells = append(cells, faasCell(name, level, t, runs[t]))
			}
			s.logf("%s level %g: done", name, level)
		}
	}
	if err := WriteFaaSConfTable(w, cells); err != nil {
		return nil, err
	}
	return cells, s.write(cells)
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
	var found []FaaSSession
	for _, r := range runs {
		if r.Best > 0 {
			found = append(found, r)
		}
	}
	c.Found = len(found)
	c.Best = meanCI(found, func(r *FaaSSession) float64 { return r.Best })
	c.Met = meanCI(runs, func(r *FaaSSession) float64 { return float64(r.Met) })
	return c
}

// WriteFaaSConfTable prints Fig. 8 as a table: per workflow and level, each
// method's cheapest price meeting the QoS ($/h, mean ± 95% CI over the
// sessions that found one, and how many did).
func WriteFaaSConfTable(w io.Writer, cells []FaaSConfCell) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "workflow\tlevel\t%s\n", strings.Join(FaaSConfTuners, "\t"))
	for i := 0; i < len(cells); i += len(FaaSConfTuners) {
		row := cells[i : i+len(FaaSConfTuners)]
		fmt.Fprintf(tw, "%s\t%g", row[0].Scenario, row[0].Level)
		for _, c := range row {
			if c.Found == 0 {
				fmt.Fprintf(tw, "\tX (0/%d)", c.Sessions)
				continue
			}
			fmt.Fprintf(tw, "\t%.3f ± %.3f (%d/%d)", float64(c.Best.Mean), float64(c.Best.CI95), c.Found, c.Sessions)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func (s FaaSConfStudy) write(cells []FaaSConfCell) error {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	err := writeFile(filepath.Join(s.Dir, "effectiveness.csv"), func(w io.Writer) error {
		fmt.Fprintln(w, "workflow,level,tuner,best_per_hour,best_ci95,found,sessions,met_rounds,met_rounds_ci95,train_seed")
		for _, c := range cells {
			fmt.Fprintf(w, "%s,%g,%s,%g,%g,%d,%d,%g,%g,%d\n", c.Scenario, c.Level, c.Tuner, float64(c.Best.Mean), float64(c.Best.CI95),
				c.Found, c.Sessions, float64(c.Met.Mean), float64(c.Met.CI95), s.TrainSeed)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(s.Dir, "effectiveness.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			TrainSeed uint64         `json:"train_seed"`
			Seeds     int            `json:"seeds"`
			Cells     []FaaSConfCell `json:"cells"`
		}{s.TrainSeed, s.Seeds, cells})
	})
}

// policy loads the workflow's FaaSConf policy from PolicyDir, or trains and
// saves it.
func (s FaaSConfStudy) policy(ctx context.Context, sc *scenario.Scenario) (*faasconf.Policy, error) {
	file := filepath.Join(s.PolicyDir, fmt.Sprintf("faasconf-%s-seed%d.policy", sc.Name, s.TrainSeed))
	var p *faasconf.Policy
	err := reuseOrTrain(file, s.logf, func(r io.Reader) (err error) { p, err = faasconf.ReadPolicy(r); return err },
		func() (func(io.Writer) error, error) {
			cfg := faasconfenv.DefaultTrainConfig()
			cfg.Seed = s.TrainSeed
			if s.Budget > 0 && s.Now != nil {
				cfg.Deadline, cfg.Now = s.Now().Add(s.Budget), s.Now
			}
			cfg.Progress = func(e faasconfenv.Episode) {
				if e.Index%20 == 0 {
					s.logf("train %s: episode %d, level %g, reward %.3f, QoS met %d/15", sc.Name, e.Index, e.Level, e.Reward, e.Met)
				}
			}
			start := time.Now()
			s.logf("training faasconf on %s", sc.Name)
			tr, err := faasconfenv.Train(ctx, sc, cfg)
			if err != nil {
				return nil, err
			}
			p = tr.Policy
			p.Provenance.WallSeconds = time.Since(start).Seconds()
			return p.Write, nil
		})
	return p, err
}

func (s FaaSConfStudy) logf(format string, a ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, format+"\n", a...)
	}
}
