package forecast

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/workload"
)

// longSeed is the seed of the measurement in the package documentation.
const longSeed = 1

// TestTraceForecasts measures the GRU forecaster against LastValue and
// SeasonalNaive (season one day) on the embedded traces: split each series
// 70/30 in time, choose the GRU's settings with Select on the first 70%
// alone, then score once, by rolling-origin MAPE, on the last 30%. It takes
// a few minutes on 2 cores, so it runs only with SHOAL_LONG=1:
//
//	SHOAL_LONG=1 go test -run TestTraceForecasts -v ./learn/forecast
//
// The table it logs is the one in doc.go.
func TestTraceForecasts(t *testing.T) {
	if os.Getenv("SHOAL_LONG") == "" {
		t.Skip("set SHOAL_LONG=1 to measure the forecasters on the embedded traces")
	}
	alibaba := readAlibaba(t)
	cpu := aggregate(t, column(t, alibaba, "cpu_util_percent"), time.Minute)
	nasa := aggregate(t, readNASA(t), time.Minute)
	wiki := readWikipedia(t)

	// The settings are fixed per period length, the same for every trace
	// of that length, and never looked at on the test segment: Horizon is
	// what the table reports, Epochs a cap (the Validation hold-out keeps
	// the best epoch), EpochWindows a bound on the cost of an epoch (it
	// binds only on NASA). What Select chooses from is candidateGrid: the
	// window (half an hour or an hour of minutes, one or two days of hours)
	// and the log transform.
	minutes := Config{Hidden: 32, Horizon: 25, Epochs: 30, EpochWindows: 16384, Validation: 0.2}
	hours := Config{Hidden: 32, Horizon: 5, Epochs: 200, Validation: 0.2}
	type trace struct {
		name, period string
		series       [][]float64
		season       int   // one day, in periods
		horizons     []int // reported, in periods
		candidates   []Config
	}
	traces := []trace{
		{"alibaba cpu %", "1 min", univariate(cpu.Values), 1440, []int{1, 5, 25}, candidateGrid(minutes, 30, 60)},
		{"nasa req/s", "1 min", univariate(nasa.Values), 1440, []int{1, 5, 25}, candidateGrid(minutes, 30, 60)},
		{"wikipedia req/s", "1 h", univariate(wiki.Values), 24, []int{1, 5}, candidateGrid(hours, 24, 48)},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "seed %d; MAPE %% on the last 30%% (rolling origin); settings chosen and trained on the first 70%%\n", longSeed)
	fmt.Fprintf(&table, "%-16s %-6s %5s %8s %8s %8s\n", "trace", "period", "ahead", "GRU", "last", "seasonal")
	for _, tr := range traces {
		split := len(tr.series) * 7 / 10
		start := time.Now()
		sel, err := Select(tr.series[:split], tr.candidates, selectValidation, rand.New(rand.NewPCG(longSeed, 0)))
		if err != nil {
			t.Fatalf("%s: %v", tr.name, err)
		}
		for i, c := range tr.candidates {
			t.Logf("%s: candidate window %d, log %v: validation MAPE %.2f%% %d ahead (periods %d-%d)",
				tr.name, c.Window, c.Log, sel.MAPE[i], sel.ScoreHorizon, sel.ValidationStart, split-1)
		}
		gru := sel.Forecaster
		epoch, val := gru.Epoch()
		t.Logf("%s: %d periods, selected and fitted in %v: window %d, log %v; kept epoch %d, training loss %.4f, validation loss %.4f",
			tr.name, len(tr.series), time.Since(start).Round(time.Millisecond), gru.Config().Window, gru.Config().Log, epoch, gru.TrainLoss(), val)
		H := gru.Horizon()
		errs := evaluateAll(t, tr.series, split, gru, NewLastValue(1, H), NewSeasonalNaive(1, H, tr.season))
		for _, h := range tr.horizons {
			fmt.Fprintf(&table, "%-16s %-6s %5d %8.2f %8.2f %8.2f\n", tr.name, tr.period, h, errs[0].MAPE(h), errs[1].MAPE(h), errs[2].MAPE(h))
		}
		all, kept := errs[0].Pairs(1)
		t.Logf("%s: MAPE counts %d of %d test periods (floor %.4g)", tr.name, kept, all, errs[0].Floor[0])
	}

	// The multivariate case: DRPC forecasts utilisation (Table 2) and its
	// four user classes replay one trace in a mix, so the real
	// multi-dimensional series here is the Alibaba CPU and memory pair, as
	// fractions (0-1) so that MSE is on Table 2's scale, at DRPC's 5-minute
	// scheduling interval: horizons 1-5 are 5-25 minutes.
	mem := aggregate(t, column(t, alibaba, "mem_util_percent"), time.Minute)
	cpu5 := aggregate(t, cpu, 5*time.Minute)
	mem5 := aggregate(t, mem, 5*time.Minute)
	pair := make([][]float64, cpu5.Len())
	for i := range pair {
		pair[i] = []float64{cpu5.Values[i] / 100, mem5.Values[i] / 100}
	}
	// No selection here: DefaultConfig's window, hidden size and horizon,
	// with the hourly traces' epoch cap and hold-out.
	split := len(pair) * 7 / 10
	cfg := Config{Window: 24, Hidden: 32, Horizon: 5, Epochs: 200, Validation: 0.2}
	gru, err := Fit(pair[:split], cfg, rand.New(rand.NewPCG(longSeed, 0)))
	if err != nil {
		t.Fatal(err)
	}
	epoch, val := gru.Epoch()
	t.Logf("alibaba cpu+mem: %d periods, kept epoch %d, training loss %.4f, validation loss %.4f", len(pair), epoch, gru.TrainLoss(), val)
	errs := evaluateAll(t, pair, split, gru, NewLastValue(2, 5), NewSeasonalNaive(2, 5, 288))
	fmt.Fprintf(&table, "\nalibaba cpu+mem (fractions), 5 min periods, one GRU for both series\n")
	fmt.Fprintf(&table, "%-6s %-4s %8s %8s %8s   %9s %9s %9s\n", "series", "min", "GRU %", "last %", "seas. %", "GRU MSE", "last MSE", "seas. MSE")
	for k, name := range []string{"cpu", "mem"} {
		for h := 1; h <= 5; h++ {
			fmt.Fprintf(&table, "%-6s %4d %8.2f %8.2f %8.2f   %9.6f %9.6f %9.6f\n", name, 5*h,
				errs[0].SeriesMAPE(h, k), errs[1].SeriesMAPE(h, k), errs[2].SeriesMAPE(h, k),
				errs[0].SeriesMSE(h, k), errs[1].SeriesMSE(h, k), errs[2].SeriesMSE(h, k))
		}
	}
	t.Logf("\n%s", table.String())
}

// selectValidation is the fraction of the training part (its end) that
// Select holds out to score the candidates.
const selectValidation = 0.2

// candidateGrid returns the candidates Select chooses from in
// TestTraceForecasts: base with each of the windows, without and with the
// log transform, in that order.
func candidateGrid(base Config, windows ...int) []Config {
	var out []Config
	for _, w := range windows {
		for _, log := range []bool{false, true} {
			c := base
			c.Window, c.Log = w, log
			out = append(out, c)
		}
	}
	return out
}

// evaluateAll evaluates each forecaster on series[split:] and checks that
// every error is finite.
func evaluateAll(t *testing.T, series [][]float64, split int, fs ...Forecaster) []*Errors {
	t.Helper()
	var out []*Errors
	for _, f := range fs {
		e, err := Evaluate(f, series, split, 0)
		if err != nil {
			t.Fatal(err)
		}
		for h := 1; h <= e.Horizon; h++ {
			if v := e.MAPE(h); math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%T: MAPE %d ahead is %g", f, h, v)
			}
		}
		out = append(out, e)
	}
	return out
}

func univariate(v []float64) [][]float64 {
	s := make([][]float64, len(v))
	for i, x := range v {
		s[i] = []float64{x}
	}
	return s
}

func readAlibaba(t *testing.T) *workload.UsageSeries {
	t.Helper()
	rc, err := workload.OpenEmbedded(workload.FormatAlibaba)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	u, err := workload.ReadAlibaba(rc)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func column(t *testing.T, u *workload.UsageSeries, name string) *workload.RateSeries {
	t.Helper()
	c, err := u.Column(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readNASA(t *testing.T) *workload.RateSeries {
	t.Helper()
	rc, err := workload.OpenEmbedded(workload.FormatNASA)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	s, err := workload.ReadNASA(rc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readWikipedia(t *testing.T) *workload.RateSeries {
	t.Helper()
	rc, err := workload.OpenEmbedded(workload.FormatWikipedia)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	h, err := workload.ReadWikipedia(rc)
	if err != nil {
		t.Fatal(err)
	}
	return workload.WikipediaSeries(h)
}

func aggregate(t *testing.T, s *workload.RateSeries, bin time.Duration) *workload.RateSeries {
	t.Helper()
	a, err := s.Aggregate(bin)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
