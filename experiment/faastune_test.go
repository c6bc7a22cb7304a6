package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/envs/faasconfenv"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/scenario"
)

// A random-search session measures the given number of configurations and
// reports the cheapest that met the QoS.
func TestRandomSession(t *testing.T) {
	env := sequentialEnv(t)
	s := RunFaaSSession(env, 0.7, RandomTuner{Space: env.Space(), N: len(env.Functions()), Rng: rand.New(rand.NewPCG(1, 1))}, 8, rand.New(rand.NewPCG(2, 2)))
	if len(s.Measurements) != 8 {
		t.Fatalf("%d measurements, want 8", len(s.Measurements))
	}
	best, met := 0.0, 0
	for _, m := range s.Measurements {
		if m.Met {
			met++
			if best == 0 || m.Price < best {
				best = m.Price
			}
		}
		if m.Level != 0.7 {
			t.Fatalf("measured at level %v", m.Level)
		}
	}
	if s.Met != met || s.Best != best || met == 0 {
		t.Fatalf("session met %d best %v; measurements say %d, %v", s.Met, s.Best, met, best)
	}
}

// The Aquatope-like tuner, told warm-up measurements, proposes
// configurations of the space.
func TestAquatopeSession(t *testing.T) {
	env := sequentialEnv(t)
	rng := rand.New(rand.NewPCG(3, 3))
	rs := RandomTuner{Space: env.Space(), N: len(env.Functions()), Rng: rng}
	var warm []faasconfenv.Measurement
	for range 6 {
		m, _ := env.Measure(0.7, rs.Next(0.7, faasconfenv.Measurement{}, nil, true), rng)
		warm = append(warm, m)
	}
	aq, err := NewAquatopeTuner(env.Space(), len(env.Functions()), env.QoS(), warm, rand.New(rand.NewPCG(4, 4)))
	if err != nil {
		t.Fatal(err)
	}
	s := RunFaaSSession(env, 0.7, aq, 3, rand.New(rand.NewPCG(5, 5)))
	sp := env.Space()
	for _, m := range s.Measurements {
		for _, c := range m.Configs {
			if c.CPU < sp.CPU[0] || c.CPU > sp.CPU[1] || c.Instances < sp.Instances[0] || c.Instances > sp.Instances[1] ||
				c.Concurrency < sp.Concurrency[0] || c.Concurrency > sp.Concurrency[1] {
				t.Fatalf("proposal %+v outside the space", c)
			}
		}
	}
	if len(aq.opt.Observations()) != 6+1+3-1 { // warm-up, the scenario's own, and all but the last proposal
		t.Fatalf("%d observations told", len(aq.opt.Observations()))
	}
}

// The RAMBO-like tuner proposes hardware-only configurations of the space
// and keeps every outcome.
func TestRAMBOSession(t *testing.T) {
	env := sequentialEnv(t)
	hw, err := faasconfenv.New(lookupScenario(t, "faas-sequential"), faasconfenv.Config{Space: env.Space().HardwareOnly(), QoS: env.QoS()})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	rs := RandomTuner{Space: hw.Space(), N: 5, Rng: rng}
	var warm []faasconfenv.Measurement
	for range 4 {
		m, _ := hw.Measure(0.7, rs.Next(0.7, faasconfenv.Measurement{}, nil, true), rng)
		warm = append(warm, m)
	}
	r := NewRAMBOTuner(hw.Space(), 5, hw.QoS(), warm, rand.New(rand.NewPCG(4, 4)))
	s := RunFaaSSession(hw, 0.7, r, 3, rand.New(rand.NewPCG(5, 5)))
	for _, m := range s.Measurements {
		for _, c := range m.Configs {
			if c.Concurrency != 0 || c.CPU < 0.25 || c.CPU > 2 || c.Instances < 1 || c.Instances > 8 {
				t.Fatalf("proposal %+v outside the hardware-only space", c)
			}
		}
	}
	if len(r.xs) != 4+1+3-1 || len(r.fs) != len(r.xs) {
		t.Fatalf("%d outcomes kept", len(r.xs))
	}
}

// The FIRM-like tuner changes one function per round: after a violation
// the one with the highest tail latency, else the one using the least CPU.
func TestFirmTunerChangesTheCulprit(t *testing.T) {
	obs := [][]float64{{0.9, 0, 0.5}, {0.2, 0, 3}, {0.5, 0, 1}}
	if j := culprit(obs, false); j != 1 {
		t.Errorf("culprit after a violation: %d, want 1", j)
	}
	if j := culprit(obs, true); j != 1 {
		t.Errorf("culprit after meeting the QoS: %d, want 1 (least CPU used)", j)
	}
	obs[1][0] = 0.95
	if j := culprit(obs, true); j != 2 {
		t.Errorf("culprit after meeting the QoS: %d, want 2", j)
	}
	sc := lookupScenario(t, "faas-sequential")
	cfg := faasconfenv.DefaultTrainConfig()
	cfg.Logged, cfg.OfflineUpdates, cfg.Online, cfg.Learner.BatchSize, cfg.Learner.Hidden, cfg.Learner.Variant = 1, 0, 0, 8, []int{8}, "ddpg"
	tr, err := faasconfenv.Train(context.Background(), sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	env := sequentialEnv(t)
	s := RunFaaSSession(env, 1, &FirmTuner{Policy: tr.Policy, Noise: 0.1, Rng: rand.New(rand.NewPCG(1, 1))}, 4, rand.New(rand.NewPCG(2, 2)))
	prev := env.Defaults()
	for _, m := range s.Measurements {
		changed := 0
		for j := range m.Configs {
			if m.Configs[j] != prev[j] {
				changed++
			}
		}
		if changed != 1 {
			t.Fatalf("a round changed %d functions, want 1: %+v after %+v", changed, m.Configs, prev)
		}
		prev = m.Configs
	}
}

// The oracle against true exhaustive search: on a grid small enough to
// enumerate (1 or 2 cores, one to three instances, concurrency 5: 6
// points per function, 7,776 for the workflow), it finds the cheapest
// configuration meeting the QoS on its seeds.
func TestOracleMatchesExhaustiveSearch(t *testing.T) {
	sc := lookupScenario(t, "faas-sequential")
	full := sequentialEnv(t)
	sp := full.Space()
	sp.CPU, sp.Instances, sp.Concurrency = [2]float64{1, 2}, [2]int{1, 3}, [2]int{5, 5}
	env, err := faasconfenv.New(sc, faasconfenv.Config{Space: sp, QoS: full.QoS()})
	if err != nil {
		t.Fatal(err)
	}
	o := FaaSOracle{Env: env, Seeds: 3, CPUStep: 1}
	const level = 0.7
	got := o.Search(level)
	grids := o.grids()
	best, cs, measured := 0.0, make([]faasconf.Config, 5), 0
	var walk func(j int)
	walk = func(j int) {
		if j == len(cs) {
			if p := faasconf.Price(cs); (best == 0 || p < best) && o.meets(level, cs, &measured) {
				best = p
			}
			return
		}
		for _, g := range grids[j] {
			cs[j] = g.c
			walk(j + 1)
		}
	}
	walk(0)
	if best == 0 || math.Abs(got.Price-best) > 1e-9 {
		t.Fatalf("oracle %.4f $/h (%+v), exhaustive %.4f", got.Price, got.Configs, best)
	}
	t.Logf("oracle %.4f $/h after %d measurements; exhaustive after %d", got.Price, got.Measured, measured)
}

// The effectiveness study reuses a policy from its directory, runs every
// method at every level and writes its table and files.
func TestFaaSConfStudy(t *testing.T) {
	sc := lookupScenario(t, "faas-sequential")
	dir := t.TempDir()
	cfg := faasconfenv.DefaultTrainConfig()
	cfg.Logged, cfg.OfflineUpdates, cfg.Online, cfg.Learner.BatchSize, cfg.Learner.Hidden = 2, 5, 0, 8, []int{8}
	tr, err := faasconfenv.Train(context.Background(), sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "policies"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := modelfile.WriteFile(filepath.Join(dir, "policies", "faasconf-faas-sequential-seed1.policy"), tr.Policy.Write); err != nil {
		t.Fatal(err)
	}
	methods := []string{"faasconf", "faasconf-noses", "random", "aquatope", "rambo"}
	s := FaaSConfStudy{Name: "effectiveness", Methods: methods, Scenarios: []string{"faas-sequential"}, Seeds: 2, Iterations: 2, Warm: 2, TrainSeed: 1,
		Dir: filepath.Join(dir, "out"), PolicyDir: filepath.Join(dir, "policies")}
	var table bytes.Buffer
	cells, err := s.Run(context.Background(), &table)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 5*len(methods) || cells[0].Tuner != "faasconf" || cells[0].Sessions != 2 {
		t.Fatalf("%d cells, first %+v", len(cells), cells[0])
	}
	for _, c := range cells {
		if c.VerifiedFound > c.Found {
			t.Fatalf("%+v: more sessions verified than found", c)
		}
	}
	if lines := strings.Count(table.String(), "\n"); lines != 6 {
		t.Fatalf("table of %d lines:\n%s", lines, table.String())
	}
	csv, err := os.ReadFile(filepath.Join(dir, "out", "effectiveness.csv"))
	if err != nil || strings.Count(string(csv), "\n") != 1+len(cells) {
		t.Fatalf("csv: %v\n%s", err, csv)
	}
	html, err := os.ReadFile(filepath.Join(dir, "out", "effectiveness.html"))
	if err != nil || strings.Count(string(html), "<svg") != 1 || !strings.Contains(string(html), "faas-sequential") {
		t.Fatalf("report: %v, %d figures", err, strings.Count(string(html), "<svg"))
	}
}

func lookupScenario(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func sequentialEnv(t *testing.T) *faasconfenv.Env {
	t.Helper()
	env, err := faasconfenv.New(lookupScenario(t, "faas-sequential"), faasconfenv.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// The dynamic workload spans the trained levels and fluctuates: the level
// moves by more than 0.1 from one window to the next in at least a tenth
// of the windows.
func TestFaaSDynamicLevels(t *testing.T) {
	ls, err := FaaSDynamicLevels(170)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 170 || slices.Min(ls) != 0.4 || math.Abs(slices.Max(ls)-1.6) > 1e-12 {
		t.Fatalf("%d windows from %v to %v", len(ls), slices.Min(ls), slices.Max(ls))
	}
	jumps := 0
	for i := 1; i < len(ls); i++ {
		if math.Abs(ls[i]-ls[i-1]) > 0.1 {
			jumps++
		}
	}
	if jumps < len(ls)/10 {
		t.Errorf("%d jumps over 0.1 in %d windows", jumps, len(ls))
	}
	t.Logf("%d jumps over 0.1; first windows %.2f", jumps, ls[:10])
}

// The adaptability study runs every method and the oracle over the
// windows and writes a row each and every window.
func TestFaaSAdapt(t *testing.T) {
	dir := t.TempDir()
	pols := filepath.Join(dir, "policies")
	sc := lookupScenario(t, "faas-sequential")
	env := sequentialEnv(t)
	for _, v := range []struct {
		variant, file string
		hw            bool
	}{{"attmf", "faasconf-faas-sequential-seed1.policy", false}, {"ddpg", "faasconf-faas-sequential-ddpg-hw-seed1.policy", true}} {
		cfg := faasconfenv.DefaultTrainConfig()
		cfg.Logged, cfg.OfflineUpdates, cfg.Online, cfg.Learner.BatchSize, cfg.Learner.Hidden, cfg.Learner.Variant = 1, 0, 0, 8, []int{8}, rl.MADDPGVariant(v.variant)
		if v.hw {
			cfg.Env.Space = env.Space().HardwareOnly()
		}
		tr, err := faasconfenv.Train(context.Background(), sc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(pols, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := modelfile.WriteFile(filepath.Join(pols, v.file), tr.Policy.Write); err != nil {
			t.Fatal(err)
		}
	}
	var orc []OracleResult
	for _, l := range faasconfenv.DefaultConfig().Levels {
		orc = append(orc, OracleResult{Level: l, Configs: env.Defaults(), Price: faasconf.Price(env.Defaults())})
	}
	b, _ := json.Marshal(orc)
	if err := os.WriteFile(filepath.Join(pols, "oracle-faas-sequential.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	s := FaaSConfStudy{Scenarios: []string{"faas-sequential"}, Seeds: 2, Warm: 2, TrainSeed: 1, Dir: filepath.Join(dir, "out"), PolicyDir: pols}
	var table bytes.Buffer
	rows, err := s.Adapt(context.Background(), &table, 6)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(FaaSAdaptive)+1 || rows[len(rows)-1].Method != "oracle" {
		t.Fatalf("rows %+v", rows)
	}
	if o := rows[len(rows)-1]; math.Abs(float64(o.Price.Mean)-faasconf.Price(env.Defaults())) > 1e-9 {
		t.Fatalf("the oracle's price %v, want its configuration's %v", o.Price.Mean, faasconf.Price(env.Defaults()))
	}
	csv, err := os.ReadFile(filepath.Join(dir, "out", "adaptability-windows.csv"))
	if err != nil || strings.Count(string(csv), "\n") != 1+(len(FaaSAdaptive)+1)*2*6 {
		t.Fatalf("windows csv: %v\n%s", err, csv)
	}
	html, err := os.ReadFile(filepath.Join(dir, "out", "adaptability.html"))
	if err != nil || strings.Count(string(html), "<svg") != 4 || !strings.Contains(string(html), "safe price range over time") {
		t.Fatalf("report: %v, %d figures", err, strings.Count(string(html), "<svg"))
	}
	if !strings.HasPrefix(string(csv), "method,seed,window,level,met,latency_s,price_per_hour,safe_low,safe_high,") {
		t.Fatalf("windows csv header: %s", strings.SplitN(string(csv), "\n", 2)[0])
	}
	ranged := 0 // FaaSConf's windows with a safe range
	for _, line := range strings.Split(string(csv), "\n") {
		if f := strings.Split(line, ","); f[0] == "faasconf" && f[8] != "0" {
			ranged++
		}
	}
	if ranged == 0 {
		t.Errorf("no FaaSConf window has a safe range:\n%s", csv)
	}
	t.Log("\n" + table.String())
}
