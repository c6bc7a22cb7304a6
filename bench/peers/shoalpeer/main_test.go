package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// TestMeasure checks the peer program's figures against outside references:
// the M/M/1 mean response 1/(mu - lambda) = 0.5 s, SimPy 3.0.11's mean for
// the 2 x 7 LSQ model (lb2x7.py, 12 seeds x 5400 s: 1.8621 ± 0.0091 s), and
// the Poisson arrival counts lambda * horizon * seeds that the request count
// (derived from Little's check) must match.
func TestMeasure(t *testing.T) {
	tests := []struct {
		model   string
		horizon time.Duration
		seeds   int
		rate    float64 // arrivals per second, all sources
		want    float64 // mean response, seconds
		tol     float64 // relative
	}{
		{"mm1", time.Hour, 5, 8, 0.5, 0.06},
		{"lb2x7", 2 * time.Hour, 4, 13.6, 1.8621, 0.04},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			r, err := measure(tt.model, models[tt.model], tt.horizon, tt.seeds, 1)
			if err != nil {
				t.Fatal(err)
			}
			if rel := math.Abs(r.MeanResponseS-tt.want) / tt.want; rel > tt.tol {
				t.Errorf("mean response %.4f s (se %.4f), want %.4f within %.0f%%", r.MeanResponseS, r.StdErrS, tt.want, 100*tt.tol)
			}
			// Poisson count: mean = variance = rate * horizon * seeds.
			n := tt.rate * tt.horizon.Seconds() * float64(tt.seeds)
			if d := math.Abs(float64(r.Requests) - n); d > 5*math.Sqrt(n) {
				t.Errorf("requests %d, want %.0f ± %.0f (5 sd)", r.Requests, n, 5*math.Sqrt(n))
			}
			// After the warm-up (a 20th of the horizon) come about 95% of them.
			if f := float64(r.Measured) / float64(r.Requests); math.Abs(f-0.95) > 0.01 {
				t.Errorf("measured/requests = %.4f, want 0.95 ± 0.01", f)
			}
			if r.Events < uint64(2*r.Requests) {
				t.Errorf("events %d < 2 per request (%d requests): an arrival and a completion each", r.Events, r.Requests)
			}
			if len(r.SeedMeansS) != tt.seeds || r.CPUS <= 0 || r.WallS <= 0 || r.RequestsPerS <= 0 {
				t.Errorf("incomplete report: %+v", r)
			}
		})
	}
}

func TestRunOutputAndErrors(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-model", "mm1", "-horizon", "10m", "-seeds", "2", "-repeat", "3"}, &out); err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("output is not one JSON report: %v\n%s", err, out.String())
	}
	if r.Model != "mm1" || r.Seeds != 2 || r.HorizonS != 600 || r.WarmupS != 30 || r.Repeats != 3 {
		t.Errorf("report does not echo the run: %+v", r)
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"-model", "mm2"}, "unknown model"},
		{[]string{"-seeds", "0"}, "must be >= 1"},
		{[]string{"-horizon", "-1s"}, "horizon > 0"},
	}
	for _, b := range bad {
		err := run(b.args, &out)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", b.args, err, b.want)
		}
	}
}
