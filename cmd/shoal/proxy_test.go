package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-project/shoal/prom/promtest"
	"github.com/shoal-project/shoal/store/pgtest"
)

var built struct {
	sync.Once
	bin string
	vcs bool // stamped with the VCS revision
	err error
}

// buildShoal builds the command once per test process, stamped with the
// VCS revision where there is one (as 'go build' in a clone does).
func buildShoal(t *testing.T) string {
	t.Helper()
	built.Do(func() {
		dir, err := os.MkdirTemp("", "shoal-test-")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "shoal")
		out, err := exec.Command("go", "build", "-buildvcs=auto", "-o", built.bin, ".").CombinedOutput()
		built.vcs = err == nil
		if err != nil && strings.Contains(string(out), "VCS status") {
			// git refuses this checkout (e.g. another owner): build unstamped.
			out, err = exec.Command("go", "build", "-buildvcs=false", "-o", built.bin, ".").CombinedOutput()
		}
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// TestMain records the runs of the tests' commands in a store of their
// own, and stops the PostgreSQL the store's tests start.
// TestSweepUntilKilled's child process skips both.
func TestMain(m *testing.M) {
	if os.Getenv(killedSweepEnv) != "" { // a child that is killed, so leaves nothing behind
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "shoal-cmd-test")
	if err != nil {
		panic(err)
	}
	os.Setenv("SHOAL_DB", filepath.Join(dir, "runs.db"))
	code := pgtest.Run(m)
	if built.bin != "" {
		os.RemoveAll(filepath.Dir(built.bin))
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// proxyState is what a proxy's /status says, in part.
type proxyState struct {
	Generation int
	Backends   []struct{ URL string }
}

// proxyStatus reads the /status of the proxy whose admin listener is
// admin (zero if it does not answer).
func proxyStatus(admin string) (s proxyState) {
	resp, err := http.Get("http://" + admin + "/status")
	if err != nil {
		return s
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(&s)
	return s
}

// waitUntil polls cond for up to 20 s, then fails the test with the log.
func waitUntil(t *testing.T, what string, log fmt.Stringer, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s; proxy log:\n%s", what, log.String())
		}
	}
}

// TestProxySignals runs 'shoal proxy' as a child process: SIGHUP reloads
// the file (a backend added is used, a broken file is refused and the old
// configuration stays), SIGTERM drains the requests in flight and exits 0.
func TestProxySignals(t *testing.T) {
	bin := buildShoal(t)
	var hits [2]struct {
		sync.Mutex
		n int
	}
	// A request with ?hold=1 is held until release is called.
	var held atomic.Int32
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	var backends []string
	for i := range hits {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("hold") != "" {
				held.Add(1)
				select {
				case <-hold:
				case <-r.Context().Done():
				}
			}
			hits[i].Lock()
			hits[i].n++
			hits[i].Unlock()
		}))
		defer srv.Close()
		backends = append(backends, srv.URL)
	}
	defer release() // before the servers close, which waits for their requests
	listen, admin := promtest.FreeAddr(t), promtest.FreeAddr(t)
	conf := filepath.Join(t.TempDir(), "proxy.yaml")
	write := func(text string) {
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	head := fmt.Sprintf("listen: %s\nadmin: %s\npolicy: lsq\n", listen, admin)
	write(head + fmt.Sprintf("backends: [{url: %s}]\n", backends[0]))
	var stderr syncBuffer // written by the process's copier while the test reads it
	cmd := exec.Command(bin, "proxy", "-c", conf)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	status := func() proxyState { return proxyStatus(admin) }
	wait := func(what string, cond func() bool) { t.Helper(); waitUntil(t, what, &stderr, cond) }
	wait("proxy ready", func() bool {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	write(head + fmt.Sprintf("backends: [{url: %s}, {url: %s}]\n", backends[0], backends[1]))
	cmd.Process.Signal(syscall.SIGHUP)
	wait("reload", func() bool { return status().Generation == 1 })
	for i := 0; i < 10; i++ {
		resp, err := http.Get("http://" + listen + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	hits[1].Lock()
	got := hits[1].n
	hits[1].Unlock()
	if got == 0 {
		t.Fatal("the backend added by SIGHUP got no request")
	}
	write("listen: [broken")
	cmd.Process.Signal(syscall.SIGHUP)
	wait("reload error logged", func() bool { return strings.Contains(stderr.String(), "reload failed") })
	if g := status().Generation; g != 1 {
		t.Fatalf("a broken file changed the configuration: generation %d", g)
	}
	// SIGTERM with requests in flight (held at the backends until the
	// proxy drains): each is answered, then the process exits 0.
	const n = 8
	codes := make(chan int, n)
	for i := 0; i < n; i++ {
		go func() {
			resp, err := http.Get("http://" + listen + "/?hold=1")
			if err != nil {
				codes <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	wait("requests in flight", func() bool { return held.Load() == n })
	cmd.Process.Signal(syscall.SIGTERM)
	wait("draining", func() bool {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err != nil || resp.StatusCode == http.StatusServiceUnavailable
	})
	release()
	for i := 0; i < n; i++ {
		if c := <-codes; c != 200 {
			t.Fatalf("request in flight at SIGTERM: %d (0: transport error); proxy log:\n%s", c, stderr.String())
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v; proxy log:\n%s", err, stderr.String())
	}
}

func TestProxyBadConfigFailsAtStart(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "proxy.yaml")
	os.WriteFile(conf, []byte("backends:\n  - {url: http://127.0.0.1:1, weight: -1}\n"), 0o644)
	_, err := runCLI(t, "proxy", "-c", conf)
	if err == nil || !strings.Contains(err.Error(), "backends[0].weight: must be > 0, got -1") {
		t.Fatalf("bad config: %v", err)
	}
	if _, err := runCLI(t, "proxy"); err == nil {
		t.Fatal("proxy without -c started")
	}
}

// TestProxyWatchesItsFile: with --watch, a change of the file's content
// reloads it (as a Balancer's ConfigMap changes when mounted), and a broken
// one leaves the configuration as it was.
func TestProxyWatchesItsFile(t *testing.T) {
	var backends []string
	for range 2 {
		srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		defer srv.Close()
		backends = append(backends, srv.URL)
	}
	listen, admin := promtest.FreeAddr(t), promtest.FreeAddr(t)
	conf := filepath.Join(t.TempDir(), "proxy.yaml")
	head := fmt.Sprintf("listen: %s\nadmin: %s\npolicy: lsq\n", listen, admin)
	write := func(text string) {
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(head + fmt.Sprintf("backends: [{url: %s}]\n", backends[0]))
	ctx, cancel := context.WithCancel(context.Background())
	log := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"proxy", "-c", conf, "--watch", "50ms"}, io.Discard, log) }()
	defer func() { cancel(); <-done }()
	status := func() proxyState { return proxyStatus(admin) }
	wait := func(what string, cond func() bool) { t.Helper(); waitUntil(t, what, log, cond) }
	wait("proxy up", func() bool { return len(status().Backends) == 1 })
	write(head + fmt.Sprintf("backends: [{url: %s}, {url: %s}]\n", backends[0], backends[1]))
	wait("the changed file reloaded", func() bool { s := status(); return s.Generation == 1 && len(s.Backends) == 2 })
	write("listen: [broken")
	wait("the broken file refused", func() bool { return strings.Contains(log.String(), "reload failed") })
	if s := status(); s.Generation != 1 || len(s.Backends) != 2 {
		t.Errorf("a broken file changed the configuration: %+v", s)
	}
}
