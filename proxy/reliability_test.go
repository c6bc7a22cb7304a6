package proxy

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/lb"
)

// Every test here sends a bounded open-loop load (a few hundred requests
// over about two seconds) and requires that none is lost.

func TestReloadUnderLoadLosesNothing(t *testing.T) {
	a, b, c := newTestBackend(t, "a"), newTestBackend(t, "b"), newTestBackend(t, "c")
	rp := startProxy(t, testConfig(t, "lsq", a, b))
	done := make(chan struct{})
	go func() {
		defer close(done)
		policies := []string{"sed", "p2c", "wrr", "lsq"}
		for i := 0; i < 8; i++ {
			time.Sleep(200 * time.Millisecond)
			next := testConfig(t, policies[i%len(policies)], a, b, c)
			if i%2 == 1 {
				next = testConfig(t, policies[i%len(policies)], c, a) // b leaves, order changes
			}
			if err := rp.Reload(next); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	res := load(t, rp.url+"/?sleep=20ms", 300, 2*time.Second)
	<-done
	requireNoLoss(t, res)
	if s := rp.Status(); s.Generation != 8 {
		t.Fatalf("generation %d after 8 reloads", s.Generation)
	}
	if c.served.Load() == 0 {
		t.Fatal("the backend added by a reload got no request")
	}
}

func TestReloadRejectsListenChange(t *testing.T) {
	a := newTestBackend(t, "a")
	rp := startProxy(t, testConfig(t, "rr", a))
	next := testConfig(t, "rr", a)
	next.Listen = "127.0.0.1:1"
	if err := rp.Reload(next); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("reload with a new listen address: %v", err)
	}
	if rp.Config().Listen != DefaultListen {
		t.Fatal("the failed reload changed the configuration")
	}
}

// writeTestPolicy writes an untrained two-backend Distr-LB policy for lb0
// (its weights still vary with what it observes).
func writeTestPolicy(t *testing.T, period time.Duration) string {
	t.Helper()
	pol, err := lb.NewPolicy("distr-lb", period, []lb.NetSpec{{LBs: []string{"lb0"}, Backends: 2, SeqLen: 4, GRUHidden: 8, Hidden: []int{16}}},
		lb.Provenance{Scenario: "proxy-test"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "policy.slb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pol.Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAgentWeightUpdatesUnderLoadLoseNothing(t *testing.T) {
	a, b := newTestBackend(t, "a"), newTestBackend(t, "b")
	cfg := testConfig(t, "sed", a, b)
	cfg.Policy, cfg.Agent = PolicyDistrLB, &AgentConfig{File: writeTestPolicy(t, 20*time.Millisecond)}
	cfg.ApplyDefaults()
	if err := cfg.Validate(lb.Classical().Names()); err != nil {
		t.Fatal(err)
	}
	rp := startProxy(t, cfg)
	res := load(t, rp.url+"/?sleep=10ms", 300, 2*time.Second)
	requireNoLoss(t, res)
	// The agent decides every period (fewer on a busy machine, whose
	// ticker drops ticks): wait for 50 decisions.
	var s Status
	waitFor(t, func() bool { s = rp.Status(); return s.Agent != nil && s.Agent.Decisions >= 50 })
	if w := s.Backends[0].Weight; w == 1 || w < 0.3 || w > 3.2 {
		t.Fatalf("learned weight %v: want the agent's, in [10^-0.5, 10^0.5] and not the configured 1", w)
	}
	if n := scrapeValue(t, rp.admin, "shoal_proxy_agent_decisions_total"); n < 50 {
		t.Fatalf("agent decisions metric %v", n)
	}
	// Every request's feedback reached the agent and left its in-flight count.
	waitFor(t, func() bool { return rp.Status().Backends[0].InFlight == 0 })
}

func TestBackendKilledAndRestartedUnderLoad(t *testing.T) {
	a, b, c := newTestBackend(t, "a"), newTestBackend(t, "b"), newTestBackend(t, "c")
	cfg := testConfig(t, "p2c", a, b, c)
	cfg.Health.Backoff, cfg.Health.MaxBackoff = 100*time.Millisecond, 200*time.Millisecond
	rp := startProxy(t, cfg)
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		time.Sleep(500 * time.Millisecond)
		b.kill() // in-flight requests at b break: they are retried elsewhere
		time.Sleep(600 * time.Millisecond)
		b.restart()
	}()
	res := load(t, rp.url+"/?sleep=30ms", 300, 2500*time.Millisecond)
	requireNoLoss(t, res)
	if n := scrapeValue(t, rp.admin, `shoal_proxy_retries_total{backend="`+b.url()+`"}`); n == 0 {
		t.Fatal("no request was retried: the kill did not hit any")
	}
	// Once b is back and its ejection has run out, it gets requests again.
	<-restarted
	waitFor(t, func() bool { return rp.Status().Backends[1].Healthy })
	before := b.served.Load()
	res = load(t, rp.url+"/", 200, 500*time.Millisecond)
	requireNoLoss(t, res)
	if b.served.Load() == before {
		t.Fatal("the restarted backend gets no requests")
	}
}

func TestGracefulShutdownDrainsRequests(t *testing.T) {
	a := newTestBackend(t, "a")
	const n = 50
	cfg := testConfig(t, "rr", a)
	cfg.Admission.MaxRequests = n // all in flight at once
	rp := startProxy(t, cfg)
	var wg sync.WaitGroup
	codes := make(chan int, n)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(rp.url + "/?hold=1")
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	waitFor(t, func() bool { return rp.Status().Backends[0].InFlight == n })
	go rp.stop()
	waitFor(t, func() bool { resp, err := http.Get(rp.admin + "/readyz"); return err != nil || resp.StatusCode == 503 })
	a.release() // the proxy is draining: now the requests complete
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Fatalf("a request in flight at shutdown got %d (0: transport error)", c)
		}
	}
	if _, err := http.Get(rp.url + "/"); err == nil {
		t.Fatal("the proxy still accepts after shutdown")
	}
}

func TestSlowClientsAreCutOff(t *testing.T) {
	a := newTestBackend(t, "a")
	cfg := testConfig(t, "rr", a)
	cfg.Timeouts.ReadHeader = 300 * time.Millisecond
	rp := startProxy(t, cfg)
	addr := strings.TrimPrefix(rp.url, "http://")
	// Slowloris: 20 connections trickle a header line every 100 ms, for
	// up to 30 s. Each is cut off (a write fails) long before that:
	// read_header's 300 ms bound the whole header, not each line.
	const lines = 300
	closed := make(chan int, 20) // header lines written before the cut; -1: no connection
	for i := 0; i < 20; i++ {
		go func() {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				closed <- -1
				return
			}
			defer conn.Close()
			conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n"))
			k := 0
			for ; k < lines; k++ {
				time.Sleep(100 * time.Millisecond)
				if _, err := conn.Write([]byte("X-A: b\r\n")); err != nil {
					break
				}
			}
			closed <- k
		}()
	}
	// Meanwhile a normal client is served promptly.
	for i := 0; i < 10; i++ {
		if resp, _ := get(t, rp.url+"/"); resp.StatusCode != 200 {
			t.Fatalf("normal request: %d", resp.StatusCode)
		}
	}
	for i := 0; i < 20; i++ {
		if k := <-closed; k < 0 || k == lines {
			t.Fatalf("slow client: %d header lines, 100 ms apart, written without being cut off (read_header 300ms; -1: no connection)", k)
		}
	}
	// A malformed request gets 400 and the next client is unaffected.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte("GARBAGE\r\n\r\n"))
	line, _ := bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	if !strings.HasPrefix(line, "HTTP/1.1 400") {
		t.Fatalf("malformed request answered %q", line)
	}
	if resp, _ := get(t, rp.url+"/"); resp.StatusCode != 200 {
		t.Fatalf("after a malformed request: %d", resp.StatusCode)
	}
}

// TestOnlineTrainingUnderLoad: with agent.train the proxy learns from its
// own traffic (the actor too, past the warm-up) without losing a request,
// reports it, and saves a readable policy that records the updates.
func TestOnlineTrainingUnderLoad(t *testing.T) {
	a, b := newTestBackend(t, "a"), newTestBackend(t, "b")
	cfg := testConfig(t, "sed", a, b)
	saved := filepath.Join(t.TempDir(), "online.slb")
	cfg.Policy = PolicyDistrLB
	cfg.Agent = &AgentConfig{File: writeTestPolicy(t, 20*time.Millisecond),
		Train: &OnlineTraining{Save: saved, SaveEvery: 500 * time.Millisecond, LearningStarts: 10, CriticWarmup: 10}}
	cfg.ApplyDefaults()
	if err := cfg.Validate(lb.Classical().Names()); err != nil {
		t.Fatal(err)
	}
	rp := startProxy(t, cfg)
	res := load(t, rp.url+"/?sleep=10ms", 300, 2*time.Second)
	requireNoLoss(t, res)
	// It learns every period (fewer on a busy machine) and saves every
	// 500 ms: wait for 20 updates and a save.
	var s Status
	waitFor(t, func() bool {
		s = rp.Status()
		if s.Agent == nil || s.Agent.Training == nil {
			return false
		}
		tr := s.Agent.Training
		return tr.Updates >= 20 && tr.ActorLearns && (!tr.Saved.IsZero() || tr.SaveError != "")
	})
	if s.Agent.Training.SaveError != "" {
		t.Fatalf("not saved: %+v", s.Agent.Training)
	}
	if n := scrapeValue(t, rp.admin, "shoal_proxy_agent_updates"); n < 20 {
		t.Fatalf("updates metric %v", n)
	}
	rp.shutdown(t) // saves once more
	f, err := os.Open(saved)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pol, err := lb.ReadPolicy(f)
	if err != nil {
		t.Fatal(err)
	}
	if pol.Provenance.OnlineUpdates < s.Agent.Training.Updates {
		t.Errorf("saved policy records %d online updates, the status said %d before", pol.Provenance.OnlineUpdates, s.Agent.Training.Updates)
	}
}
