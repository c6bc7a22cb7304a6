package main

import (
	"path/filepath"
	"strings"
	"testing"
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
