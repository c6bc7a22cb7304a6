package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/backend"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
)

// backendShutdownTimeout bounds how long in-flight requests may take to
// finish once the backend is asked to stop.
const backendShutdownTimeout = 10 * time.Second

// cmdBackend serves an emulated server (package backend) on --listen until
// ctx is cancelled, then shuts down gracefully: in-flight requests finish.
func cmdBackend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, listen, err := backendFlags(args, stderr)
	if err != nil {
		return err
	}
	srv, err := backend.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("backend: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "backend listening on %s (%s)\n", ln.Addr(), describeBackend(srv.Config()))
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("backend: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), backendShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
		return fmt.Errorf("backend: shutting down: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("backend: %w", err)
	}
	return nil
}

// backendFlags turns the command line of 'shoal backend' into the server's
// configuration and the address to listen on. Explicit flags override what
// --scenario gives.
func backendFlags(args []string, stderr io.Writer) (backend.Config, string, error) {
	fs := flag.NewFlagSet("backend", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	listen := fs.String("listen", "127.0.0.1:8081", "")
	cores := fs.Float64("cores", 1, "")
	speed := fs.Float64("speed", 1, "")
	ioSpeed := fs.Float64("io-speed", 1, "")
	ioParallelism := fs.Int("io-parallelism", 0, "")
	phases := fs.Int("phases", 1, "")
	cpu := fs.String("cpu", "exp:0.01", "")
	ioDist := fs.String("io", "none", "")
	concurrency := fs.Int("concurrency", 0, "")
	queue := fs.Int("queue", 0, "")
	scenarioArg := fs.String("scenario", "", "")
	instance := fs.Int("instance", 0, "")
	seed := fs.Uint64("seed", 1, "")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return backend.Config{}, "", err
	}
	if len(pos) > 0 {
		return backend.Config{}, "", fmt.Errorf("backend: unexpected argument %q (the settings are flags): %w", pos[0], errUsage)
	}
	for _, f := range []struct {
		name string
		x    float64
	}{{"cores", *cores}, {"speed", *speed}, {"io-speed", *ioSpeed}} {
		if !(f.x > 0) || math.IsInf(f.x, 0) {
			return backend.Config{}, "", fmt.Errorf("backend: --%s must be > 0, got %v: %w", f.name, f.x, errUsage)
		}
	}
	switch {
	case *ioParallelism < 0:
		return backend.Config{}, "", fmt.Errorf("backend: --io-parallelism must be >= 0, got %d: %w", *ioParallelism, errUsage)
	case *phases < 1:
		return backend.Config{}, "", fmt.Errorf("backend: --phases must be >= 1, got %d: %w", *phases, errUsage)
	case *concurrency < 0:
		return backend.Config{}, "", fmt.Errorf("backend: --concurrency must be >= 0 (0 = no limit), got %d: %w", *concurrency, errUsage)
	case *queue < -1:
		return backend.Config{}, "", fmt.Errorf("backend: --queue must be >= -1 (-1 = unbounded), got %d: %w", *queue, errUsage)
	case *instance < 0:
		return backend.Config{}, "", fmt.Errorf("backend: --instance must be >= 0, got %d: %w", *instance, errUsage)
	case flagSet(fs, "instance") && *scenarioArg == "":
		return backend.Config{}, "", fmt.Errorf("backend: --instance needs --scenario: %w", errUsage)
	}
	cpuSpec, err := parseDistFlag(*cpu)
	if err != nil {
		return backend.Config{}, "", fmt.Errorf("backend: --cpu: %v: %w", err, errUsage)
	}
	ioSpec, err := parseDistFlag(*ioDist)
	if err != nil {
		return backend.Config{}, "", fmt.Errorf("backend: --io: %v: %w", err, errUsage)
	}

	cfg := backend.Config{Cores: *cores, Speed: *speed, IOSpeed: *ioSpeed, IOParallelism: *ioParallelism,
		Phases: *phases, CPU: cpuSpec, IO: ioSpec, Concurrency: *concurrency, Queue: *queue, Seed: *seed}
	if *scenarioArg != "" {
		sc, err := backendFromScenario(*scenarioArg, *instance, stderr)
		if err != nil {
			return backend.Config{}, "", err
		}
		if !flagSet(fs, "cores") {
			cfg.Cores = sc.Cores
		}
		if !flagSet(fs, "speed") {
			cfg.Speed = sc.Speed
		}
		if !flagSet(fs, "io-speed") {
			cfg.IOSpeed = sc.IOSpeed
		}
		if !flagSet(fs, "io-parallelism") {
			cfg.IOParallelism = sc.IOParallelism
		}
		if !flagSet(fs, "phases") {
			cfg.Phases = sc.Phases
		}
		if !flagSet(fs, "cpu") {
			cfg.CPU = sc.CPU
		}
		if !flagSet(fs, "io") {
			cfg.IO = sc.IO
		}
		if !flagSet(fs, "concurrency") {
			cfg.Concurrency = sc.Concurrency
		}
		if !flagSet(fs, "queue") {
			cfg.Queue = sc.Queue
		}
	}
	if flagSet(fs, "queue") && *queue != 0 && cfg.Concurrency == 0 {
		return backend.Config{}, "", fmt.Errorf("backend: --queue needs --concurrency (requests queue only beyond the limit): %w", errUsage)
	}
	if err := cfg.Validate(); err != nil {
		return backend.Config{}, "", fmt.Errorf("backend: %w", err)
	}
	return cfg, *listen, nil
}

// backendFromScenario is the configuration of instance i of a scenario's
// first service, with the local work of the first class whose request
// enters that service, as cluster resolves them (Service.InitialInstances).
// Notes on what the backend does not emulate go to stderr.
func backendFromScenario(arg string, i int, stderr io.Writer) (backend.Config, error) {
	sc, err := scenario.Lookup(arg)
	if err != nil {
		return backend.Config{}, err
	}
	if len(sc.Services) == 0 {
		return backend.Config{}, fmt.Errorf("backend: scenario %s has no service", sc.Name)
	}
	svc := &sc.Services[0]
	insts := svc.InitialInstances()
	if i >= len(insts) {
		return backend.Config{}, fmt.Errorf("backend: --instance %d: service %q of scenario %s has instances 0 to %d: %w",
			i, svc.Name, sc.Name, len(insts)-1, errUsage)
	}
	in := insts[i]
	cfg := backend.Config{Cores: in.CPU, Speed: in.Speed, IOSpeed: in.IOSpeed, IOParallelism: svc.IOParallelism,
		Concurrency: svc.Concurrency, Queue: svc.Queue}
	found := false
	for _, c := range sc.Classes {
		if c.Call.Service != svc.Name {
			continue
		}
		cfg.CPU, cfg.IO, cfg.Phases = c.Call.CPU, c.Call.IO, c.Call.Phases
		if len(c.Call.Stages) > 0 {
			fmt.Fprintf(stderr, "backend: class %q also calls other services; only its local work at %q is emulated\n", c.Name, svc.Name)
		}
		found = true
		break
	}
	if !found {
		return backend.Config{}, fmt.Errorf("backend: scenario %s has no class whose requests enter service %q", sc.Name, svc.Name)
	}
	if svc.MemoryMB > 0 || svc.ColdStart > 0 {
		fmt.Fprintf(stderr, "backend: service %q has a memory limit or a cold start; the backend emulates neither\n", svc.Name)
	}
	return cfg, nil
}

// parseDistFlag parses a demand distribution in compact form: exp:MEAN,
// det:VALUE, lognormal:MEAN:CV, uniform:MIN:MAX, pareto:ALPHA:MIN:MAX (in
// seconds), or none (no demand: the empty spec).
func parseDistFlag(s string) (workload.DistSpec, error) {
	kind, rest, _ := strings.Cut(s, ":")
	var args []float64
	if rest != "" {
		for _, f := range strings.Split(rest, ":") {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return workload.DistSpec{}, fmt.Errorf("%q: %q is not a number", s, f)
			}
			args = append(args, x)
		}
	}
	want := map[string]int{"none": 0, workload.DistExp: 1, workload.DistDet: 1, workload.DistLogNormal: 2,
		workload.DistUniform: 2, workload.DistPareto: 3}
	n, ok := want[kind]
	if !ok {
		return workload.DistSpec{}, fmt.Errorf("%q: unknown distribution %q (want exp:MEAN, det:VALUE, lognormal:MEAN:CV, uniform:MIN:MAX, pareto:ALPHA:MIN:MAX or none)", s, kind)
	}
	if len(args) != n {
		return workload.DistSpec{}, fmt.Errorf("%q: %s takes %d parameters, got %d", s, kind, n, len(args))
	}
	var spec workload.DistSpec
	switch kind {
	case "none":
		return spec, nil
	case workload.DistExp, workload.DistDet:
		spec = workload.DistSpec{Dist: kind, Mean: args[0]}
	case workload.DistLogNormal:
		spec = workload.DistSpec{Dist: kind, Mean: args[0], CV: args[1]}
	case workload.DistUniform:
		spec = workload.DistSpec{Dist: kind, Min: args[0], Max: args[1]}
	case workload.DistPareto:
		spec = workload.DistSpec{Dist: kind, Alpha: args[0], Min: args[1], Max: args[2]}
	}
	if err := spec.Validate(""); err != nil {
		return workload.DistSpec{}, fmt.Errorf("%q: %w", s, err)
	}
	return spec, nil
}

// formatDistFlag is the compact form of a distribution, as parseDistFlag
// reads it where it can.
func formatDistFlag(d workload.DistSpec) string {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	var s string
	switch d.Dist {
	case "":
		return "none"
	case workload.DistExp, workload.DistDet:
		s = d.Dist + ":" + g(d.Mean)
	case workload.DistLogNormal:
		s = d.Dist + ":" + g(d.Mean) + ":" + g(d.CV)
	case workload.DistUniform:
		if d.Mean != 0 || d.CV != 0 {
			s = "uniform(mean " + g(d.Mean) + ", cv " + g(d.CV) + ")"
		} else {
			s = d.Dist + ":" + g(d.Min) + ":" + g(d.Max)
		}
	case workload.DistPareto:
		s = d.Dist + ":" + g(d.Alpha) + ":" + g(d.Min) + ":" + g(d.Max)
	case workload.DistEmpirical:
		if d.Trace != "" {
			s = "empirical(trace " + d.Trace + ")"
		} else {
			s = "empirical(" + strconv.Itoa(len(d.Values)) + " values)"
		}
	default:
		s = d.Dist
	}
	if d.Scale != 0 && d.Scale != 1 {
		s += " x" + g(d.Scale)
	}
	return s
}

// describeBackend is the one-line summary of a configuration (defaults
// filled in) that 'shoal backend' prints once listening.
func describeBackend(c backend.Config) string {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	parts := []string{"cores " + g(c.Cores), "speed " + g(c.Speed), "cpu " + formatDistFlag(c.CPU), "io " + formatDistFlag(c.IO)}
	if c.IO.Dist != "" || c.IOSpeed != 1 {
		parts = append(parts, "io speed "+g(c.IOSpeed))
	}
	if c.IOParallelism > 0 {
		parts = append(parts, "io parallelism "+strconv.Itoa(c.IOParallelism))
	}
	if c.Phases > 1 {
		parts = append(parts, "phases "+strconv.Itoa(c.Phases))
	}
	if c.Concurrency == 0 {
		parts = append(parts, "concurrency unlimited")
	} else {
		q := strconv.Itoa(c.Queue)
		if c.Queue < 0 {
			q = "unbounded"
		}
		parts = append(parts, "concurrency "+strconv.Itoa(c.Concurrency), "queue "+q)
	}
	parts = append(parts, "seed "+strconv.FormatUint(c.Seed, 10))
	return strings.Join(parts, ", ")
}
