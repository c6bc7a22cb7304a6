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
// SeasonalNaive (season one day) on the embedded traces: train on the first
// 70% of each series, rolling-origin MAPE on the last 30%. It takes about a
// minute on 2 cores, so it runs only with SHOAL_LONG=1:
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

	type trace struct {
		name, period string
		series       [][]float64
		season       int   // one day, in periods
		horizons     []int // reported, in periods
		cfg          Config
	}
	traces := []trace{
		{"alibaba cpu %", "1 min", univariate(cpu.Values), 1440, []int{1, 5, 25},
			Config{Window: 60, Hidden: 32, Horizon: 25, Epochs: 30, Validation: 0.2}},
		{"nasa req/s", "1 min", univariate(nasa.Values), 1440, []int{1, 5, 25},
			Config{Window: 60, Hidden: 32, Horizon: 25, Epochs: 30, EpochWindows: 16384, Validation: 0.2, Log: true}},
		{"wikipedia req/s", "1 h", univariate(wiki.Values), 24, []int{1, 5},
			Config{Window: 48, Hidden: 32, Horizon: 5, Epochs: 200, Validation: 0.2}},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "seed %d; MAPE %% on the last 30%% (rolling origin), trained on the first 70%%\n", longSeed)
	fmt.Fprintf(&table, "%-16s %-6s %5s %8s %8s %8s\n", "trace", "period", "ahead", "GRU", "last", "seasonal")
	for _, tr := range traces {
		split := len(tr.series) * 7 / 10
		start := time.Now()
		gru, err := Fit(tr.series[:split], tr.cfg, rand.New(rand.NewPCG(longSeed, 0)))
		if err != nil {
			t.Fatalf("%s: %v", tr.name, err)
		}
		epoch, val := gru.Epoch()
		t.Logf("%s: %d periods, fit in %v, kept epoch %d, training loss %.4f, validation loss %.4f",
			tr.name, len(tr.series), time.Since(start).Round(time.Millisecond), epoch, gru.TrainLoss(), val)
		H := tr.cfg.Horizon
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
