package experiment

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"

	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/experiment/report"
	"github.com/shoal-project/shoal/scenario"
)

// EgressRow is one route's outcome under an egress budget.
type EgressRow struct {
	Scenario string `json:"scenario"`
	Policy   string `json:"policy"`
	Mean     Stat   `json:"mean_s"`
	P99      Stat   `json:"p99_s"`
	Success  Stat   `json:"success"`
	// EgressPerHour is the egress over the measured window, GB per hour;
	// Budget the budget, and Within whether the mean stays in it.
	EgressPerHour Stat    `json:"egress_gb_per_hour"`
	Budget        float64 `json:"budget_gb_per_hour"`
	Within        bool    `json:"within"`
	FirstSeed     uint64  `json:"first_seed"`
}

// EgressShares are the spread:X baselines the egress study sweeps: the
// share of every cloud's calls sent away, from Local (0) toward Even.
var EgressShares = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}

// Egress measures the learned routes under an egress budget: Even's
// egress per hour times EgressShare is the budget (BudgetGBPerHour when
// set). The learned route runs with it (Options.MaxEgressGBPerHour), beside
// the baselines' frontier: even, local, locality and spread:X for
// EgressShares, each route's mean, p99 and egress per hour, and whether it
// stays within the budget. egress.csv, .json, .html, and the two
// comparisons' own files (the baselines, then the learned route, on the
// same seeds) in Dir/egress-SCENARIO/baselines and .../multicloud.
func (s MultiCloudStudy) Egress(ctx context.Context) ([]EgressRow, error) {
	var rows []EgressRow
	err := s.each(ctx, func(sc *scenario.Scenario, p *multicloud.Policy) error {
		hours := (sc.Horizon - sc.Warmup).Hours() // the measured window
		perHour := func(ps *PolicyResult) Stat {
			return Stat{Mean: ps.Summary.EgressGB.Mean / Num(hours), CI95: ps.Summary.EgressGB.CI95 / Num(hours)}
		}
		baselines := []string{"even", "local", "locality"}
		for _, x := range EgressShares {
			baselines = append(baselines, "spread:"+strconv.FormatFloat(x, 'g', -1, 64))
		}
		s.say("%s: %d baselines x %d seeds", sc.Name, len(baselines), s.Seeds)
		base, err := s.egressRun(ctx, sc, "baselines", &Comparison{Scenario: sc, Policies: baselines, Seeds: s.Seeds, Workers: s.Workers})
		if err != nil {
			return err
		}
		budget := s.BudgetGBPerHour
		if budget == 0 {
			budget = s.egressShare() * float64(perHour(&base.Policies[0]).Mean) // even's
		}
		opt := s.options()
		opt.MaxEgressGBPerHour = budget
		learned, err := MultiCloudPolicy(p, multicloud.KindChosen, opt)
		if err != nil {
			return err
		}
		s.say("%s: the learned route under %.3f GB/h, %d seeds", sc.Name, budget, s.Seeds)
		mc, err := s.egressRun(ctx, sc, "multicloud", &Comparison{Scenario: sc, Policies: []string{"multicloud"}, Seeds: s.Seeds,
			Learned: map[string]Learned{"multicloud": learned}, Workers: s.Workers})
		if err != nil {
			return err
		}
		for _, res := range []*Result{base, mc} {
			for i := range res.Policies {
				ps := &res.Policies[i]
				e := perHour(ps)
				rows = append(rows, EgressRow{Scenario: sc.Name, Policy: ps.Policy, Mean: ps.Summary.Mean, P99: ps.Summary.P99, Success: ps.Summary.Success,
					EgressPerHour: e, Budget: budget, Within: float64(e.Mean) <= budget, FirstSeed: sc.Seed})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, s.writeEgress(rows)
}

// egressRun runs one of the egress study's comparisons and writes its
// files to Dir/egress-SCENARIO/name.
func (s MultiCloudStudy) egressRun(ctx context.Context, sc *scenario.Scenario, name string, cmp *Comparison) (*Result, error) {
	res, err := cmp.Run(ctx)
	if err != nil {
		return nil, err
	}
	return res, res.WriteFiles(filepath.Join(s.Dir, "egress-"+sc.Name, name), s.meta())
}

func (s MultiCloudStudy) egressShare() float64 {
	if s.EgressShare > 0 {
		return s.EgressShare
	}
	return 0.5
}

// EgressGain compares the learned route under the budget with the best
// baseline within it, on one benchmark.
type EgressGain struct {
	Scenario, Best string
	Budget         float64 // GB per hour
	Mean, BestMean float64 // s
	Egress         float64 // the learned route's, GB per hour
}

func (g EgressGain) String() string {
	if g.Best == "" {
		return fmt.Sprintf("%s: budget %.3f GB/h: no baseline stays within it; multicloud mean %.1f ms at %.3f GB/h", g.Scenario, g.Budget, 1000*g.Mean, g.Egress)
	}
	return fmt.Sprintf("%s: budget %.3f GB/h: multicloud mean %.1f ms at %.3f GB/h, %+.1f%% against the best baseline within the budget (%s, %.1f ms)",
		g.Scenario, g.Budget, 1000*g.Mean, g.Egress, 100*(g.Mean/g.BestMean-1), g.Best, 1000*g.BestMean)
}

// EgressGains compares, per benchmark, the learned route with the best
// baseline within the budget (mean egress per hour at most the budget).
func EgressGains(rows []EgressRow) []EgressGain {
	var out []EgressGain
	for _, r := range rows {
		if r.Policy != "multicloud" {
			continue
		}
		g := EgressGain{Scenario: r.Scenario, Budget: r.Budget, Mean: float64(r.Mean.Mean), Egress: float64(r.EgressPerHour.Mean), BestMean: math.Inf(1)}
		for _, b := range rows {
			if b.Scenario == r.Scenario && b.Policy != r.Policy && b.Within && float64(b.Mean.Mean) < g.BestMean {
				g.BestMean, g.Best = float64(b.Mean.Mean), b.Policy
			}
		}
		out = append(out, g)
	}
	return out
}

func (s MultiCloudStudy) writeEgress(rows []EgressRow) error {
	head := []string{"scenario", "policy", "mean_s", "mean_ci95", "p99_s", "p99_ci95", "success", "egress_gb_per_hour", "egress_ci95", "budget_gb_per_hour", "within", "seeds", "first_seed"}
	var recs [][]string
	rep := &report.Report{Title: "Multi-cloud routing under an egress budget", Meta: s.meta()}
	for i := 0; i < len(rows); {
		sc := rows[i].Scenario
		t := report.Table{Caption: fmt.Sprintf("%s: budget %.3f GB per hour (mean ± 95%% interval over seeds)", sc, rows[i].Budget),
			Columns: []string{"route", "mean (ms)", "p99 (ms)", "success %", "egress (GB/h)", "within the budget"}}
		fig := report.Figure{Title: sc, Kind: report.KindScatter, XLabel: "egress (GB per hour)", YLabel: "mean response time (ms)"}
		for ; i < len(rows) && rows[i].Scenario == sc; i++ {
			r := rows[i]
			recs = append(recs, []string{sc, r.Policy, g(float64(r.Mean.Mean)), g(float64(r.Mean.CI95)), g(float64(r.P99.Mean)), g(float64(r.P99.CI95)),
				g(float64(r.Success.Mean)), g(float64(r.EgressPerHour.Mean)), g(float64(r.EgressPerHour.CI95)), g(r.Budget), strconv.FormatBool(r.Within),
				strconv.Itoa(s.Seeds), strconv.FormatUint(r.FirstSeed, 10)})
			t.Rows = append(t.Rows, []string{r.Policy, report.MeanCI(1000*float64(r.Mean.Mean), 1000*float64(r.Mean.CI95)),
				report.MeanCI(1000*float64(r.P99.Mean), 1000*float64(r.P99.CI95)), report.MeanCI(100*float64(r.Success.Mean), 100*float64(r.Success.CI95)),
				report.MeanCI(float64(r.EgressPerHour.Mean), float64(r.EgressPerHour.CI95)), strconv.FormatBool(r.Within)})
			fig.Series = append(fig.Series, report.Series{Name: r.Policy, X: []float64{float64(r.EgressPerHour.Mean)}, Y: []float64{1000 * float64(r.Mean.Mean)}})
		}
		rep.Tables = append(rep.Tables, t)
		rep.Figures = append(rep.Figures, fig)
	}
	for _, g := range EgressGains(rows) {
		rep.Notes = append(rep.Notes, g.String())
	}
	return s.write("egress", head, recs, rows, rep)
}
