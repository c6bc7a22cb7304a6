package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// cancelOn is a stderr that cancels the run once a line contains what.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	what   string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if c.what != "" && strings.Contains(c.buf.String(), c.what) {
		c.cancel()
	}
	return len(p), nil
}

// TestTrainDRPCResumesAfterAnInterruption: 'shoal train drpc' stopped after
// its first episode keeps a checkpoint, refuses to start over it unasked,
// continues from it with --resume, removes it at the end, and the policy it
// writes runs in 'shoal sim'.
func TestTrainDRPCResumesAfterAnInterruption(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "drpc.policy")
	args := []string{"train", "drpc", "trainticket", "-o", pol, "--episodes", "2", "--episode-length", "1m", "--seed", "2"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelOn{what: "episode   1 teacher", cancel: cancel}
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
	if !strings.Contains(log, "resuming after episode 1 (teacher)") || !strings.Contains(log, "episode   2 teacher") ||
		strings.Contains(log, "episode   1 teacher") || !strings.Contains(out.String(), "wrote "+pol) {
		t.Fatalf("resumed run's output:\n%s\n%s", log, out.String())
	}
	if _, err := os.Stat(pol + ".ckpt"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("checkpoint left after a finished run: %v", err)
	}
	res, err := runCLI(t, "sim", "trainticket", "--policy", "hpa,drpc:"+pol, "--seeds", "1", "--horizon", "1m", "--quiet")
	if err != nil || !strings.Contains(res, "\ndrpc ") {
		t.Fatalf("sim with the policy: %v\n%s", err, res)
	}
}
