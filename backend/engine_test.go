package backend

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

func sec(x float64) time.Duration { return time.Duration(math.Round(x * 1e9)) }

// runEngine feeds jobs to an engine in engine time (no wall clock): arrivals
// at their instants, cancellations at theirs (0 = never), and returns each
// job's outcome: its time in the system, or -1 rejected, -2 cancelled.
func runEngine(t testing.TB, cfg Config, jobs []refJob) []time.Duration {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.fill()
	e := newEngine(&cfg)
	type ev struct {
		at     time.Duration
		i      int
		cancel bool
	}
	var evs []ev
	for i, j := range jobs {
		evs = append(evs, ev{j.arrive, i, false})
		if j.cancel > 0 {
			evs = append(evs, ev{j.cancel, i, true})
		}
	}
	sort.SliceStable(evs, func(a, b int) bool { return evs[a].at < evs[b].at })
	out := make([]time.Duration, len(jobs))
	js := make([]*job, len(jobs))
	for _, v := range evs {
		e.advance(v.at)
		if !v.cancel {
			j := &job{cpu: jobs[v.i].cpu, io: jobs[v.i].io}
			js[v.i] = j
			if !e.arrive(v.at, j) {
				out[v.i] = -1
				js[v.i] = nil
			}
			continue
		}
		if j := js[v.i]; j != nil && e.cancel(v.at, j) {
			out[v.i] = -2
			js[v.i] = nil
		}
	}
	e.advance(time.Duration(1) << 60)
	for i, j := range js {
		if j == nil {
			continue
		}
		if j.at != atDone {
			t.Fatalf("job %d not done (at %d)", i, j.at)
		}
		out[i] = j.done - j.arrived
	}
	if _, ok := e.next(); ok || e.admitted != 0 || e.queued != 0 {
		t.Fatalf("engine not empty at the end: admitted %d, queued %d", e.admitted, e.queued)
	}
	return out
}

// TestBackendEngineInstanceSpeeds is cluster/hetero_test.go's
// TestInstanceSpeeds on the engine, case for case: n calls arriving together
// on instances that differ in CPU limit, speed, I/O speed and I/O
// parallelism.
func TestBackendEngineInstanceSpeeds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		cpu, io float64
		n       int
		want    time.Duration // every call's latency
	}{
		{"speed 2", Config{Speed: 2}, 1, 0, 1, sec(0.5)},
		{"half a core", Config{Cores: 0.5}, 1, 0, 1, sec(2)},
		{"one job cannot use two cores", Config{Cores: 2}, 1, 0, 1, sec(1)},
		{"two jobs on two cores", Config{Cores: 2}, 1, 0, 2, sec(1)},
		{"three jobs share two cores", Config{Cores: 2}, 1, 0, 3, sec(1.5)},
		{"three jobs, two cores at speed 2", Config{Cores: 2, Speed: 2}, 1, 0, 3, sec(0.75)},
		{"io pure delay at speed 2", Config{IOSpeed: 2}, 0, 1, 3, sec(0.5)},
		{"io shared by one channel", Config{IOParallelism: 1}, 0, 1, 2, sec(2)},
		{"io two channels", Config{IOParallelism: 2}, 0, 1, 2, sec(1)},
		{"io three share two channels at speed 2", Config{IOParallelism: 2, IOSpeed: 2}, 0, 1, 3, sec(0.75)},
		// Two calls alternate 0.5 CPU and 0.5 I/O twice: CPU shared (1 s),
		// I/O (0.5 s), CPU shared (1 s), I/O (0.5 s).
		{"two phases", Config{Phases: 2}, 1, 1, 2, sec(3)},
		{"two phases alone", Config{Phases: 2}, 1, 1, 1, sec(2)},
		// The backend's own: the misconfigured scenario's fastest server.
		{"lb-moderate-misconfigured instance 0", Config{Cores: 1, Speed: 1.5}, 1.5, 0, 2, sec(2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs := make([]refJob, tc.n)
			for i := range jobs {
				jobs[i] = refJob{cpu: tc.cpu, io: tc.io}
			}
			for i, d := range runEngine(t, tc.cfg, jobs) {
				if (d - tc.want).Abs() > 4 {
					t.Errorf("call %d: %v, want %v", i, d, tc.want)
				}
			}
		})
	}
}

// refJob is a job of the reference model: arrival and cancellation instants
// (0 = never cancelled) and demand.
type refJob struct {
	arrive, cancel time.Duration
	cpu, io        float64
}

// reference is a plain version of the server model to test the engine
// against: at every event it recomputes every job's rate and the next
// event by scanning all jobs, O(n) per event, in float64 seconds. It
// returns what runEngine returns.
func reference(cfg Config, jobs []refJob) []float64 {
	cfg.fill()
	const (
		waiting = iota
		queued
		inCPU
		inIO
		finished
		gone
	)
	type state struct {
		st     int
		phase  int
		rem    float64 // work left in the current phase
		admitT float64
	}
	n := len(jobs)
	s := make([]state, n)
	out := make([]float64, n)
	var fifo []int
	admitted := 0
	phases := cfg.Phases
	// start runs job i's phases from its current one at time t.
	var start func(i int, t float64)
	release := func(t float64) {
		admitted--
		for len(fifo) > 0 && (cfg.Concurrency == 0 || admitted < cfg.Concurrency) {
			k := fifo[0]
			fifo = fifo[1:]
			admitted++
			start(k, t)
		}
	}
	start = func(i int, t float64) {
		for s[i].phase < 2*phases {
			if s[i].phase%2 == 0 {
				if w := jobs[i].cpu / float64(phases); w > 0 {
					s[i].st, s[i].rem = inCPU, w
					return
				}
			} else if w := jobs[i].io / float64(phases); w > 0 {
				s[i].st, s[i].rem = inIO, w
				return
			}
			s[i].phase++
		}
		s[i].st = finished
		out[i] = t - secs(jobs[i].arrive)
		release(t)
	}
	t := 0.0
	for {
		var nCPU, nIO float64
		for i := range s {
			switch s[i].st {
			case inCPU:
				nCPU++
			case inIO:
				nIO++
			}
		}
		cpuRate := cfg.Speed * math.Min(1, cfg.Cores/nCPU)
		ioRate := cfg.IOSpeed
		if cfg.IOParallelism > 0 {
			ioRate *= math.Min(1, float64(cfg.IOParallelism)/nIO)
		}
		next, kind, who := math.Inf(1), 0, -1
		for i := range s {
			at := math.Inf(1)
			switch s[i].st {
			case waiting:
				at = secs(jobs[i].arrive)
			case inCPU:
				at = t + s[i].rem/cpuRate
			case inIO:
				at = t + s[i].rem/ioRate
			case queued:
			default:
				continue
			}
			if at < next {
				next, kind, who = at, 0, i
			}
			if jobs[i].cancel > 0 && s[i].st != waiting {
				if c := secs(jobs[i].cancel); c < next {
					next, kind, who = c, 1, i
				}
			}
		}
		if who < 0 {
			return out
		}
		dt := next - t
		for i := range s {
			switch s[i].st {
			case inCPU:
				s[i].rem -= cpuRate * dt
			case inIO:
				s[i].rem -= ioRate * dt
			}
		}
		t = next
		i := who
		switch {
		case kind == 1: // cancellation
			was := s[i].st
			s[i].st = gone
			out[i] = -2
			if was == queued {
				for k, q := range fifo {
					if q == i {
						fifo = append(fifo[:k], fifo[k+1:]...)
						break
					}
				}
			} else {
				release(t)
			}
		case s[i].st == waiting: // arrival
			if cfg.Concurrency > 0 && admitted >= cfg.Concurrency {
				if cfg.Queue < 0 || len(fifo) < cfg.Queue {
					s[i].st = queued
					fifo = append(fifo, i)
				} else {
					s[i].st = gone
					out[i] = -1
				}
				continue
			}
			admitted++
			start(i, t)
		default: // end of a phase
			s[i].phase++
			start(i, t)
		}
	}
}

// TestBackendEngineMatchesReference is a property test of the engine against
// the plain model on random configurations and loads, with queues,
// rejections and cancellations in every place a request can be.
func TestBackendEngineMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 300 {
		cfg := Config{
			Cores:         []float64{0.5, 1, 2, 3}[rng.IntN(4)],
			Speed:         []float64{0.5, 1, 1.5}[rng.IntN(3)],
			IOSpeed:       []float64{1, 2}[rng.IntN(2)],
			IOParallelism: rng.IntN(3),
			Phases:        1 + rng.IntN(3),
			Concurrency:   []int{0, 1, 3}[rng.IntN(3)],
			Queue:         []int{-1, 0, 2}[rng.IntN(3)],
		}
		n := 1 + rng.IntN(40)
		jobs := make([]refJob, n)
		at := time.Duration(0)
		for i := range jobs {
			at += sec(rng.ExpFloat64() * 0.3)
			j := refJob{arrive: at + 1}
			if rng.IntN(4) > 0 {
				j.cpu = rng.ExpFloat64() * 0.5
			}
			if rng.IntN(2) > 0 {
				j.io = rng.ExpFloat64() * 0.3
			}
			if rng.IntN(6) == 0 {
				j.cancel = j.arrive + sec(rng.Float64())
			}
			jobs[i] = j
		}
		got := runEngine(t, cfg, jobs)
		want := reference(cfg, jobs)
		for i := range jobs {
			g, w := got[i], want[i]
			if w < 0 || g < 0 {
				if float64(g) != w {
					t.Fatalf("trial %d %+v, job %d: outcome %v, reference %v", trial, cfg, i, g, w)
				}
				continue
			}
			if math.Abs(secs(g)-w) > 1e-6 {
				t.Fatalf("trial %d %+v, job %d: %v, reference %.9fs", trial, cfg, i, g, w)
			}
		}
	}
}

func ExampleDemand_String() {
	fmt.Println(Demand{CPU: 0.25, IO: 0.01})
	// Output: cpu=0.25,io=0.01
}
