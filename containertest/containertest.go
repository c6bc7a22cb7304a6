// Package containertest builds Shoal's container image with
// scripts/image.sh and runs containers of it with podman, for tests that
// run the image as users will: the operator against a test control plane,
// the proxy in front of backends, a sweep's pods. Containers share the
// host's network, so they reach servers the tests start on 127.0.0.1.
package containertest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Name is the image's name in podman's store while tests run.
const Name = "localhost/shoal:test"

var (
	once     sync.Once
	built    string // the archive
	buildErr error
	skip     string
)

// Root is the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..")
}

// Podman returns a podman command with the settings of
// scripts/containers.conf, unless CONTAINERS_CONF names others.
func Podman(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "podman", args...)
	cmd.Env = os.Environ()
	if os.Getenv("CONTAINERS_CONF") == "" {
		cmd.Env = append(cmd.Env, "CONTAINERS_CONF="+filepath.Join(Root(), "scripts", "containers.conf"))
	}
	return cmd
}

// Image builds the image once per process (scripts/image.sh) and returns
// the path of its OCI archive. It skips the test, with the reason, where
// podman is missing or cannot run a container (no user namespaces, no
// cgroups); scripts/test.sh installs podman and runc.
func Image(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if _, err := exec.LookPath("podman"); err != nil {
			skip = "podman is not installed (scripts/test.sh installs podman and runc)"
			return
		}
		if out, err := Podman(context.Background(), "info").CombinedOutput(); err != nil {
			skip = fmt.Sprintf("podman cannot work here: %v: %s", err, bytes.TrimSpace(out))
			return
		}
		dir, err := os.MkdirTemp("", "shoal-image")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "shoal-image.tar")
		cmd := exec.Command("bash", filepath.Join(Root(), "scripts", "image.sh"), "-o", built, "-t", Name)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("scripts/image.sh: %v\n%s", err, out)
			return
		}
		// A container that cannot start here says so at its first run.
		if out, err := Podman(context.Background(), "run", "--rm", Name, "version").CombinedOutput(); err != nil {
			skip = fmt.Sprintf("podman cannot run containers here: %v: %s", err, bytes.TrimSpace(out))
		}
	})
	if skip != "" {
		t.Skip(skip)
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

// Container is a running container of the image.
type Container struct {
	ID string
	t  testing.TB
}

// Run starts a container of the image, detached, on the host's network,
// with podman run's opts and the shoal command's args. The test's end
// removes it, and prints its log when the test failed.
func Run(t testing.TB, opts []string, args ...string) *Container {
	t.Helper()
	Image(t)
	all := append([]string{"run", "-d", "--network", "host"}, opts...)
	all = append(append(all, Name), args...)
	out, err := Podman(context.Background(), all...).CombinedOutput()
	if err != nil {
		t.Fatalf("podman run %v: %v\n%s", args, err, out)
	}
	c := &Container{ID: strings.TrimSpace(string(out)), t: t}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("container %s (%v) log:\n%s", c.ID[:12], args, c.Logs())
		}
		_ = Podman(context.Background(), "rm", "-f", "-t", "0", c.ID).Run()
	})
	return c
}

// Logs are what the container printed.
func (c *Container) Logs() string {
	out, _ := Podman(context.Background(), "logs", c.ID).CombinedOutput()
	return string(out)
}

// Pid is the host's process ID of the container's command.
func (c *Container) Pid() int {
	c.t.Helper()
	pid := c.inspect("{{.State.Pid}}")
	if pid <= 0 {
		c.t.Fatalf("container %s: pid %d", c.ID, pid)
	}
	return pid
}

// Stop sends SIGTERM, waits up to timeout for the command to end, and
// returns its exit code.
func (c *Container) Stop(timeout time.Duration) int {
	c.t.Helper()
	if out, err := Podman(context.Background(), "stop", "-t", strconv.Itoa(int(timeout.Seconds())), c.ID).CombinedOutput(); err != nil {
		c.t.Fatalf("podman stop: %v\n%s", err, out)
	}
	return c.inspect("{{.State.ExitCode}}")
}

// Wait waits for the command to end and returns its exit code.
func (c *Container) Wait() int {
	c.t.Helper()
	out, err := Podman(context.Background(), "wait", c.ID).Output()
	if err != nil {
		c.t.Fatalf("podman wait: %v", err)
	}
	code, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return code
}

// inspect reads a number of the container's state (a Go template of
// podman inspect's).
func (c *Container) inspect(format string) int {
	c.t.Helper()
	out, err := Podman(context.Background(), "inspect", "--format", format, c.ID).Output()
	if err != nil {
		c.t.Fatalf("podman inspect %s: %v", c.ID, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		c.t.Fatalf("podman inspect %s %s: %q", c.ID, format, out)
	}
	return n
}
