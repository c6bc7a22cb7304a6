package main

import (
	"context"
	"errors"
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
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// backendShutdownTimeout bounds how long in-flight requests may take to
// finish once the backend is asked to stop.
const backendShutdownTimeout = 10 * time.Second

func (cl *cli) backend() *cobra.Command {
	var a backendArgs
	cmd := &cobra.Command{
		Use:   "backend [flags]",
		Short: "Emulate a server of given cores and speed (HTTP test backend)",
		Long: `Serve HTTP as an emulated server: each request needs CPU work (core-seconds at
speed 1) and optionally I/O, served by processor sharing of --cores at --speed, as
the simulator's instances serve calls. A request header X-Shoal-Demand: cpu=0.25,io=0.01
sets that request's demand (common random numbers). Responses carry X-Shoal-Demand
and X-Shoal-Service-Time (seconds at the server). GET /healthz and GET /stats (JSON)
report health and counters. SIGTERM stops it after up to 10 s of drain.

DIST is exp:MEAN, det:VALUE, lognormal:MEAN:CV, uniform:MIN:MAX,
pareto:ALPHA:MIN:MAX or none, in seconds.`,
		Example: `  shoal backend --listen 127.0.0.1:8081 --cores 2 --cpu exp:0.01
  shoal backend --scenario lb-moderate-cpu --instance 3 --listen 127.0.0.1:0`,
		Args: cobra.NoArgs,
	}
	a.register(cmd.Flags())
	cmd.RunE = cl.action(func(cmd *cobra.Command, _ []string) error {
		cfg, err := a.config(cmd.Flags(), cl.stderr)
		if err != nil {
			return err
		}
		return serveBackend(cmd.Context(), cfg, a.listen, cl.stdout)
	})
	return cmd
}

// serveBackend serves an emulated server (package backend) on listen until
// ctx is cancelled, then shuts down gracefully: in-flight requests finish.
func serveBackend(ctx context.Context, cfg backend.Config, listen string, stdout io.Writer) error {
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

// backendArgs are the flags of 'shoal backend'.
type backendArgs struct {
	listen, cpu, io, scenario          string
	cores, speed, ioSpeed              float64
	ioParallelism, phases, concurrency int
	queue, instance                    int
	seed                               uint64
}

func (a *backendArgs) register(f *pflag.FlagSet) {
	f.StringVar(&a.listen, "listen", "127.0.0.1:8081", "`address` to listen on; port 0 picks a free port, which the first line printed shows")
	f.Float64Var(&a.cores, "cores", 1, "CPU limit in cores, shared by processor sharing (fractions allowed)")
	f.Float64Var(&a.speed, "speed", 1, "CPU speed: work done per core-second")
	f.Float64Var(&a.ioSpeed, "io-speed", 1, "I/O speed factor")
	f.IntVar(&a.ioParallelism, "io-parallelism", 0, "I/O phases served at full speed before they share (0: I/O is a pure delay)")
	f.IntVar(&a.phases, "phases", 1, "alternating CPU and I/O phases per request, CPU first")
	f.StringVar(&a.cpu, "cpu", "exp:0.01", "CPU demand in core-seconds at speed 1, a `DIST`")
	f.StringVar(&a.io, "io", "none", "I/O demand in seconds at I/O speed 1, a `DIST`")
	f.IntVar(&a.concurrency, "concurrency", 0, "requests in service at once (0: unlimited)")
	f.IntVar(&a.queue, "queue", 0, "requests waiting beyond --concurrency (0: reject at the limit; -1 unbounded); a full queue answers 429")
	f.StringVar(&a.scenario, "scenario", "", "take cores, speed, I/O settings, concurrency, queue and demand from a `scenario` (name or file)")
	f.IntVar(&a.instance, "instance", 0, "with --scenario: emulate instance N (from 0) of its first service; explicit flags override its settings")
	f.Uint64Var(&a.seed, "seed", 1, "seed of the demand stream")
}

// config turns the parsed flags into the server's configuration. Explicit
// flags override what --scenario gives.
func (a *backendArgs) config(fs *pflag.FlagSet, stderr io.Writer) (backend.Config, error) {
	for _, f := range []struct {
		name string
		x    float64
	}{{"cores", a.cores}, {"speed", a.speed}, {"io-speed", a.ioSpeed}} {
		if !(f.x > 0) || math.IsInf(f.x, 0) {
			return backend.Config{}, usagef("--%s must be > 0, got %v", f.name, f.x)
		}
	}
	switch {
	case a.ioParallelism < 0:
		return backend.Config{}, usagef("--io-parallelism must be >= 0, got %d", a.ioParallelism)
	case a.phases < 1:
		return backend.Config{}, usagef("--phases must be >= 1, got %d", a.phases)
	case a.concurrency < 0:
		return backend.Config{}, usagef("--concurrency must be >= 0 (0 = no limit), got %d", a.concurrency)
	case a.queue < -1:
		return backend.Config{}, usagef("--queue must be >= -1 (-1 = unbounded), got %d", a.queue)
	case a.instance < 0:
		return backend.Config{}, usagef("--instance must be >= 0, got %d", a.instance)
	case fs.Changed("instance") && a.scenario == "":
		return backend.Config{}, usagef("--instance needs --scenario")
	}
	cpuSpec, err := parseDistFlag(a.cpu)
	if err != nil {
		return backend.Config{}, usagef("--cpu: %v", err)
	}
	ioSpec, err := parseDistFlag(a.io)
	if err != nil {
		return backend.Config{}, usagef("--io: %v", err)
	}

	cfg := backend.Config{Cores: a.cores, Speed: a.speed, IOSpeed: a.ioSpeed, IOParallelism: a.ioParallelism,
		Phases: a.phases, CPU: cpuSpec, IO: ioSpec, Concurrency: a.concurrency, Queue: a.queue, Seed: a.seed}
	if a.scenario != "" {
		sc, err := backendFromScenario(a.scenario, a.instance, stderr)
		if err != nil {
			return backend.Config{}, err
		}
		fromScenario(fs, "cores", &cfg.Cores, sc.Cores)
		fromScenario(fs, "speed", &cfg.Speed, sc.Speed)
		fromScenario(fs, "io-speed", &cfg.IOSpeed, sc.IOSpeed)
		fromScenario(fs, "io-parallelism", &cfg.IOParallelism, sc.IOParallelism)
		fromScenario(fs, "phases", &cfg.Phases, sc.Phases)
		fromScenario(fs, "cpu", &cfg.CPU, sc.CPU)
		fromScenario(fs, "io", &cfg.IO, sc.IO)
		fromScenario(fs, "concurrency", &cfg.Concurrency, sc.Concurrency)
		fromScenario(fs, "queue", &cfg.Queue, sc.Queue)
	}
	if fs.Changed("queue") && a.queue != 0 && cfg.Concurrency == 0 {
		return backend.Config{}, usagef("--queue needs --concurrency (requests queue only beyond the limit)")
	}
	if err := cfg.Validate(); err != nil {
		return backend.Config{}, fmt.Errorf("backend: %w", err)
	}
	return cfg, nil
}

// fromScenario sets *dst to the scenario's value unless the flag was given.
func fromScenario[T any](fs *pflag.FlagSet, flag string, dst *T, v T) {
	if !fs.Changed(flag) {
		*dst = v
	}
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
		return backend.Config{}, usagef("--instance %d: service %q of scenario %s has instances 0 to %d",
			i, svc.Name, sc.Name, len(insts)-1)
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
