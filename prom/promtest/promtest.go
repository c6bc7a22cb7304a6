// Package promtest starts a real Prometheus server (the Debian package,
// which scripts/test.sh installs) on loopback for tests, scraping given
// targets every second.
package promtest

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Need returns the path of a Debian program a test needs. scripts/test.sh
// installs it, so under CI its absence fails the test; elsewhere the test
// is skipped, saying what to install.
func Need(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		why := fmt.Sprintf("%s not found: install the Debian package %s (scripts/test.sh does)", name, pkg)
		if os.Getenv("CI") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	return p
}

// FreeAddr returns a 127.0.0.1 address that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Server is a running Prometheus.
type Server struct {
	URL  string // http://127.0.0.1:port
	stop func()
}

// Stop stops the server (the test's end also does).
func (s *Server) Stop() { s.stop() }

// Start starts Prometheus scraping the targets (host:port, /metrics) as
// job "test" every second, and stops it when the test ends; on failure
// the test's log gets Prometheus's.
func Start(t testing.TB, targets ...string) *Server {
	t.Helper()
	return StartGroups(t, Group{Targets: targets})
}

// Group is targets whose series get labels, as a scrape job's target
// labels (Kubernetes service discovery's namespace, service) would.
type Group struct {
	Targets []string
	Labels  map[string]string
}

// StartGroups is Start with target groups.
func StartGroups(t testing.TB, groups ...Group) *Server {
	t.Helper()
	bin := Need(t, "prometheus", "prometheus")
	dir := t.TempDir()
	conf := filepath.Join(dir, "prometheus.yml")
	cfg := "global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n  - job_name: test\n    static_configs:\n"
	for _, g := range groups {
		var labels []string
		for k, v := range g.Labels {
			labels = append(labels, fmt.Sprintf("%s: %q", k, v))
		}
		sort.Strings(labels)
		cfg += fmt.Sprintf("      - {targets: [%q], labels: {%s}}\n", strings.Join(g.Targets, `", "`), strings.Join(labels, ", "))
	}
	if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	web := FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+web, "--log.level=warn")
	out, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			log, _ := os.ReadFile(out.Name())
			t.Logf("prometheus log:\n%s", log)
		}
		out.Close()
	})
	return &Server{URL: "http://" + web, stop: stop}
}

// Wait polls until ready says the server has what a test needs, or fails
// the test after timeout.
func Wait(t testing.TB, timeout time.Duration, what string, ready func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := ready()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus: %s: never (last error %v)", what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Paced calls step(n) for n = 0, 1, ... once per unit of wall time,
// catching up however late the machine is, from a goroutine, until the
// test ends: an exporter's counters then grow at known rates.
func Paced(t testing.TB, unit time.Duration, step func(n int)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(unit / 5)
		defer tick.Stop()
		start := time.Now()
		for n := 0; ; n++ {
			for time.Since(start) < time.Duration(n)*unit {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
			step(n)
		}
	}()
}

// Serve serves reg's metrics on a loopback port until the test ends and
// returns its address (host:port), a target for Start.
func Serve(t testing.TB, reg *prometheus.Registry) string {
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}
