package experiment

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/envs/faasconfenv"
	"github.com/shoal-project/shoal/workload"
)

// FaaSAdaptive are the methods of the adaptability study (section 5.2.2,
// Fig. 9), followed there by the oracle.
var FaaSAdaptive = []string{"faasconf", "firm", "rambo", "aquatope", "jolteon"}

// FaaSDynamicLevels returns the workload level of each 30 s window of the
// adaptability study's dynamic workload. The paper replays 85 minutes of
// the Azure Functions trace (Fig. 7: stable periods, continuous
// fluctuation, bursty increases); that trace is not among ours, so the
// series is built with its shape from two we have: the slow fluctuation is
// the Wikipedia hourly series, one hour per five minutes (linear between
// hours), and the bursts are the Azure LLM inference trace's arrivals per
// 30 s over their mean (Azure production invocations; its 58 minutes
// repeat). Their product is scaled linearly onto the trained levels, 0.4
// to 1.6 times the scenario's rate.
func FaaSDynamicLevels(windows int) ([]float64, error) {
	traces := workload.NewTraces("")
	wt, err := traces.Load("wikipedia", "")
	if err != nil {
		return nil, err
	}
	wiki, err := wt.Series("", 0)
	if err != nil {
		return nil, err
	}
	at, err := traces.Load("azure-llm", "")
	if err != nil {
		return nil, err
	}
	azure, err := at.Series("", 30*time.Second)
	if err != nil {
		return nil, err
	}
	mean := 0.0
	for _, v := range azure.Values {
		mean += v / float64(azure.Len())
	}
	raw := make([]float64, windows)
	for t := range raw {
		h := float64(t) / 10 // ten windows per hour of the Wikipedia series
		i := int(h)
		slow := wiki.Values[i%wiki.Len()]*(1-(h-float64(i))) + wiki.Values[(i+1)%wiki.Len()]*(h-float64(i))
		raw[t] = slow * azure.Values[t%azure.Len()] / mean
	}
	lo, hi := slices.Min(raw), slices.Max(raw)
	for t, v := range raw {
		raw[t] = 0.4 + 1.2*(v-lo)/(hi-lo)
	}
	return raw, nil
}

// FaaSWindow is one window of a method in the adaptability study.
type FaaSWindow struct {
	Window  int     `json:"window"`
	Level   float64 `json:"level"`
	Met     bool    `json:"met"`
	Latency float64 `json:"latency_s"` // what the QoS bounds in the window (its mean latency or percentile), capped at ten times the QoS
	Price   float64 `json:"price_per_hour"`
	// SafeLow and SafeHigh are the safe price range FaaSConf's proposal
	// was last checked against when the window's configuration was chosen
	// (0, 0: none yet).
	SafeLow, SafeHigh float64 `json:"-"`
}

// FaaSAdaptRow is one method over the seeds.
type FaaSAdaptRow struct {
	Method string `json:"method"`
	// Violations is the share of windows that missed the QoS; Latency the
	// mean of the windows' mean latencies, s; Price the mean price per
	// hour.
	Violations Stat `json:"violations"`
	Latency    Stat `json:"latency_s"`
	Price      Stat `json:"price_per_hour"`
	// Low, Middle and High are seed 1's windows at the lowest, median
	// and highest level (Fig. 10).
	Low    FaaSWindow `json:"low"`
	Middle FaaSWindow `json:"middle"`
	High   FaaSWindow `json:"high"`
}

// Adapt is the adaptability study (section 5.2.2, Figs. 9 and 10) on the
// study's first scenario (the paper's: Parallel): every method configures
// the workflow once per 30 s window for the windows of the dynamic
// workload (FaaSDynamicLevels), each window measured at its level (the
// same seeds for every method), learning online as it goes: FaaSConf's
// agents and the FIRM-like tuner from their trained policies, the
// Bayesian optimisations from their warm-up at level 1 and every window
// since. The oracle runs, in each window, its configuration of the lowest
// trained level at or above the window's.
func (s FaaSConfStudy) Adapt(ctx context.Context, w io.Writer, windows int) ([]FaaSAdaptRow, error) {
	levels, err := FaaSDynamicLevels(windows)
	if err != nil {
		return nil, err
	}
	st, err := s.setup(ctx, s.Scenarios[0], FaaSAdaptive)
	if err != nil {
		return nil, err
	}
	orc, err := s.oracle(ctx, st.sc, st.oracle)
	if err != nil {
		return nil, err
	}
	oracle := func(level float64, _ faasconfenv.Measurement, _ [][]float64, _ bool) []faasconf.Config {
		for _, r := range orc {
			if r.Level >= level-1e-9 && r.Price > 0 {
				return r.Configs
			}
		}
		return orc[len(orc)-1].Configs
	}
	runs := map[string][][]FaaSWindow{}
	for i := range s.Seeds {
		seed := uint64(i + 1)
		for _, m := range FaaSAdaptive {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			env, t, err := s.tuner(m, st, 1, seed, true)
			if err != nil {
				return nil, err
			}
			next := t.Next
			var bounds [][2]float64 // FaaSConf's safe range each window's proposal was checked against
			if ft, ok := t.(FaaSConfTuner); ok {
				next = func(level float64, last faasconfenv.Measurement, obs [][]float64, first bool) []faasconf.Config {
					cs := ft.Next(level, last, obs, first)
					lb, ub, _ := ft.Agent.SES().Used()
					bounds = append(bounds, [2]float64{lb, ub})
					return cs
				}
			}
			ws := runDynamic(env, levels, seed, next)
			for k, b := range bounds {
				ws[k].SafeLow, ws[k].SafeHigh = b[0], b[1]
			}
			runs[m] = append(runs[m], ws)
		}
		runs["oracle"] = append(runs["oracle"], runDynamic(st.hybrid, levels, seed, oracle))
		s.logf("adaptability seed %d: done", seed)
	}
	var rows []FaaSAdaptRow
	for _, m := range append(slices.Clone(FaaSAdaptive), "oracle") {
		rows = append(rows, adaptRow(m, runs[m]))
	}
	if err := writeAdaptTable(w, rows); err != nil {
		return nil, err
	}
	if err := s.writeAdapt(rows, runs); err != nil {
		return nil, err
	}
	return rows, s.writeAdaptReport(rows, runs, st.hybrid.QoS().Latency.Seconds())
}

// runDynamic runs one method over the levels: each window, next proposes
// from the last window's measurement, and the proposal is measured at the
// window's level.
func runDynamic(env *faasconfenv.Env, levels []float64, seed uint64, next func(float64, faasconfenv.Measurement, [][]float64, bool) []faasconf.Config) []FaaSWindow {
	rng := rand.New(rand.NewPCG(seed, 0x64796e61)) // "dyna": the same for every method
	last, obs := env.Measure(levels[0], env.Defaults(), rng)
	out := make([]FaaSWindow, len(levels))
	for t, level := range levels {
		cs := next(level, last, obs, t == 0)
		last, obs = env.Measure(level, cs, rng)
		out[t] = FaaSWindow{Window: t, Level: level, Met: last.Met, Latency: cappedLatency(last.Window, env.QoS()), Price: last.Price}
	}
	return out
}

func adaptRow(method string, runs [][]FaaSWindow) FaaSAdaptRow {
	r := FaaSAdaptRow{Method: method}
	r.Violations = meanCI(runs, func(ws *[]FaaSWindow) float64 {
		v := 0
		for _, w := range *ws {
			if !w.Met {
				v++
			}
		}
		return float64(v) / float64(len(*ws))
	})
	mean := func(f func(FaaSWindow) float64) func(*[]FaaSWindow) float64 {
		return func(ws *[]FaaSWindow) float64 {
			x := 0.0
			for _, w := range *ws {
				x += f(w) / float64(len(*ws))
			}
			return x
		}
	}
	r.Latency = meanCI(runs, mean(func(w FaaSWindow) float64 { return w.Latency }))
	r.Price = meanCI(runs, mean(func(w FaaSWindow) float64 { return w.Price }))
	ws := slices.Clone(runs[0])
	slices.SortStableFunc(ws, func(a, b FaaSWindow) int { return cmp.Compare(a.Level, b.Level) })
	r.Low, r.Middle, r.High = ws[0], ws[len(ws)/2], ws[len(ws)-1]
	return r
}

func writeAdaptTable(w io.Writer, rows []FaaSAdaptRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "method\tQoS violations %\tmean latency s\tprice $/h\tlow: price, latency\tmiddle\thigh")
	for _, r := range rows {
		at := func(x FaaSWindow) string {
			met := ""
			if !x.Met {
				met = " (missed)"
			}
			return fmt.Sprintf("%.2f, %.2f s%s", x.Price, x.Latency, met)
		}
		fmt.Fprintf(tw, "%s\t%.1f ± %.1f\t%.2f ± %.2f\t%.3f ± %.3f\t%s\t%s\t%s\n", r.Method, 100*float64(r.Violations.Mean), 100*float64(r.Violations.CI95),
			float64(r.Latency.Mean), float64(r.Latency.CI95), float64(r.Price.Mean), float64(r.Price.CI95), at(r.Low), at(r.Middle), at(r.High))
	}
	return tw.Flush()
}

func (s FaaSConfStudy) writeAdapt(rows []FaaSAdaptRow, runs map[string][][]FaaSWindow) error {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	err := writeFile(filepath.Join(s.Dir, "adaptability-windows.csv"), func(w io.Writer) error {
		fmt.Fprintln(w, "method,seed,window,level,met,latency_s,price_per_hour,safe_low,safe_high,train_seed")
		for _, m := range append(slices.Clone(FaaSAdaptive), "oracle") {
			for i, ws := range runs[m] {
				for _, x := range ws {
					fmt.Fprintf(w, "%s,%d,%d,%g,%t,%g,%g,%g,%g,%d\n", m, i+1, x.Window, x.Level, x.Met, x.Latency, x.Price, x.SafeLow, x.SafeHigh, s.TrainSeed)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(s.Dir, "adaptability.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Scenario  string         `json:"scenario"`
			TrainSeed uint64         `json:"train_seed"`
			Seeds     int            `json:"seeds"`
			Rows      []FaaSAdaptRow `json:"rows"`
		}{s.Scenarios[0], s.TrainSeed, s.Seeds, rows})
	})
}
