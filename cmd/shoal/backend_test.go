package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/backend"
	"github.com/shoal-project/shoal/workload"
	"github.com/spf13/pflag"
)

// TestBackendFlags: the command line becomes the server's configuration;
// a scenario instance gives its settings unless flags override them.
func TestBackendFlags(t *testing.T) {
	exp := func(m float64) workload.DistSpec { return workload.DistSpec{Dist: workload.DistExp, Mean: m} }
	for _, tc := range []struct {
		args   []string
		want   backend.Config
		listen string
	}{
		{nil, backend.Config{Cores: 1, Speed: 1, IOSpeed: 1, Phases: 1, CPU: exp(0.01), Seed: 1}, "127.0.0.1:8081"},
		{[]string{"--listen", "127.0.0.1:0", "--cores", "2", "--speed", "1.5", "--io-speed", "2", "--io-parallelism", "3",
			"--phases", "2", "--cpu", "lognormal:0.1:1.5", "--io", "uniform:0.005:0.015", "--concurrency", "4", "--queue", "-1", "--seed", "9"},
			backend.Config{Cores: 2, Speed: 1.5, IOSpeed: 2, IOParallelism: 3, Phases: 2,
				CPU:         workload.DistSpec{Dist: workload.DistLogNormal, Mean: 0.1, CV: 1.5},
				IO:          workload.DistSpec{Dist: workload.DistUniform, Min: 0.005, Max: 0.015},
				Concurrency: 4, Queue: -1, Seed: 9}, "127.0.0.1:0"},
		{[]string{"--cpu", "none", "--io", "det:0.01"},
			backend.Config{Cores: 1, Speed: 1, IOSpeed: 1, Phases: 1, IO: workload.DistSpec{Dist: workload.DistDet, Mean: 0.01}, Seed: 1}, "127.0.0.1:8081"},
		// lb-moderate-misconfigured: instance 0 is {cpu: 1, speed: 1.5},
		// instance 6 {cpu: 4, speed: 1.2}; tasks need exp 1 core-second.
		{[]string{"--scenario", "lb-moderate-misconfigured"},
			backend.Config{Cores: 1, Speed: 1.5, IOSpeed: 1, CPU: exp(1), Seed: 1}, "127.0.0.1:8081"},
		{[]string{"--scenario", "lb-moderate-misconfigured", "--instance", "6"},
			backend.Config{Cores: 4, Speed: 1.2, IOSpeed: 1, CPU: exp(1), Seed: 1}, "127.0.0.1:8081"},
		{[]string{"--scenario", "lb-moderate-misconfigured", "--instance", "6", "--speed", "3", "--cpu", "exp:0.05"},
			backend.Config{Cores: 4, Speed: 3, IOSpeed: 1, CPU: exp(0.05), Seed: 1}, "127.0.0.1:8081"},
		{[]string{"--scenario", "mm1"},
			backend.Config{Cores: 1, Speed: 1, IOSpeed: 1, CPU: exp(0.1), Seed: 1}, "127.0.0.1:8081"},
	} {
		got, listen, err := parseBackendFlags(tc.args)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if !equalBackendConfig(got, tc.want) || listen != tc.listen {
			t.Errorf("%v:\n got %+v on %s\nwant %+v on %s", tc.args, got, listen, tc.want, tc.listen)
		}
	}
}

// parseBackendFlags is the configuration and address that 'shoal backend'
// would serve with these flags.
func parseBackendFlags(args []string) (backend.Config, string, error) {
	var a backendArgs
	fs := pflag.NewFlagSet("backend", pflag.ContinueOnError)
	a.register(fs)
	if err := fs.Parse(args); err != nil {
		return backend.Config{}, "", err
	}
	cfg, err := a.config(fs, io.Discard)
	return cfg, a.listen, err
}

func equalBackendConfig(a, b backend.Config) bool {
	same := func(x, y workload.DistSpec) bool {
		return x.Dist == y.Dist && x.Mean == y.Mean && x.CV == y.CV && x.Min == y.Min && x.Max == y.Max && x.Alpha == y.Alpha
	}
	return a.Cores == b.Cores && a.Speed == b.Speed && a.IOSpeed == b.IOSpeed && a.IOParallelism == b.IOParallelism &&
		a.Phases == b.Phases && same(a.CPU, b.CPU) && same(a.IO, b.IO) && a.Concurrency == b.Concurrency &&
		a.Queue == b.Queue && a.Seed == b.Seed
}

// TestBackendFlagErrors: a bad command line is a usage error that names
// the flag; a scenario that does not exist is an error.
func TestBackendFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		want  string
		usage bool
	}{
		{[]string{"extra"}, `unknown command "extra" for "shoal backend"`, true},
		{[]string{"--bogus"}, "unknown flag: --bogus", true},
		{[]string{"--cores", "0"}, "--cores must be > 0, got 0", true},
		{[]string{"--cores", "x"}, `invalid argument "x" for "--cores" flag`, true},
		{[]string{"--speed", "-1"}, "--speed must be > 0, got -1", true},
		{[]string{"--io-speed", "NaN"}, "--io-speed must be > 0, got NaN", true},
		{[]string{"--io-parallelism", "-1"}, "--io-parallelism must be >= 0", true},
		{[]string{"--phases", "0"}, "--phases must be >= 1", true},
		{[]string{"--concurrency", "-1"}, "--concurrency must be >= 0", true},
		{[]string{"--concurrency", "1", "--queue", "-2"}, "--queue must be >= -1", true},
		{[]string{"--queue", "5"}, "--queue needs --concurrency", true},
		{[]string{"--instance", "1"}, "--instance needs --scenario", true},
		{[]string{"--scenario", "mm1", "--instance", "1"}, `--instance 1: service "server" of scenario mm1 has instances 0 to 0`, true},
		{[]string{"--scenario", "mm1", "--instance", "-1"}, "--instance must be >= 0", true},
		{[]string{"--cpu", "gamma:1"}, `--cpu: "gamma:1": unknown distribution "gamma"`, true},
		{[]string{"--cpu", "exp"}, `--cpu: "exp": exp takes 1 parameters, got 0`, true},
		{[]string{"--cpu", "exp:1:2"}, "exp takes 1 parameters, got 2", true},
		{[]string{"--cpu", "exp:abc"}, `"abc" is not a number`, true},
		{[]string{"--cpu", "exp:-1"}, "mean: must be > 0, got -1", true},
		{[]string{"--io", "uniform:0.2:0.1"}, "--io: \"uniform:0.2:0.1\": max: must satisfy 0 <= min <= max", true},
		{[]string{"--io", "lognormal:0.1:0"}, "cv: must be > 0, got 0", true},
		{[]string{"--io", "none:1"}, "none takes 0 parameters, got 1", true},
		{[]string{"--scenario", "no-such-scenario"}, "no-such-scenario", false},
	} {
		_, err := runCLI(t, append([]string{"backend"}, tc.args...)...)
		if err == nil {
			t.Errorf("%v: no error, want %q", tc.args, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || errors.Is(err, errUsage) != tc.usage {
			t.Errorf("%v: error %q (usage %v), want %q (usage %v)", tc.args, err, errors.Is(err, errUsage), tc.want, tc.usage)
		}
	}
}

// FuzzBackendDistFlag: parseDistFlag never panics, and what it accepts
// formats back to text that parses to the same distribution.
func FuzzBackendDistFlag(f *testing.F) {
	for _, s := range []string{"exp:0.1", "det:0", "lognormal:0.1:1.5", "uniform:0.005:0.015", "pareto:1.5:0.001:1", "none", "exp:", ":", "uniform:1:NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := parseDistFlag(s)
		if err != nil {
			return
		}
		if spec.Dist != "" {
			if err := spec.Validate(""); err != nil {
				t.Fatalf("%q: accepted an invalid spec: %v", s, err)
			}
		}
		text := formatDistFlag(spec)
		back, err := parseDistFlag(text)
		if err != nil || !equalBackendConfig(backend.Config{CPU: back}, backend.Config{CPU: spec}) {
			t.Fatalf("%q: %+v formats to %q, which parses to %+v, %v", s, spec, text, back, err)
		}
	})
}

// lineWriter collects written output and hands over the first line.
type lineWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	first chan string
	sent  bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if line, _, ok := strings.Cut(w.buf.String(), "\n"); ok && !w.sent {
		w.sent = true
		w.first <- line
	}
	return len(p), nil
}

// TestBackendServes runs 'shoal backend' on 127.0.0.1:0: it prints the
// address it listens on, serves a request with the demand it carries, and
// on cancellation lets the request in flight finish and exits cleanly.
func TestBackendServes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lineWriter{first: make(chan string, 1)}
	exited := make(chan error, 1)
	go func() {
		exited <- run(ctx, []string{"backend", "--listen", "127.0.0.1:0", "--cores", "2", "--speed", "2", "--concurrency", "4", "--queue", "8"}, out, io.Discard)
	}()
	var line string
	select {
	case line = <-out.first:
	case err := <-exited:
		t.Fatalf("exited: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("no 'listening' line")
	}
	addr, rest, ok := strings.Cut(strings.TrimPrefix(line, "backend listening on "), " ")
	if !strings.HasPrefix(line, "backend listening on 127.0.0.1:") || !ok || strings.HasSuffix(addr, ":0") {
		t.Fatalf("line %q: want the actual 127.0.0.1 address", line)
	}
	if want := "(cores 2, speed 2, cpu exp:0.01, io none, concurrency 4, queue 8, seed 1)"; rest != want {
		t.Errorf("settings %q, want %q", rest, want)
	}
	url := "http://" + addr

	get := func(path, demand string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodGet, url+path, nil)
		if demand != "" {
			req.Header.Set(backend.HeaderDemand, demand)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	start := time.Now()
	resp, err := get("/", "cpu=0.04,io=0.005")
	if err != nil {
		t.Fatal(err)
	}
	// 0.02 s of CPU at speed 2 and 0.005 s of I/O: at least 0.025 s, and
	// no more than the client waited (in seconds, not milliseconds).
	rtt := time.Since(start).Seconds()
	st, _ := strconv.ParseFloat(resp.Header.Get(backend.HeaderServiceTime), 64)
	if resp.StatusCode != 200 || resp.Header.Get(backend.HeaderDemand) != "cpu=0.04,io=0.005" || st < 0.025-1e-6 || st > rtt {
		t.Errorf("response %d, %s %q, %s %q: want 200, the demand, at least 0.025 s and at most the %.6f s the client waited", resp.StatusCode,
			backend.HeaderDemand, resp.Header.Get(backend.HeaderDemand), backend.HeaderServiceTime, resp.Header.Get(backend.HeaderServiceTime), rtt)
	}
	if resp, err := get("/healthz", ""); err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz: %v %v", resp, err)
	}

	// A request of 1 core-second at speed 2 is in flight (500 ms) when
	// the command is asked to stop: it is answered, then the command exits.
	inflight := make(chan *http.Response, 1)
	go func() {
		resp, err := get("/", "cpu=1")
		if err != nil {
			t.Error(err)
		}
		inflight <- resp
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		var stats backend.Stats
		if resp, err := http.Get(url + "/stats"); err == nil {
			json.NewDecoder(resp.Body).Decode(&stats)
			resp.Body.Close()
		}
		if stats.InService == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the request never arrived")
		}
	}
	cancel()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("did not exit")
	}
	if resp := <-inflight; resp == nil || resp.StatusCode != 200 {
		t.Errorf("in-flight request: %v, want 200", resp)
	}
	if _, err := get("/healthz", ""); err == nil {
		t.Error("still serving after exit")
	}
}
