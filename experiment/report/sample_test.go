package report

import (
	"fmt"
	"math"
)

// noise is a deterministic pseudo-random sequence in [0, 1) (splitmix64),
// used instead of math/rand so golden files do not depend on library
// stream stability.
type noise uint64

func (n *noise) next() float64 {
	*n += 0x9e3779b97f4a7c15
	z := uint64(*n)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

var samplePolicies = []string{"ECMP", "WCMP", "LSQ", "SED", "P2C", "Distr-LB"}

// sampleReport is a report like the one `shoal experiment` writes, with
// every figure kind, small multiples, a long series, gaps and empty data.
func sampleReport() *Report {
	r := &Report{
		Title:    "Load balancing on heterogeneous servers",
		Subtitle: "Scenario lb-hetero: 3 LB agents, 12 servers with CPU speeds 0.5–2.0, Poisson arrivals at 85% load.",
		Meta: []KV{
			{"scenario", "lb-hetero (embedded)"},
			{"seeds", "5 (1..5)"},
			{"root seed", "20260101"},
			{"horizon", "600 s simulated, 60 s warm-up"},
			{"shoal version", "v0.1.0-dev"},
			{"command", "shoal experiment -scenario lb-hetero -controllers ecmp,wcmp,lsq,sed,p2c,distr-lb -seeds 5 -out results/lb-hetero"},
		},
		Notes: []string{
			"Little's law check failed for WCMP, seed 3: L = 41.2 but λW = 38.7 (6.4% > 5% tolerance).",
			"Distr-LB was trained for 200 episodes only; numbers are preliminary. <b>not bold</b>",
		},
	}
	rows := [][]string{}
	mean := []float64{21.4, 18.2, 12.9, 11.7, 12.3, 10.8}
	for i, p := range samplePolicies {
		rows = append(rows, []string{
			p,
			MeanCI(mean[i], mean[i]*0.03),
			fmt.Sprintf("%.1f ± %.1f", mean[i]*4.2, mean[i]*0.2),
			fmt.Sprintf("%.0f", 1190+float64(i)*1.5),
			fmt.Sprintf("%.3f", 0.71+float64(i)*0.04),
		})
	}
	r.Tables = append(r.Tables, Table{
		Caption:   "Latency and fairness, mean ± 95% CI over 5 seeds",
		Columns:   []string{"policy", "mean latency (ms)", "p99 latency (ms)", "throughput (req/s)", "Jain index"},
		Rows:      rows,
		Highlight: []int{-1, Best(mean, false), 5, 5, 5},
	})
	r.Tables = append(r.Tables, Table{
		Caption:   "Per request class: search (SLO 0.5 s)",
		Columns:   []string{"policy", "mean (s)", "p99 (s)"},
		Rows:      [][]string{{"ECMP", "0.21 ± 0.01", "1.9 ± 0.2"}, {"a-very-long-policy-name:with/a/path/to/its/file.policy", "0.15", "1.1"}},
		Collapsed: true,
	})
	r.Tables = append(r.Tables, Table{
		Caption: "Training",
		Columns: []string{"controller", "episodes", "wall time"},
		Rows:    [][]string{{"Distr-LB", "200", "3m12s"}, {"DRPC teacher"}},
	})

	// Scatter: quality against cost, the frontier as a line.
	qc := Figure{Title: "p99 against cost", XLabel: "cost ($)", YLabel: "p99 latency (ms)", Kind: KindScatter,
		Caption: "Best at each cost: SED from $1.10, Distr-LB from $1.40."}
	frontier := Series{Name: "frontier", Connect: true}
	for i, p := range samplePolicies {
		cost := 1 + 0.1*float64(i)
		p99 := mean[i] * 4.2
		on := i == 3 || i == 5
		qc.Series = append(qc.Series, Series{Name: p, X: []float64{cost}, Y: []float64{p99},
			Lo: []float64{p99 * 0.95}, Hi: []float64{p99 * 1.05}, XLo: []float64{cost - 0.02}, XHi: []float64{cost + 0.02},
			Hollow: !on, Label: true})
		if on {
			frontier.X, frontier.Y = append(frontier.X, cost), append(frontier.Y, p99)
		}
	}
	qc.Series = append(qc.Series, frontier)
	r.Summary = append(r.Summary, qc)

	// Line: p99 latency over time.
	line := Figure{
		Title: "p99 latency over time", XLabel: "time (s)", YLabel: "p99 latency (ms)",
		Caption: "Shaded: 95% confidence band over 5 seeds (ECMP and Distr-LB). Dashed: the latency SLO.",
		HLines:  []HLine{{Label: "SLO 100 ms", Y: 100}},
	}
	for i, p := range samplePolicies {
		s := Series{Name: p}
		for t := 0; t <= 600; t += 5 {
			x := float64(t)
			s.X = append(s.X, x)
			y := mean[i]*4*(1+0.25*math.Sin(x/60+float64(i))) + x*0.01
			s.Y = append(s.Y, y)
			if i == 0 || i == 5 { // 95% CI band over seeds
				s.Lo = append(s.Lo, y*0.92)
				s.Hi = append(s.Hi, y*1.08)
			}
		}
		line.Series = append(line.Series, s)
	}
	r.Figures = append(r.Figures, line)

	// Step: latency CDF on a log axis (exponential quantiles).
	cdf := Figure{Title: "Latency CDF", XLabel: "latency (ms)", YLabel: "P(latency ≤ x)", Kind: KindStep, LogX: true}
	for i, p := range samplePolicies[:4] {
		s := Series{Name: p}
		const n = 200
		eps := math.Sqrt(math.Log(2/0.05) / (2 * n)) // DKW 95% band
		for k := 1; k < n; k++ {
			q := float64(k) / n
			s.X = append(s.X, -math.Log(1-q)*mean[i])
			s.Y = append(s.Y, q)
			if i == 0 {
				s.Lo = append(s.Lo, max(0, q-eps))
				s.Hi = append(s.Hi, min(1, q+eps))
			}
		}
		cdf.Series = append(cdf.Series, s)
	}
	r.Figures = append(r.Figures, cdf)

	// Bar: throughput per policy at two loads.
	bar := Figure{Title: "Throughput by policy", YLabel: "throughput (req/s)", Kind: KindBar, Categories: samplePolicies}
	for j, load := range []string{"load 0.6", "load 0.85", "load 0.95"} {
		s := Series{Name: load}
		for i := range samplePolicies {
			s.X = append(s.X, float64(i))
			y := (600 + float64(j)*300) * (1 - 0.02*float64(5-i)*float64(j))
			s.Y = append(s.Y, y)
			s.Lo = append(s.Lo, y-15-float64(j)*10)
			s.Hi = append(s.Hi, y+15+float64(j)*10)
		}
		bar.Series = append(bar.Series, s)
	}
	r.Figures = append(r.Figures, bar)

	// Many categories: rotated labels; a fixed y range.
	util := Figure{Title: "CPU utilisation per server", YLabel: "utilisation", Kind: KindBar, YRange: [2]float64{0, 1}}
	for pi, p := range []string{"ECMP", "LSQ", "Distr-LB"} {
		s := Series{Name: p}
		for srv := range 12 {
			util.Categories = append(util.Categories, fmt.Sprintf("server-%02d (%.1f GHz)", srv+1, 2+0.1*float64(srv)))
			s.X = append(s.X, float64(srv))
			s.Y = append(s.Y, 0.55+0.4*math.Sin(float64(srv)*0.7+float64(pi))*(1-0.3*float64(pi)))
		}
		util.Series = append(util.Series, s)
	}
	util.Categories = util.Categories[:12]
	r.Figures = append(r.Figures, util)

	// Few points per series: markers; M/M/1 closed form as a reference.
	vsLoad := Figure{Title: "Mean latency vs load", XLabel: "offered load ρ", YLabel: "mean latency (ms)", LogY: true}
	mm1 := Series{Name: "M/M/1 (theory)"}
	for k := 1; k <= 95; k++ {
		rho := float64(k) / 100
		mm1.X = append(mm1.X, rho)
		mm1.Y = append(mm1.Y, 10/(1-rho))
	}
	vsLoad.Series = append(vsLoad.Series, mm1)
	for i, p := range samplePolicies[2:5] {
		s := Series{Name: p}
		for _, rho := range []float64{0.3, 0.5, 0.7, 0.8, 0.9, 0.95} {
			s.X = append(s.X, rho)
			s.Y = append(s.Y, 10*(0.9+0.1*float64(i))/(1-rho*0.97))
		}
		vsLoad.Series = append(vsLoad.Series, s)
	}
	r.Figures = append(r.Figures, vsLoad)

	// Small multiples: load per server over time, one panel per policy.
	panels := Figure{Title: "Queue length per server", XLabel: "time (s)", YLabel: "queue length"}
	nz := noise(7)
	for pi, p := range samplePolicies[:4] {
		pf := Figure{Title: p}
		for srv := range 12 {
			s := Series{Name: fmt.Sprintf("server %d", srv+1)}
			level := 2 + float64(srv%5)*float64(4-pi)
			for t := 0; t <= 300; t += 3 {
				s.X = append(s.X, float64(t))
				s.Y = append(s.Y, level*(1+0.3*math.Sin(float64(t)/40+float64(srv)))+3*nz.next())
			}
			pf.Series = append(pf.Series, s)
		}
		panels.Panels = append(panels.Panels, pf)
	}
	r.Figures = append(r.Figures, panels)

	// A long series, downsampled, with gaps, on a log y axis.
	long := Figure{Title: "In-flight requests, 200k samples (downsampled)", XLabel: "time (s)", YLabel: "in-flight", LogY: true}
	s := Series{Name: "LB 1"}
	g := Series{Name: "LB 2 (gaps, zeros)"}
	for k := range 200000 {
		x := float64(k) * 0.003
		s.X = append(s.X, x)
		y := 20 + 15*math.Sin(x/50) + 10*nz.next()
		if k == 123456 {
			y = 900 // a single spike must survive downsampling
		}
		s.Y = append(s.Y, y)
		if k%1000 == 0 {
			gy := 5 + 3*math.Cos(x/40)
			switch {
			case k%7000 == 0:
				gy = math.NaN()
			case k%11000 == 0:
				gy = 0 // not drawable on a log axis
			case k%13000 == 0:
				gy = math.Inf(1)
			}
			g.X = append(g.X, x)
			g.Y = append(g.Y, gy)
		}
	}
	long.Series = []Series{s, g, {Name: "LB 3"}}
	r.Figures = append(r.Figures, long)

	r.Figures = append(r.Figures, Figure{Title: "Cold starts (none in this run)", XLabel: "time (s)", YLabel: "cold starts/s"})
	return r
}
