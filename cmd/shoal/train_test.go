package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTrainThenSimulate: a trained policy file runs in sim beside the
// selectors; its header records the training.
func TestTrainThenSimulate(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "p.slb")
	out, err := runCLI(t, "train", "distr-lb", "lb-moderate-cpu", "-o", pol, "--episodes", "1", "--quiet", "--curve", filepath.Join(dir, "c.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "wrote "+pol) || !strings.Contains(out, "1 episodes, 400 environment steps") {
		t.Fatalf("train output: %s", out)
	}
	head, _ := os.ReadFile(pol)
	if !strings.Contains(string(head), `"scenario":"lb-moderate-cpu"`) || !strings.Contains(string(head), `"estimate":"backlog"`) {
		t.Fatalf("header: %.300s", head)
	}
	curve, _ := os.ReadFile(filepath.Join(dir, "c.csv"))
	if lines := strings.Count(string(curve), "\n"); lines != 2 {
		t.Fatalf("curve has %d lines:\n%s", lines, curve)
	}
	out, err = runCLI(t, "sim", "lb-moderate-cpu", "--policy", "sed,distr-lb:"+pol+",distr-lb+probing:"+pol, "--seeds", "2", "--horizon", "1m", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\ndistr-lb ") || !strings.Contains(out, "\nsed ") || !strings.Contains(out, "\ndistr-lb+probing ") {
		t.Fatalf("sim output: %s", out)
	}
	// The hybrid probes, but only the servers it has not heard from
	// lately: fewer than Prequal's three per request (the outcome table's
	// last column).
	_, rest, _ := strings.Cut(out, "\nOutcome ")
	_, rest, _ = strings.Cut(rest, "\ndistr-lb+probing ")
	line, _, _ := strings.Cut(rest, "\n")
	f := append([]string{"", "", ""}, strings.Fields(line)...)
	if probes, err := strconv.ParseFloat(f[len(f)-3], 64); err != nil || probes <= 0 || probes >= 3 {
		t.Errorf("hybrid's outcome line does not end with 0 to 3 probes per request: %s", line)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "lb-moderate-cpu", "--policy", "centr-lb:" + pol}, "holds a distr-lb policy"},
		{[]string{"sim", "lb-moderate-cpu", "--policy", "distr-lb:" + filepath.Join(dir, "none.slb")}, "no such file"},
		{[]string{"sim", "lb-moderate-cpu", "--policy", "distr-lb:" + filepath.Join(dir, "c.csv")}, "not a shoal-lb-policy file"},
		{[]string{"train", "distr-lb", "lb-moderate-cpu"}, "-o FILE is required"},
		{[]string{"train", "magic", "lb-moderate-cpu", "-o", pol}, "unknown learner"},
		{[]string{"train", "distr-lb", "lb-moderate-cpu", "-o", pol, "--reward", "speed"}, "unknown reward"},
		{[]string{"train", "distr-lb", "mm1", "-o", pol}, "no explicit lbs"},
		{[]string{"experiment", "distr-lb", "tables"}, "unknown distr-lb experiment"},
	} {
		_, err := runCLI(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
	if _, err := runCLI(t, "train"); !errors.Is(err, errUsage) {
		t.Errorf("train without arguments: %v", err)
	}
}

// TestTrainGeneralThenSimulate: 'train distr-lb --family' writes a general
// policy from a family file (2 generations of 2 pairs and 48 validation
// worlds, twice: 56 episodes), and the file
// runs in sim on a scenario it never saw; bad input names the field.
func TestTrainGeneralThenSimulate(t *testing.T) {
	dir := t.TempDir()
	fam, pol := filepath.Join(dir, "family.yaml"), filepath.Join(dir, "g.slb")
	if err := os.WriteFile(fam, []byte("{servers: [4, 6], lbs: [1, 2], requests: 300}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "train", "distr-lb", "--family", fam, "-o", pol, "--generations", "2", "--pairs", "2", "--no-record")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "2 generations, 56 episodes") || !strings.Contains(out, "wrote "+pol) {
		t.Fatalf("train output: %s", out)
	}
	head, _ := os.ReadFile(pol)
	if !strings.Contains(string(head), `"format":"shoal-lb-general"`) || !strings.Contains(string(head), `requests: 300`) {
		t.Fatalf("header: %.400s", head)
	}
	if !strings.Contains(string(head), `"command":"shoal train distr-lb --family `+fam+` --seed 1 --generations 2 --pairs 2"`) {
		t.Fatalf("the provenance lacks the command: %.400s", head)
	}
	// The file beside the shipped policy: each its own row.
	out, err = runCLI(t, "sim", "lb-drift", "--policy", "probing-sed,distr-lb-general:"+pol+",distr-lb-general", "--seeds", "1", "--horizon", "30s", "--quiet", "--no-record")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\ndistr-lb-general:"+pol+" ") || !strings.Contains(out, "\ndistr-lb-general ") {
		t.Fatalf("sim output: %s", out)
	}
	out, err = runCLI(t, "train", "distr-lb", "--family", fam, "--validate", pol)
	if err != nil || !strings.Contains(out, "on the validation worlds of family "+fam) {
		t.Fatalf("--validate: %v: %s", err, out)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("{load: [0.5, 1.2]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "distr-lb", "--family", bad, "-o", pol}, "load"},
		{[]string{"train", "distr-lb", "lb-drift", "--family", "default", "-o", pol}, "no scenario with --family"},
		{[]string{"train", "distr-lb", "--family", "default", "-o", pol, "--pairs", "-1"}, "must not be negative"},
		{[]string{"sim", "lb-drift", "--policy", "distr-lb-general:" + fam}, "not a shoal-lb-general file"},
		{[]string{"train", "distr-lb", "lb-drift", "--validate", pol}, "--validate needs --family"},
	} {
		if _, err := runCLI(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error with %q", c.args, err, c.want)
		}
	}
}
