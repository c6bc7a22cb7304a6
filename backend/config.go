package backend

import (
	"errors"
	"fmt"
	"math"

	"github.com/shoal-project/shoal/workload"
)

// Config describes the emulated server. It mirrors one instance of a
// cluster.Service (cluster/config.go: Service, InstanceSpec) and the local
// work of the call it serves (cluster.Call: CPU, IO, Phases). Zero values
// mean "default" or "off" as documented, as in the cluster; DefaultConfig
// spells the defaults out. Fields carry YAML names so that a Config can be
// decoded strictly from a file.
type Config struct {
	// Cores is the CPU limit in cores, shared by processor sharing among the
	// requests in a CPU phase (cluster Service.CPU / InstanceSpec.CPU, a
	// scenario's `cpu`). Fractions are allowed: 0.5 serves one request at
	// half speed. Default 1.
	Cores float64 `yaml:"cores"`
	// Speed is the relative CPU speed: work (core-seconds at speed 1) done
	// per core-second (cluster Service.Speed). Default 1.
	Speed float64 `yaml:"speed"`
	// IOSpeed is the relative I/O speed: an I/O phase of t seconds at I/O
	// speed 1 takes t/IOSpeed seconds alone (cluster Service.IOSpeed).
	// Default 1.
	IOSpeed float64 `yaml:"io_speed"`
	// IOParallelism is how many I/O phases are served at full speed before
	// they share the I/O by processor sharing (cluster
	// Service.IOParallelism). 0 makes I/O a pure delay, without contention.
	IOParallelism int `yaml:"io_parallelism"`
	// Phases splits a request's work into that many alternating CPU and I/O
	// phases, CPU first, each 1/Phases of the CPU demand and of the I/O
	// demand (cluster Call.Phases). Default 1: all CPU, then all I/O.
	Phases int `yaml:"phases"`
	// CPU is the distribution of a request's CPU demand in core-seconds at
	// speed 1 (cluster Call.CPU). An empty Dist means no CPU work.
	CPU workload.DistSpec `yaml:"cpu"`
	// IO is the distribution of a request's I/O demand in seconds at I/O
	// speed 1 (cluster Call.IO). An empty Dist means no I/O.
	IO workload.DistSpec `yaml:"io"`
	// Concurrency is the limit on requests in service (admitted) at once;
	// 0 means no limit (cluster Service.Concurrency).
	Concurrency int `yaml:"concurrency"`
	// Queue bounds the requests waiting for a slot beyond Concurrency: 0
	// rejects at the limit with 429 (OpenFaaS max_inflight), -1 is
	// unbounded (cluster Service.Queue). A full queue answers 429. Without
	// a concurrency limit nothing queues, and Queue is ignored, as in the
	// cluster.
	Queue int `yaml:"queue"`
	// Seed seeds the stream (math/rand/v2 PCG) that demands are drawn from
	// when a request does not carry them in its X-Shoal-Demand header.
	Seed uint64 `yaml:"seed"`
}

// DefaultConfig is the configuration with every default spelled out: one
// core at speed 1, I/O speed 1 as a pure delay, one phase, no demand
// distributions, no concurrency limit, seed 1.
func DefaultConfig() Config {
	c := Config{}
	c.fill()
	return c
}

// Bounds that keep a configuration sane (a typo must not allocate a
// million-entry heap or overflow a duration).
const (
	maxPhases = 1000000
	// MaxDemand is the largest CPU or I/O demand a request may carry in its
	// header, in seconds (about 11.6 days).
	MaxDemand = 1e6
)

// fill replaces zero fields by their defaults, as cluster Service.Resolve
// does for an instance (cpu, speed and io_speed default to 1).
func (c *Config) fill() {
	c.Cores = or(c.Cores, 1)
	c.Speed = or(c.Speed, 1)
	c.IOSpeed = or(c.IOSpeed, 1)
	if c.Phases == 0 {
		c.Phases = 1
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
}

func or(x, def float64) float64 {
	if x == 0 {
		return def
	}
	return x
}

// Validate checks the configuration and returns every problem found, each
// naming the field path and the bad value, e.g.
// `cores: must be >= 0 (0 = default 1), got -1` or `cpu.mean: must be > 0, got 0`.
func (c *Config) Validate() error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	for _, f := range []struct {
		name string
		x    float64
	}{{"cores", c.Cores}, {"speed", c.Speed}, {"io_speed", c.IOSpeed}} {
		if !(f.x >= 0) || math.IsInf(f.x, 0) {
			bad(f.name, "must be >= 0 (0 = default 1) and finite, got %v", f.x)
		}
	}
	if c.IOParallelism < 0 {
		bad("io_parallelism", "must be >= 0 (0 = I/O is a pure delay), got %d", c.IOParallelism)
	}
	if c.Phases < 0 || c.Phases > maxPhases {
		bad("phases", "must be in [0, %d] (0 = default 1), got %d", maxPhases, c.Phases)
	}
	if c.CPU.Dist != "" {
		if err := c.CPU.Validate("cpu"); err != nil {
			errs = append(errs, err)
		}
	}
	if c.IO.Dist != "" {
		if err := c.IO.Validate("io"); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Concurrency < 0 {
		bad("concurrency", "must be >= 0 (0 = no limit), got %d", c.Concurrency)
	}
	if c.Queue < -1 {
		bad("queue", "must be >= -1 (-1 = unbounded), got %d", c.Queue)
	}
	return errors.Join(errs...)
}
