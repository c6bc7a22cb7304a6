// Package backend is an HTTP test backend that emulates a server of a given
// CPU limit and speed, I/O speed and concurrency limit, following the
// simulator's server model (package cluster) rule for rule, so that
// heterogeneous servers can be emulated on a small machine and the distance
// between simulation and the real system can be measured.
//
// It burns no CPU: a request's CPU phases run in a virtual processor-sharing
// CPU (with n requests in a CPU phase each progresses at
// Speed·min(1, Cores/n) core-seconds per second), kept with virtual time and
// finish tags in a min-heap, and the requests wait on one timer armed to
// the earliest finish.
//
// The usage loop:
//
//	srv, err := backend.New(backend.Config{Cores: 1, Speed: 1.5,
//		CPU: workload.DistSpec{Dist: "exp", Mean: 0.01}, Seed: 1})
//	go http.Serve(listener, srv)
//	// per request: the demand comes from the X-Shoal-Demand header
//	// (`cpu=0.25,io=0.01`) or is drawn from Config.CPU and Config.IO; the
//	// request waits for a slot (Concurrency, Queue; 429 when the queue is
//	// full), runs its CPU and I/O phases, and is answered 200 with the
//	// demand used (X-Shoal-Demand) and its time at the server in seconds
//	// (X-Shoal-Service-Time).
//	st := srv.Stats() // also served as JSON at /stats; /healthz answers "ok"
//
// What it mirrors, and where (cluster/...):
//
//   - ps.go: processor sharing of the CPU limit, attained-service tags,
//     completions rounded up to the nanosecond;
//   - instance.go: arrive (admit, queue or reject), admit, runPhase
//     (alternating CPU and I/O phases, I/O as a pure delay without I/O
//     parallelism, else shared), leave and admitQueued (a freed slot admits
//     the oldest waiting request);
//   - config.go: Service.CPU/Speed/IOSpeed/IOParallelism/Concurrency/Queue
//     and Call.CPU/IO/Phases, with their defaults (Service.Resolve);
//   - call.go: demand drawn CPU first, then I/O, from one seeded stream.
//
// Not emulated: memory and OOM kills, cold starts, downstream calls. A
// request whose client goes away leaves the server at once (the cluster
// keeps serving a call whose client timed out).
package backend

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/workload"
)

// Server is the emulated server, an http.Handler. Requests to /healthz and
// /stats are answered at once; requests to any other path are served. It is
// safe for concurrent use.
type Server struct {
	cfg        Config
	cpuD, ioD  workload.Dist // nil: no demand of that kind
	t0         time.Time     // engine time 0 (monotonic)
	pool       sync.Pool     // of *job
	badRequest int64         // under mu

	mu      sync.Mutex
	rng     *rand.Rand
	eng     *engine
	timer   *time.Timer // fires s.tick at the next event
	armed   bool
	armedAt time.Duration
}

// New returns a server for cfg; zero fields of cfg take their defaults
// (see Config and DefaultConfig). It validates cfg and builds the demand
// distributions.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("backend: %w", err)
	}
	cfg.fill()
	s := &Server{cfg: cfg, t0: time.Now()}
	var err error
	if cfg.CPU.Dist != "" {
		if s.cpuD, err = cfg.CPU.Build(); err != nil {
			return nil, fmt.Errorf("backend: cpu: %w", err)
		}
	}
	if cfg.IO.Dist != "" {
		if s.ioD, err = cfg.IO.Build(); err != nil {
			return nil, fmt.Errorf("backend: io: %w", err)
		}
	}
	s.rng = rand.New(rand.NewPCG(cfg.Seed, 0))
	s.eng = newEngine(&cfg)
	s.timer = time.AfterFunc(time.Hour, s.tick)
	s.timer.Stop()
	return s, nil
}

// Config returns the server's configuration with the defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// now is the engine time: monotonic time since the server was created.
func (s *Server) now() time.Duration { return time.Since(s.t0) }

// tick runs when the timer fires: it processes the events that are due and
// re-arms the timer.
func (s *Server) tick() {
	s.mu.Lock()
	s.armed = false // a stale firing re-arms to the same instant: harmless
	now := s.now()
	s.eng.advance(now)
	s.arm(now)
	s.mu.Unlock()
}

// arm sets the timer to the engine's next event (s.mu held, after
// advance(now), so the next event is after now).
func (s *Server) arm(now time.Duration) {
	t, ok := s.eng.next()
	if !ok {
		if s.armed {
			s.timer.Stop()
			s.armed = false
		}
		return
	}
	if s.armed && t == s.armedAt {
		return
	}
	s.timer.Reset(t - now)
	s.armed, s.armedAt = true, t
}

func (s *Server) getJob() *job {
	if j, ok := s.pool.Get().(*job); ok {
		return j
	}
	return &job{ch: make(chan struct{}, 1)}
}

var okBody = []byte("ok\n")

// ServeHTTP implements http.Handler. /healthz answers 200 "ok", /stats
// the Stats as JSON, and /load a load probe (lb.ProbePath: the requests in
// flight and the latency estimate at that many, in lb.HeaderRIF and
// lb.HeaderLatency). A request to any other path is served by the model:
// 200 with the X-Shoal-Demand used and the X-Shoal-Service-Time in seconds
// once it completes; 400 for a bad X-Shoal-Demand header; 429 at once when
// the concurrency limit is reached and the queue is full. A request whose
// context is cancelled (its client went away) leaves the server at once.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz":
		w.Write(okBody)
		return
	case "/stats":
		w.Header().Set("Content-Type", "application/json")
		st := s.Stats()
		json.NewEncoder(w).Encode(&st)
		return
	case lb.ProbePath:
		s.answerProbe(w)
		return
	}
	var d Demand
	given := false
	if h := r.Header.Get(HeaderDemand); h != "" {
		var err error
		if d, err = ParseDemand(h); err != nil {
			s.mu.Lock()
			s.badRequest++
			s.mu.Unlock()
			http.Error(w, "bad "+HeaderDemand+" header: "+err.Error(), http.StatusBadRequest)
			return
		}
		given = true
	}

	j := s.getJob()
	s.mu.Lock()
	now := s.now()
	s.eng.advance(now)
	if !given {
		// cluster/call.go: Cluster.start draws CPU, then I/O.
		if s.cpuD != nil {
			d.CPU = s.cpuD.Sample(s.rng)
		}
		if s.ioD != nil {
			d.IO = s.ioD.Sample(s.rng)
		}
	}
	j.cpu, j.io = d.CPU, d.IO
	if !s.eng.arrive(now, j) {
		s.mu.Unlock()
		s.pool.Put(j)
		http.Error(w, "server busy: concurrency limit reached and queue full", http.StatusTooManyRequests)
		return
	}
	s.arm(now)
	s.mu.Unlock()

	select {
	case <-j.ch:
	case <-r.Context().Done():
		s.mu.Lock()
		now := s.now()
		s.eng.advance(now)
		if !s.eng.cancel(now, j) {
			<-j.ch // it completed meanwhile: consume the signal before reuse
		}
		s.arm(now)
		s.mu.Unlock()
		s.pool.Put(j)
		w.WriteHeader(499) // client closed request (as nginx logs it); nobody reads it
		return
	}
	elapsed := s.now() - j.arrived
	after := j.after
	s.pool.Put(j)

	var b [48]byte
	h := w.Header()
	h.Set(HeaderDemand, string(d.AppendText(b[:0])))
	h.Set(HeaderServiceTime, string(strconv.AppendFloat(b[:0], secs(elapsed), 'f', 6, 64)))
	if int(after) < len(rifValues) {
		h[rifKey] = rifValues[after] // shared, read-only: no allocation
	} else {
		h.Set(lb.HeaderRIF, strconv.Itoa(int(after)))
	}
	w.Write(okBody)
}

// rifKey and rifValues serve the common RIF header values without
// allocating per response.
var (
	rifKey    = http.CanonicalHeaderKey(lb.HeaderRIF)
	rifValues = func() (v [1024][]string) {
		for i := range v {
			v[i] = []string{strconv.Itoa(i)}
		}
		return v
	}()
)

// answerProbe answers a load probe (Prequal) with the requests in flight
// now and the median latency of recent requests that found as many.
func (s *Server) answerProbe(w http.ResponseWriter) {
	s.mu.Lock()
	now := s.now()
	s.eng.advance(now)
	rif := s.eng.rif()
	lat := s.eng.latency.Estimate(rif)
	s.arm(now)
	s.mu.Unlock()
	var b [32]byte
	h := w.Header()
	h.Set(lb.HeaderRIF, string(strconv.AppendInt(b[:0], int64(rif), 10)))
	h.Set(lb.HeaderLatency, string(strconv.AppendFloat(b[:0], secs(lat), 'f', 6, 64)))
	w.Write(okBody)
}

// Stats are the server's counters since it started.
type Stats struct {
	// Served counts requests completed (answered 200).
	Served int64 `json:"served"`
	// Rejected counts requests answered 429: the concurrency limit was
	// reached and the queue was full.
	Rejected int64 `json:"rejected"`
	// Cancelled counts requests whose client went away before completion.
	Cancelled int64 `json:"cancelled"`
	// BadRequests counts requests answered 400 (bad X-Shoal-Demand header).
	BadRequests int64 `json:"bad_requests"`
	// InService is the number of requests holding a concurrency slot now
	// (in a CPU or I/O phase).
	InService int `json:"in_service"`
	// Queued is the number of requests waiting for a slot now.
	Queued int `json:"queued"`
	// BusyCoreSeconds is the integral of the cores in use, min(n, Cores)
	// with n requests in a CPU phase, in core-seconds (cluster psQueue.busy).
	BusyCoreSeconds float64 `json:"busy_core_seconds"`
	// UptimeSeconds is the time since the server was created, in seconds;
	// BusyCoreSeconds / (UptimeSeconds · Cores) is the CPU utilisation.
	UptimeSeconds float64 `json:"uptime_seconds"`
}

// Stats returns the counters now.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.eng.advance(now)
	s.arm(now)
	e := s.eng
	return Stats{
		Served:          e.served,
		Rejected:        e.rejected,
		Cancelled:       e.cancelled,
		BadRequests:     s.badRequest,
		InService:       e.inService(),
		Queued:          e.queued,
		BusyCoreSeconds: e.cpu.BusyUntil(now),
		UptimeSeconds:   secs(now),
	}
}

var _ http.Handler = (*Server)(nil)

func secs(d time.Duration) float64 { return float64(d) / 1e9 }
