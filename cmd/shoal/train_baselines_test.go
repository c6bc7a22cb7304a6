package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/edge"
	"github.com/shoal-project/shoal/store"
)

// TestTrainBaselinesThenSimulate: 'shoal train firm' and 'shoal train
// coscal' write policy files that 'shoal sim --policy firm:F,coscal:G' runs.
func TestTrainBaselinesThenSimulate(t *testing.T) {
	dir := t.TempDir()
	firm, coscal := filepath.Join(dir, "firm.policy"), filepath.Join(dir, "coscal.policy")
	out, err := runCLI(t, "train", "firm", "trainticket", "-o", firm, "--label-episodes", "1", "--episodes", "1", "--episode-length", "1m", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "1 DDPG episodes") || !strings.Contains(out, "wrote "+firm) {
		t.Fatalf("train firm output: %s", out)
	}
	out, err = runCLI(t, "train", "coscal", "trainticket", "-o", coscal, "--episodes", "1", "--episode-length", "1m", "--no-forecast", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "1 episodes") || !strings.Contains(out, "wrote "+coscal) {
		t.Fatalf("train coscal output: %s", out)
	}
	out, err = runCLI(t, "sim", "trainticket", "--policy", "firm:"+firm+",coscal:"+coscal, "--seeds", "1", "--horizon", "1m", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\nfirm ") || !strings.Contains(out, "\ncoscal ") {
		t.Fatalf("sim output: %s", out)
	}
	if _, err := runCLI(t, "sim", "trainticket", "--policy", "coscal:"+firm); err == nil || !strings.Contains(err.Error(), "not a shoal-coscal-policy file") {
		t.Errorf("a FIRM file as coscal: error %v", err)
	}
}

// TestTrainFaaSConfThenSimulate: 'shoal train faasconf' writes a policy that
// 'shoal sim faas-sequential --policy faasconf:F' serves.
func TestTrainFaaSConfThenSimulate(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "faasconf.policy")
	out, err := runCLI(t, "train", "faasconf", "faas-sequential", "-o", pol, "--logged", "2", "--offline-updates", "0", "--online", "1", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "30 logged measurements") || !strings.Contains(out, "15 online measurements") || !strings.Contains(out, "wrote "+pol) {
		t.Fatalf("train faasconf output: %s", out)
	}
	out, err = runCLI(t, "sim", "faas-sequential", "--policy", "openfaas,faasconf:"+pol, "--seeds", "1", "--horizon", "2m", "--quiet")
	if err != nil || !strings.Contains(out, "\nfaasconf ") {
		t.Fatalf("sim: %v\n%s", err, out)
	}
	if _, err := runCLI(t, "train", "faasconf", "faas-sequential", "-o", pol, "--variant", "qmix"); !errors.Is(err, errUsage) {
		t.Errorf("--variant qmix: %v", err)
	}
	if _, err := runCLI(t, "train", "faasconf", "faas-sequential", "-o", pol, "--gamma", "1.5"); !errors.Is(err, errUsage) {
		t.Errorf("--gamma 1.5: %v", err)
	}
}

// TestTrainMultiCloudThenSimulate: 'shoal train multicloud' writes the
// models that 'shoal sim bookinfo --policy multicloud-nn:F,multicloud-svr:F'
// route with, beside the baselines.
func TestTrainMultiCloudThenSimulate(t *testing.T) {
	models := filepath.Join(t.TempDir(), "bookinfo.models")
	out, err := runCLI(t, "train", "multicloud", "bookinfo", "-o", models, "--periods", "60", "--epochs", "2", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "6 services on bookinfo") || !strings.Contains(out, "productpage") || !strings.Contains(out, "wrote "+models) {
		t.Fatalf("train multicloud output: %s", out)
	}
	out, err = runCLI(t, "sim", "bookinfo", "--policy", "local,locality,multicloud-nn:"+models+",multicloud-svr:"+models+",multicloud:"+models, "--seeds", "1", "--horizon", "3m", "--quiet")
	if err != nil || !strings.Contains(out, "\nmulticloud-nn ") || !strings.Contains(out, "\nmulticloud-svr ") || !strings.Contains(out, "\nmulticloud ") || !strings.Contains(out, "\nlocality ") {
		t.Fatalf("sim: %v\n%s", err, out)
	}
	out, err = runCLI(t, "sim", "bookinfo", "--policy", "spread:0.3,multicloud:"+models, "--objective", "p95", "--max-egress-gb-per-hour", "0.1", "--seeds", "1", "--horizon", "3m", "--quiet")
	if err != nil || !strings.Contains(out, "\nspread:0.3 ") || !strings.Contains(out, "\nmulticloud ") {
		t.Fatalf("sim with a spread, the p95 objective and an egress budget: %v\n%s", err, out)
	}
	for _, bad := range [][]string{{"--objective", "p99"}, {"--max-egress-gb-per-hour", "-1"}} {
		if _, err := runCLI(t, append([]string{"sim", "bookinfo", "--policy", "multicloud:" + models}, bad...)...); !errors.Is(err, errUsage) {
			t.Errorf("sim %v: %v", bad, err)
		}
	}
	if _, err := runCLI(t, "train", "multicloud", "bookinfo", "-o", models, "--inputs", "all"); !errors.Is(err, errUsage) {
		t.Errorf("--inputs all: %v", err)
	}
	if _, err := runCLI(t, "sim", "bookinfo", "--policy", "multicloud-gp:"+models); err == nil {
		t.Error("multicloud-gp: no error")
	}
	if _, err := runCLI(t, "experiment", "multicloud", "tables"); !errors.Is(err, errUsage) {
		t.Errorf("experiment multicloud tables: %v", err)
	}
}

// TestEdgePipeline: 'shoal edge log' writes the logs that 'shoal train
// edge-env' learns an environment from, in which 'shoal train
// edge-policy' trains MA-PPO and BC, which 'shoal edge evaluate' runs in
// the world beside the heuristics. The trainings are recorded, each with
// the hashes of the file it learned from and of the file it wrote.
func TestEdgePipeline(t *testing.T) {
	dir := t.TempDir()
	logs, env, db := filepath.Join(dir, "logs"), filepath.Join(dir, "day0.env"), filepath.Join(dir, "runs.db")
	mappo, bc := filepath.Join(dir, "mappo.policy"), filepath.Join(dir, "bc.policy")
	for _, args := range [][]string{
		{"edge", "log", "-o", logs, "--window", "5m", "--from", "12h"},
		{"train", "edge-env", logs, "-o", env, "--epochs", "2", "--adversarial", "5", "--db", db},
		{"train", "edge-policy", env, "-o", mappo, "--steps", "1024", "--db", db},
		{"train", "edge-policy", env, "-o", bc, "--method", "bc", "--seed", "7", "--db", db},
	} {
		out, err := runCLI(t, args...)
		if err != nil || !strings.Contains(out, "wrote") && !strings.Contains(out, "logged 30 steps") {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	checkEdgeTrainings(t, db, map[string][2]string{"edge-env": {edgeLogPath(logs), env}, "mappo": {env, mappo}, "bc": {env, bc}})
	// A bare file, and a file named through the registry.
	out, err := runCLI(t, "edge", "evaluate", mappo, "mappo:file="+bc, "--day", "30", "--hours", "12", "--window", "2m")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nrandom ", "\ngreedy ", "\nthreshold ", "\nengines (weighted-greedy) ", "\nmappo.policy (mappo) ", "\nbc.policy (bc) "} {
		if !strings.Contains(out, want) {
			t.Errorf("edge evaluate prints no %q row:\n%s", want, out)
		}
	}
	// The logs' rule (the default, weighted-greedy) reaches both policies.
	for _, path := range []string{mappo, bc} {
		if p, err := readEdgePolicy(path); err != nil || p.Rule != string(edge.WeightedGreedy) {
			t.Errorf("%s: rule %q, %v; want %q from the logs", path, p.Rule, err, edge.WeightedGreedy)
		}
	}
	if _, err := runCLI(t, "edge", "evaluate", env); err == nil {
		t.Error("an environment file as a policy: no error")
	}
	for arg, want := range map[string]string{"hpa": "not an edge one", "greedy": "runs beside every policy", "mappo": "needs a trained file"} {
		if _, err := runCLI(t, "edge", "evaluate", arg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("edge evaluate %s: %v, want an error saying %q", arg, err, want)
		}
	}
	// The paper's history: the random engine in the paper's world, whose
	// policies act through the weights themselves.
	paper := filepath.Join(dir, "paper")
	out, err = runCLI(t, "edge", "log", "-o", paper, "--window", "5m", "--from", "12h", "--engine", "random", "--rule", "weights")
	if err != nil || !strings.Contains(out, "logged 30 steps") || !strings.Contains(out, "rule weights") {
		t.Fatalf("edge log --engine random --rule weights: %v\n%s", err, out)
	}
	paperEnv, paperBC := filepath.Join(dir, "paper.env"), filepath.Join(dir, "paper-bc.policy")
	for _, args := range [][]string{
		{"train", "edge-env", paper, "-o", paperEnv, "--epochs", "1", "--adversarial", "0", "--models", "1", "--no-record"},
		{"train", "edge-policy", paperEnv, "-o", paperBC, "--method", "bc", "--no-record"},
	} {
		if out, err := runCLI(t, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	if p, err := readEdgePolicy(paperBC); err != nil || p.Rule != "" {
		t.Errorf("the paper's BC: rule %q, %v; want none", p.Rule, err)
	}
	if _, err := runCLI(t, "edge", "log", "-o", paper, "--rule", "fastest"); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "fastest") {
		t.Errorf("--rule fastest: %v", err)
	}
	// A log under another mix of engines has the same form.
	mix := filepath.Join(dir, "mix")
	out, err = runCLI(t, "edge", "log", "-o", mix, "--window", "5m", "--from", "12h", "--engine", "greedy:0.6,threshold:0.2,hold:0.1,random:0.1")
	if err != nil || !strings.Contains(out, "logged 30 steps") || !strings.Contains(out, "engine greedy:0.6") {
		t.Fatalf("edge log --engine: %v\n%s", err, out)
	}
	if f, err := os.Open(filepath.Join(mix, "transitions.jsonl")); err != nil {
		t.Fatal(err)
	} else if tr, err := edge.ReadLog(f); err != nil || len(tr) != 30*edge.Agents {
		t.Fatalf("the mix's log: %d transitions, %v", len(tr), err)
	}
	if _, err := runCLI(t, "edge", "log", "-o", mix, "--engine", "greedy:0.5,fastest"); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "fastest") {
		t.Errorf("--engine fastest: %v", err)
	}
	if _, err := runCLI(t, "train", "edge-policy", env, "-o", mappo, "--method", "sac"); !errors.Is(err, errUsage) {
		t.Errorf("--method sac: %v", err)
	}
}

// checkEdgeTrainings checks that db holds one training run per learner,
// each of the input and output files that files gives it.
func checkEdgeTrainings(t *testing.T, db string, files map[string][2]string) {
	t.Helper()
	runs := listRuns(t, db, store.Filter{Kind: store.KindTrain})
	if len(runs) != len(files) {
		t.Fatalf("%d training runs, want %d", len(runs), len(files))
	}
	hash := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return store.Hash(b)
	}
	for _, r := range runs {
		f, ok := files[r.Policy]
		if !ok || r.Scenario != filepath.Base(f[0]) || r.ScenarioHash != hash(f[0]) || r.PolicyHash != hash(f[1]) || r.Summary["wall_seconds"].Mean <= 0 {
			t.Errorf("recorded %+v", r)
		}
		if r.Policy == "bc" && (r.RootSeed != 7 || r.Summary["logged_steps"].Mean <= 0) {
			t.Errorf("bc recorded with seed %d and %v logged steps", r.RootSeed, r.Summary["logged_steps"])
		}
	}
}

// TestExperimentEdgeUsage: bad edge experiments and flags are usage
// errors.
func TestExperimentEdgeUsage(t *testing.T) {
	if _, err := runCLI(t, "experiment", "edge", "tables"); !errors.Is(err, errUsage) {
		t.Errorf("experiment edge tables: %v", err)
	}
	if _, err := runCLI(t, "experiment", "edge", "distributions", "--seeds", "0"); !errors.Is(err, errUsage) {
		t.Errorf("--seeds 0: %v", err)
	}
}

// TestTrainEdgeTaskFromLogs: the task records of a log on a 1-s stale view
// train a per-task rule in a grey box (and one by BC) that reads the view's
// age from the logs, saves, and runs by name in 'shoal edge evaluate'; bad
// methods and rules of the wrong shape are refused.
func TestTrainEdgeTaskFromLogs(t *testing.T) {
	dir := t.TempDir()
	logs, grey, bc := filepath.Join(dir, "logs"), filepath.Join(dir, "grey.task"), filepath.Join(dir, "bc.task")
	for _, args := range [][]string{
		{"edge", "log", "-o", logs, "--window", "10m", "--from", "12h", "--staleness", "1s"},
		{"train", "edge-task", logs, "-o", grey, "--episodes", "1", "--no-record"},
		{"train", "edge-task", filepath.Join(logs, "tasks.jsonl"), "-o", bc, "--method", "bc", "--epochs", "1", "--no-record"},
	} {
		out, err := runCLI(t, args...)
		if err != nil || !strings.Contains(out, "wrote") && !strings.Contains(out, "logged 60 steps") {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if args[0] == "train" && !strings.Contains(out, "view 1s stale") {
			t.Errorf("%v: the logs' view age was not read:\n%s", args, out)
		}
	}
	out, err := runCLI(t, "edge", "evaluate", "task:"+grey, "task:file="+bc, "--hours", "12", "--window", "2m", "--staleness", "1s", "--engine", "random")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\ngreedy-tracked ", "\ngrey.task (task-greybox) ", "\nbc.task (bc-task) "} {
		if !strings.Contains(out, want) {
			t.Errorf("edge evaluate prints no %q row:\n%s", want, out)
		}
	}
	if _, err := runCLI(t, "train", "edge-task", logs, "-o", grey, "--method", "dqn"); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "dqn") {
		t.Errorf("--method dqn: %v", err)
	}
	if _, err := runCLI(t, "edge", "evaluate", "task:"+filepath.Join(logs, "tasks.jsonl")); err == nil {
		t.Error("task records as a rule: no error")
	}
}
