package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/experiment"
	"github.com/shoal-project/shoal/kube/kubetest"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/store"
	"github.com/shoal-project/shoal/store/pgtest"
	"github.com/shoal-project/shoal/sweep"
	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tinySweep runs in a few seconds: one scenario, two loads, two policies.
const tinySweep = `name: tiny
scenarios: [lb-moderate-cpu]
loads: [0.7, 0.9]
policies: [sed, probing-sed]
seed: 5
seeds: 2
horizon: 20s
`

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSimRecordsRuns: shoal sim records one run per policy; runs list,
// show and export read them back.
func TestSimRecordsRuns(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	if _, err := runCLI(t, "sim", "lb-moderate-cpu", "--policy", "sed,c3", "--seeds", "2", "--horizon", "20s", "--db", db); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI(t, "sim", "lb-moderate-cpu", "--policy", "sed", "--seeds", "2", "--horizon", "20s", "--db", db, "--no-record"); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "runs", "list", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.Contains(out, " c3 ") || !strings.Contains(out, " sed ") {
		t.Fatalf("runs list:\n%s", out)
	}
	id := strings.Fields(strings.Split(out, "\n")[1])[0]
	out, err = runCLI(t, "runs", "show", id[:8], "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"scenario hash", "--horizon=20s", "p99", "seeds          2 from root seed 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs show lacks %q:\n%s", want, out)
		}
	}
	out, err = runCLI(t, "runs", "export", "--format", "csv", "--policy", "c3", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) != 2 || recs[1][4] != "c3" {
		t.Fatalf("export csv (%v):\n%s", err, out)
	}
	out, err = runCLI(t, "runs", "export", "--db", db)
	var runs []map[string]any
	if err != nil || json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 2 {
		t.Fatalf("export json (%v):\n%s", err, out)
	}
	if _, err := runCLI(t, "runs", "show", "nosuchrun", "--db", db); err == nil || !strings.Contains(err.Error(), "nosuchrun") {
		t.Errorf("a missing run: %v", err)
	}
}

// TestSweepTwiceAndCompare: the same sweep run twice under two ids, on
// SQLite and on PostgreSQL, and runs compare shows both side by side (equal:
// the runs are seeded).
func TestSweepTwiceAndCompare(t *testing.T) {
	spec := writeFile(t, "tiny.yaml", tinySweep)
	for _, db := range []string{filepath.Join(t.TempDir(), "runs.db"), pgtest.Start(t)} {
		for _, id := range []string{"tiny", "tiny-again"} {
			out, err := runCLI(t, "sweep", spec, "--id", id, "--db", db)
			if err != nil || !strings.Contains(out, "4 runs recorded, 0 already stored") {
				t.Fatalf("%s: %v\n%s", id, err, out)
			}
		}
		out, err := runCLI(t, "sweep", spec, "--db", db)
		if err != nil || !strings.Contains(out, "0 runs recorded, 4 already stored") {
			t.Fatalf("resumed a finished sweep: %v\n%s", err, out)
		}
		out, err = runCLI(t, "runs", "compare", "tiny", "tiny-again", "--db", db)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "4 points, 4 in every set") || strings.Count(out, "1.000") != 8 {
			t.Errorf("compare on %s:\n%s", db, out)
		}
		// One sweep's frontier as a report: a chart per load, each with
		// both policies, and the verdict.
		page := filepath.Join(t.TempDir(), "frontier.html")
		if out, err = runCLI(t, "runs", "compare", "tiny", "--report", page, "--db", db); err != nil || !strings.Contains(out, "4 points\n") {
			t.Fatalf("compare one sweep: %v\n%s", err, out)
		}
		html, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`<section class="summary">`, "lb-moderate-cpu at load 0.7", "lb-moderate-cpu at load 0.9",
			`data-name="probing-sed"`, "Every policy has the same cost"} {
			if !strings.Contains(string(html), want) {
				t.Errorf("the sweep's report lacks %q", want)
			}
		}
		out, err = runCLI(t, "sweep", "status", spec, "--db", db)
		if err != nil || !strings.Contains(out, "4 of 4 runs stored") {
			t.Errorf("status: %v\n%s", err, out)
		}
	}
}

// TestSweepKilledResumes: a sweep killed in the middle leaves whole runs
// only; run again, it records the rest, and nothing twice. The sweep runs
// in a child process (this test binary, as sweepUntilKilled) that stops
// itself after its second run and waits to be killed, so the kill point
// does not depend on the machine's speed.
func TestSweepKilledResumes(t *testing.T) {
	bin := buildShoal(t)
	spec := writeFile(t, "tiny.yaml", strings.Replace(tinySweep, "loads: [0.7, 0.9]", "loads: [0.5, 0.6, 0.7, 0.8, 0.9]", 1))
	db := filepath.Join(t.TempDir(), "runs.db")
	ctx := context.Background()
	child := exec.Command(os.Args[0], "-test.run=^TestSweepUntilKilled$")
	child.Env = append(os.Environ(), killedSweepEnv+"="+spec+"|"+db)
	child.Stderr = os.Stderr
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	_ = child.Process.Kill()
	_ = child.Wait()
	var paused int
	if _, serr := fmt.Sscanf(line, "paused after %d runs", &paused); err != nil || serr != nil {
		t.Fatalf("the sweep did not pause: %q, %v", line, err)
	}
	stored := func() int {
		st, err := store.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		keys, err := st.Keys(ctx, "tiny")
		if err != nil {
			t.Fatal(err)
		}
		return len(keys)
	}
	if before := stored(); before != paused || paused < 2 || paused >= 10 {
		t.Fatalf("%d runs stored when killed after %d of 10, want those and some but not all", before, paused)
	}
	out, err := exec.Command(bin, "sweep", spec, "--db", db).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("%d runs recorded, %d already stored", 10-paused, paused)) {
		t.Fatalf("resuming: %v\n%s", err, out)
	}
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.List(ctx, store.Filter{Sweep: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, r := range runs {
		if keys[r.Key] {
			t.Errorf("%s %s at %g recorded twice", r.Scenario, r.Policy, r.Load)
		}
		keys[r.Key] = true
		if len(r.Summary) == 0 {
			t.Errorf("run %s has no statistics", r.ID)
		}
	}
	if len(runs) != 10 {
		t.Fatalf("%d runs after resuming, want 10:\n%s", len(runs), out)
	}
}

// killedSweepEnv makes TestSweepUntilKilled run: SPEC|DB.
const killedSweepEnv = "SHOAL_TEST_KILLED_SWEEP"

// TestSweepUntilKilled is TestSweepKilledResumes' child: it runs the sweep
// as 'shoal sweep --workers 1' does, and once two runs or more are stored
// (a job can record several) it says how many and blocks until it is
// killed.
func TestSweepUntilKilled(t *testing.T) {
	arg := os.Getenv(killedSweepEnv)
	if arg == "" {
		t.Skip("the child of TestSweepKilledResumes")
	}
	specPath, db, _ := strings.Cut(arg, "|")
	spec, err := sweep.Load(specPath)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	r := &sweep.Runner{Spec: spec, Store: st, Workers: 1, CodeVersion: version(),
		Progress: func(done, total int, _ sweep.Job) {
			if done >= 2 {
				fmt.Printf("paused after %d runs\n", done)
				for {
					time.Sleep(time.Hour) // a sleep, which the runtime does not call a deadlock
				}
			}
		}}
	_, err = r.Run(context.Background())
	t.Fatalf("the sweep ran to the end (%v) instead of pausing", err)
}

// TestSweepOnKubernetes: --on kubernetes creates the Indexed Job and its
// ConfigMap on a real apiserver, and sweep status reads the Job's pods
// and the shared store.
func TestSweepOnKubernetes(t *testing.T) {
	c := kubetest.Start(t, 0)
	spec := writeFile(t, "tiny.yaml", tinySweep)
	db := pgtest.Start(t)
	out, err := runCLI(t, "sweep", spec, "--on", "kubernetes", "--kubeconfig", c.Kubeconfig, "--image", "shoal:test",
		"--shards", "3", "--db", db)
	if err != nil || !strings.Contains(out, "submitted job default/shoal-sweep-tiny: 3 shards") {
		t.Fatalf("%v\n%s", err, out)
	}
	ctx := context.Background()
	job, err := c.Client.BatchV1().Jobs("default").Get(ctx, "shoal-sweep-tiny", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *job.Spec.CompletionMode != batchv1.IndexedCompletion || *job.Spec.Completions != 3 {
		t.Fatalf("job spec %+v", job.Spec)
	}
	if _, err := c.Client.CoreV1().ConfigMaps("default").Get(ctx, "shoal-sweep-tiny", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	// What pods 0 and 2 would have done: run their shards into the store.
	for _, shard := range []string{"0/3", "2/3"} {
		if _, err := runCLI(t, "sweep", spec, "--shard", shard, "--db", db); err != nil {
			t.Fatal(err)
		}
	}
	job.Status.Succeeded, job.Status.Active, job.Status.CompletedIndexes = 2, 1, "0,2"
	now := metav1.Now()
	job.Status.StartTime = &now
	if _, err := c.Client.BatchV1().Jobs("default").UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err = runCLI(t, "sweep", "status", spec, "--on", "kubernetes", "--kubeconfig", c.Kubeconfig, "--shards", "3", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"running: 2 of 3 pods succeeded, 1 active", "completed indexes 0,2", "1/3    1     0", "3 of 4 runs stored"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if _, err := runCLI(t, "sweep", spec, "--on", "kubernetes", "--kubeconfig", c.Kubeconfig, "--image", "i", "--db", filepath.Join(t.TempDir(), "x.db")); err == nil {
		t.Error("a SQLite store for pods was accepted")
	}
}

// TestTrainRecordsRun: a training run is recorded with the hash of the
// policy file it wrote and its last episode. An experiment that runs the
// policy read from that file records it with the same hash.
func TestTrainRecordsRun(t *testing.T) {
	dir := t.TempDir()
	db, file := filepath.Join(dir, "runs.db"), filepath.Join(dir, "p.slb")
	if _, err := runCLI(t, "train", "distr-lb", "lb-moderate-cpu", "-o", file, "--episodes", "1", "--episode-steps", "10", "--quiet", "--db", db); err != nil {
		t.Fatal(err)
	}
	runs := listRuns(t, db, store.Filter{Kind: store.KindTrain})
	if len(runs) != 1 {
		t.Fatalf("%d training runs, want 1", len(runs))
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r := runs[0]
	if r.Policy != "distr-lb" || r.PolicyHash != store.Hash(b) || r.Summary["episodes"].Mean != 1 || r.Flags["episodes"] != "1" {
		t.Errorf("recorded %+v", r)
	}
	p, err := lb.ReadPolicy(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var written bytes.Buffer
	if err := experiment.LBPolicy(p).Write(&written); err != nil {
		t.Fatal(err)
	}
	if h := store.Hash(written.Bytes()); h != r.PolicyHash {
		t.Errorf("the policy read from its file hashes to %s, the file to %s", h, r.PolicyHash)
	}
}

// TestExperimentRecordsComparisons: every comparison an experiment makes,
// deep in its study, is recorded, one run per policy.
func TestExperimentRecordsComparisons(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	out, err := runCLI(t, "experiment", "distr-lb", "table3", "--episodes", "1", "--seeds", "1", "--horizon", "10s", "--quiet",
		"--out", dir, "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	runs := listRuns(t, db, store.Filter{Kind: store.KindExperiment})
	// Every policy of the table is a run: count the table's rows.
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "lb-moderate") {
			rows++
		}
	}
	if rows == 0 || len(runs) != rows {
		t.Fatalf("%d runs recorded for %d rows of the table:\n%s", len(runs), rows, out)
	}
	for _, r := range runs {
		learned := strings.Contains(r.Policy, "-lb")
		if r.ScenarioHash == "" || !strings.HasPrefix(r.Flags["command"], "shoal experiment distr-lb table3") || learned != (r.PolicyHash != "") ||
			!r.Started.Before(r.Finished) {
			t.Errorf("recorded %+v", r)
		}
	}
}

// TestExperimentRecordsStudies: the studies not made of comparisons are
// recorded too, a run per row: the edge distributions (Table 1), each
// method's KL per measure as distributions.json has it, and the FaaSConf
// studies' rows, each with its workflow's scenario hash.
func TestExperimentRecordsStudies(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	if _, err := runCLI(t, "experiment", "edge", "distributions", "--seeds", "1", "--agents", "20", "--steps", "5", "--out", dir, "--db", db); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "distributions.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table []struct {
		Method string
		KL     []struct{ Mean float64 }
	}
	if err := json.Unmarshal(b, &table); err != nil {
		t.Fatal(err)
	}
	runs := listRuns(t, db, store.Filter{Kind: store.KindExperiment})
	if len(runs) != len(table) || len(table) == 0 {
		t.Fatalf("%d runs recorded for %d rows of the table", len(runs), len(table))
	}
	for _, row := range table {
		i := slices.IndexFunc(runs, func(r *store.Run) bool { return r.Policy == row.Method })
		if i < 0 || runs[i].Scenario != "edge-agents" || runs[i].ScenarioHash == "" || runs[i].Summary["kl_offloading_ratio"].Mean != row.KL[2].Mean {
			t.Errorf("%s: recorded as %+v", row.Method, runs)
		}
	}
	// runs list shows the statistics asked for.
	out, err := runCLI(t, "runs", "list", "--scenario", "edge-agents", "--stats", "kl_agent,p99", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, " kl_agent  p99 ") {
		t.Errorf("runs list --stats kl_agent,p99 header:\n%s", out)
	}
	for _, row := range table {
		if want := " " + row.Method + " "; !strings.Contains(out, want) || !strings.Contains(out, " "+strconv.FormatFloat(row.KL[3].Mean, 'g', 4, 64)+" ") {
			t.Errorf("runs list lacks %s's kl_agent %.4g:\n%s", row.Method, row.KL[3].Mean, out)
		}
	}

	// FaaSConf's studies take minutes; their rows are recorded alike.
	cmd := &cobra.Command{}
	cmd.SetContext(context.Background())
	r := &experimentRecorder{cl: &cli{stderr: io.Discard}, cmd: cmd, start: time.Now(), rec: recording{db: db}}
	defer r.close()
	cell := experiment.FaaSConfCell{Best: experiment.Stat{Mean: 2.5}}
	if err := recordFaaSRows(r, []experiment.StudyRow{{Scenario: "faas-sequential", Policy: "firm", Load: 1, Row: cell},
		{Scenario: "faas-sequential", Policy: "faasconf", Load: 1, Row: cell}, {Scenario: "faas-branch", Policy: "firm", Load: 1, Row: cell}}); err != nil || r.failed {
		t.Fatalf("recordFaaSRows: %v (store failed: %v)", err, r.failed)
	}
	for _, name := range []string{"faas-sequential", "faas-branch"} {
		sc, err := scenario.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		hash, _ := experiment.ScenarioHash(sc)
		runs := listRuns(t, db, store.Filter{Scenario: name})
		if len(runs) == 0 {
			t.Fatalf("%s: no runs", name)
		}
		for _, run := range runs {
			if run.ScenarioHash != hash || run.Summary["best"].Mean != 2.5 {
				t.Errorf("%s: recorded %+v", name, run)
			}
		}
	}
}

// listRuns lists the runs of the store db that f selects.
func listRuns(t *testing.T, db string, f store.Filter) []*store.Run {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.List(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// TestRunsCompareRunIDs: runs given by id share a row only when they ran
// the same policy; an ecmp run and an oracle run of one scenario and load
// get a row each, and a prefix of 4 characters names a run.
func TestRunsCompareRunIDs(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	for _, load := range []string{"0.7", "0.9"} {
		if _, err := runCLI(t, "sim", "lb-moderate-cpu", "--policy", "ecmp,oracle", "--load", load, "--seeds", "1", "--horizon", "20s", "--db", db); err != nil {
			t.Fatal(err)
		}
	}
	out, err := runCLI(t, "runs", "export", "--db", db)
	var runs []store.Run
	if err != nil || json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 4 {
		t.Fatalf("export json (%v):\n%s", err, out)
	}
	id := map[string]string{} // policy@load -> id
	for _, r := range runs {
		id[fmt.Sprintf("%s@%g", r.Policy, r.Load)] = r.ID
	}
	rows := func(out string) []string { // the table's rows, without the header and the closing line
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[1 : len(lines)-1]
	}
	out, err = runCLI(t, "runs", "compare", id["ecmp@0.9"][:4], id["oracle@0.9"], "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	r := rows(out)
	if len(r) != 2 || !strings.Contains(out, "2 points, 0 in every set") {
		t.Fatalf("an ecmp run against an oracle run: want a row each\n%s", out)
	}
	for k, policy := range []string{"ecmp", "oracle"} {
		f := strings.Fields(r[k])
		// scenario, load, policy, then mean in each set and the ratio
		if f[2] != policy || (policy == "ecmp") != (f[4] == "-") || (policy == "oracle") != (f[3] == "-") {
			t.Errorf("row %q: want %s with a figure in its own run's column only", r[k], policy)
		}
	}
	out, err = runCLI(t, "runs", "compare", id["ecmp@0.7"], id["ecmp@0.9"], "--db", db)
	if r := rows(out); err != nil || len(r) != 1 || !strings.Contains(out, "1 point, 1 in every set") || !strings.HasPrefix(r[0], "lb-moderate-cpu  0.7   ecmp") {
		t.Errorf("one policy at two loads: want one row, labelled with the first run's load (%v)\n%s", err, out)
	}
}
