package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/scenario"
)

// cancelOn is a stderr that cancels the run once a line contains what
// (after a line that contains after, if set).
type cancelOn struct {
	mu          sync.Mutex
	buf         bytes.Buffer
	what, after string
	cancel      context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	_, rest, found := strings.Cut(c.buf.String(), c.after)
	if c.what != "" && found && strings.Contains(rest, c.what) {
		c.cancel()
	}
	return len(p), nil
}

// TestTrainDRPCResumesAfterAnInterruption: 'shoal train drpc' stopped after
// its first teacher episode keeps a checkpoint (of the round of two it was in), refuses to start over it unasked,
// continues from it with --resume, removes it at the end, and the policy it
// writes runs in 'shoal sim'. One seed, no forecast and no budget: a
// checkpoint's mechanics (TestTrainDRPCDefaults runs the default recipe).
func TestTrainDRPCResumesAfterAnInterruption(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "drpc.policy")
	args := []string{"train", "drpc", "trainticket", "-o", pol, "--episodes", "2", "--episode-length", "1m", "--seed", "2",
		"--seeds", "1", "--forecast=false", "--budget-cpu", "none"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelOn{what: "episode   2 teacher", cancel: cancel} // after the base rule's validation
	var out bytes.Buffer
	err := run(ctx, args, &out, stderr)
	if err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("interrupted run: error %v; stderr:\n%s", err, stderr.buf.String())
	}
	if _, err := os.Stat(pol + ".ckpt"); err != nil {
		t.Fatalf("no checkpoint after the interruption: %v", err)
	}
	if _, err := runCLI(t, args...); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), pol+".ckpt") {
		t.Fatalf("a new run over the checkpoint: %v", err)
	}
	stderr = &cancelOn{}
	out.Reset()
	if err := run(context.Background(), append(args, "--resume"), &out, stderr); err != nil {
		t.Fatalf("resumed run: %v\n%s", err, stderr.buf.String())
	}
	log := stderr.buf.String()
	// The two teacher episodes ran as one round on two workers, saved
	// whole: the run resumes after both.
	if !strings.Contains(log, "resuming after episode 3 (teacher)") || !strings.Contains(log, "episode   4 imitation") ||
		strings.Contains(log, "teacher    reward") || !strings.Contains(out.String(), "wrote "+pol) {
		t.Fatalf("resumed run's output:\n%s\n%s", log, out.String())
	}
	if _, err := os.Stat(pol + ".ckpt"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("checkpoint left after a finished run: %v", err)
	}
	res, err := runCLI(t, "sim", "trainticket", "--policy", "hpa,drpc:"+pol, "--seeds", "1", "--horizon", "1m", "--quiet")
	if err != nil || !strings.Contains(res, "\ndrpc ") {
		t.Fatalf("sim with the policy: %v\n%s", err, res)
	}
	// On a variant whose ts-assurance-service may not be browned out, the
	// policy is refused at load, naming the service, or runs without
	// brownout there with --drop-mismatch.
	raw, err := scenario.Raw("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	const optional = "name: ts-assurance-service, optional: true, min_replicas: 0"
	if !bytes.Contains(raw, []byte(optional)) {
		t.Fatalf("trainticket no longer says %q", optional)
	}
	variant := filepath.Join(dir, "variant.yaml")
	if err := os.WriteFile(variant, bytes.Replace(raw, []byte(optional), []byte("name: ts-assurance-service, min_replicas: 1"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	simArgs := []string{"sim", variant, "--policy", "drpc:" + pol, "--seeds", "1", "--horizon", "1m", "--quiet", "--no-record"}
	if _, err := runCLI(t, simArgs...); err == nil || !strings.Contains(err.Error(), "ts-assurance-service: the policy may brown it out, but it is not optional here") ||
		!strings.Contains(err.Error(), "--drop-mismatch") {
		t.Fatalf("the policy on a world where it may not brown out: %v", err)
	}
	stderr = &cancelOn{}
	out.Reset()
	if err := run(context.Background(), append(simArgs, "--drop-mismatch"), &out, stderr); err != nil || !strings.Contains(out.String(), "\ndrpc ") ||
		!strings.Contains(stderr.buf.String(), "ts-assurance-service: the policy may brown it out, but it is not optional here; brownout dropped") {
		t.Fatalf("--drop-mismatch: %v\n%s\n%s", err, out.String(), stderr.buf.String())
	}
	// The policy fine-tuned on another mix; --init keeps its own predictor
	// and rules, and a missing file is named.
	tuned := filepath.Join(dir, "buyers.policy")
	ftArgs := []string{"train", "drpc", "trainticket-buyers", "--init", pol, "-o", tuned, "--episodes", "1", "--episode-length", "1m", "--seed", "3", "--seeds", "1"}
	if res, err := runCLI(t, ftArgs...); err != nil || !strings.Contains(res, "wrote "+tuned) {
		t.Fatalf("fine-tuning: %v\n%s", err, res)
	}
	if _, err := runCLI(t, append(ftArgs, "--forecast")...); !errors.Is(err, errUsage) {
		t.Errorf("--init with --forecast: %v", err)
	}
	missing := filepath.Join(dir, "missing.policy")
	if _, err := runCLI(t, "train", "drpc", "trainticket-buyers", "--init", missing, "-o", tuned); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("--init with a missing file: %v", err)
	}
}

// TestTrainDRPCDefaults: with no flags but short episodes, 'shoal train
// drpc' runs the measured recipe: the HPA's bill as the budget, a forecast,
// two seeds of which the better on the selection episodes is kept. Stopped
// while the second seed trains, it keeps the first seed's policy, refuses
// to start over it unasked and, with --resume, trains only the second; the
// seeds' files are gone at the end.
func TestTrainDRPCDefaults(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "drpc.policy")
	args := []string{"train", "drpc", "trainticket", "-o", pol, "--episodes", "1", "--episode-length", "1m", "--select-episodes", "1"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelOn{what: "episode   2 forecast", after: "training seed 2", cancel: cancel}
	var out bytes.Buffer
	if err := run(ctx, args, &out, stderr); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("interrupted run: error %v; stderr:\n%s", err, stderr.buf.String())
	}
	if !regexp.MustCompile(`budget \d+\.\d vCPUs: 2 times the HPA's mean \d+\.\d vCPUs on 1 selection episodes`).MatchString(stderr.buf.String()) {
		t.Errorf("no line of the HPA's bill:\n%s", stderr.buf.String())
	}
	if _, err := runCLI(t, args...); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), pol+".seed1") {
		t.Fatalf("a new run over seed 1's policy: %v", err)
	}
	stderr = &cancelOn{}
	out.Reset()
	if err := run(context.Background(), append(args, "--resume"), &out, stderr); err != nil {
		t.Fatalf("resumed run: %v\n%s", err, stderr.buf.String())
	}
	log, res := stderr.buf.String(), out.String()
	if strings.Contains(log, "training seed 1") || !strings.Contains(log, "resuming after episode 2 (forecast)") {
		t.Errorf("the resumed run trained seed 1 again, or not seed 2 from its checkpoint:\n%s", log)
	}
	kept := regexp.MustCompile(`(?m)^seed [12] on 1 selection episodes: .* vCPUs \(kept\)$`).FindAllString(res, -1)
	if len(kept) != 1 || strings.Count(res, "on 1 selection episodes") != 2 || !strings.Contains(res, "of 2)") {
		t.Errorf("not one seed kept of two:\n%s", res)
	}
	for _, f := range []string{pol + ".seed1", pol + ".seed2", pol + ".seed2.ckpt"} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after the run: %v", f, err)
		}
	}
	p, err := readFile(pol, drpc.ReadPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if p.Forecaster() == nil || p.Provenance.Seed != uint64(kept[0][5]-'0') {
		t.Errorf("policy: forecaster %v, seed %d; want a forecast and the kept seed (%s)", p.Forecaster() != nil, p.Provenance.Seed, kept[0])
	}
	if p.OverHPA == nil || p.OverHPA.Target != 75 || p.Base != nil {
		t.Errorf("policy: over_hpa %+v, base %+v; want it over trainticket's HPA at 75%% CPU, with no base rule", p.OverHPA, p.Base)
	}
	for _, bad := range [][]string{{"--over-hpa", "0"}, {"--over-hpa", "kpa"}, {"--residual=false"}} {
		if _, err := runCLI(t, append([]string{"train", "drpc", "trainticket", "-o", pol}, bad...)...); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), bad[0][:10]) {
			t.Errorf("%v: %v", bad, err)
		}
	}
	for _, bad := range []string{"hpa:0", "hpa:x", "kpa", "-3"} {
		if _, err := runCLI(t, "train", "drpc", "trainticket", "-o", pol, "--budget-cpu", bad); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--budget-cpu") {
			t.Errorf("--budget-cpu %s: %v", bad, err)
		}
	}
}
