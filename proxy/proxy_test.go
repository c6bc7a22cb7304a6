package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoal-project/shoal/buildinfo"
	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/learn/modelfile"
)

func TestForwardsHeadersAndPath(t *testing.T) {
	b := newTestBackend(t, "a")
	rp := startProxy(t, testConfig(t, "rr", b))
	req, _ := http.NewRequest(http.MethodGet, rp.url+"/some/path?x=1&y=%2F", nil)
	req.Host = "shop.example"
	req.Header.Set("X-Forwarded-For", "203.0.113.7")
	req.Header.Set("Connection", "X-Hop") // X-Hop is hop-by-hop now (RFC 9110 section 7.6.1)
	req.Header.Set("X-Hop", "must not be forwarded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got, want := string(body), "a /some/path?x=1&y=%2F\n"; got != want {
		t.Errorf("body %q, want %q", got, want)
	}
	if got := resp.Header.Get("X-Seen-Forwarded-For"); got != "203.0.113.7, 127.0.0.1" {
		t.Errorf("X-Forwarded-For at the backend %q, want the client appended", got)
	}
	if got := resp.Header.Get("X-Seen-Connection-Header"); got != "" {
		t.Errorf("hop-by-hop header X-Hop forwarded: %q", got)
	}
	if got := resp.Header.Get("X-Seen-Host"); got != "shop.example" {
		t.Errorf("Host at the backend %q, want the client's", got)
	}
}

func TestStreamsResponseBody(t *testing.T) {
	// The backend sends a first chunk, then waits for the client to have
	// read it: a proxy that buffered the body would deadlock, until the
	// backend gives up waiting and sends the rest.
	release := make(chan struct{})
	var gaveUp atomic.Bool
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(30 * time.Second):
			gaveUp.Store(true)
		}
		io.WriteString(w, "second\n")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	cfg := &Config{Backends: []BackendConfig{{URL: "http://" + ln.Addr().String()}}}
	cfg.ApplyDefaults()
	rp := startProxy(t, cfg)
	resp, err := http.Get(rp.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first chunk %q, %v", line, err)
	}
	if gaveUp.Load() {
		t.Fatal("the first chunk arrived only with the whole body")
	}
	close(release)
	if rest, _ := io.ReadAll(r); string(rest) != "second\n" {
		t.Fatalf("rest %q", rest)
	}
}

func TestWeightedRoundRobinFollowsWeights(t *testing.T) {
	a, b := newTestBackend(t, "a"), newTestBackend(t, "b")
	cfg := testConfig(t, "wrr", a, b)
	cfg.Backends[1].Weight = 3
	rp := startProxy(t, cfg)
	count := map[string]int{}
	for i := 0; i < 40; i++ {
		resp, _ := get(t, rp.url+"/")
		count[resp.Header.Get("X-Backend")]++
	}
	if count["a"] != 10 || count["b"] != 30 {
		t.Fatalf("smooth WRR 1:3 over 40 requests gave %v, want a 10, b 30", count)
	}
}

func TestLeastQueueAvoidsBusyBackend(t *testing.T) {
	// One long request occupies a backend; LSQ must send the next ones to
	// the other.
	a, b := newTestBackend(t, "a"), newTestBackend(t, "b")
	rp := startProxy(t, testConfig(t, "lsq", a, b))
	slow := make(chan string)
	go func() {
		resp, err := http.Get(rp.url + "/?hold=1")
		if err != nil {
			slow <- err.Error()
			return
		}
		resp.Body.Close()
		slow <- resp.Header.Get("X-Backend")
	}()
	waitFor(t, func() bool { s := rp.Status(); return s.Backends[0].InFlight+s.Backends[1].InFlight == 1 })
	busy := "a"
	if rp.Status().Backends[1].InFlight == 1 {
		busy = "b"
	}
	for i := 0; i < 5; i++ {
		if resp, _ := get(t, rp.url+"/"); resp.Header.Get("X-Backend") == busy {
			t.Fatalf("request %d went to the busy backend %s", i, busy)
		}
	}
	a.release()
	b.release()
	if got := <-slow; got != busy {
		t.Fatalf("slow request answered by %q, want %s", got, busy)
	}
}

// TestPeakEWMAAvoidsSlowBackend: Linkerd's Peak-EWMA learns from the
// proxy's own response times that one backend answers 200 ms slower, and
// sends it little. The delay is far above what a busy machine adds to the
// fast backend's times: Peak-EWMA keeps the peak of a late answer for
// seconds, and one later than the slow backend's would send it requests.
func TestPeakEWMAAvoidsSlowBackend(t *testing.T) {
	a, b := newTestBackend(t, "a"), newTestBackend(t, "b")
	b.delay.Store(int64(200 * time.Millisecond))
	rp := startProxy(t, testConfig(t, "peak-ewma", a, b))
	for range 200 {
		get(t, rp.url+"/")
	}
	if n := b.served.Load(); n > 20 {
		t.Errorf("the slow backend served %d of 200 requests", n)
	}
}

// TestPrequalProbes: the proxy probes two backends per request (both,
// off the request path) and routes by the answers: the backend that
// reports 20 ms gets few requests.
func TestPrequalProbes(t *testing.T) {
	a, b := newTestBackend(t, "a"), newTestBackend(t, "b")
	b.delay.Store(int64(20 * time.Millisecond))
	rp := startProxy(t, testConfig(t, "prequal", a, b))
	for range 200 {
		get(t, rp.url+"/")
	}
	waitFor(t, func() bool { return a.probes.Load()+b.probes.Load() == 400 })
	if n := b.served.Load(); n > 20 {
		t.Errorf("the slow backend served %d of 200 requests", n)
	}
	// The backends count a probe when it arrives, the proxy when its
	// answer is read: wait for those too.
	want := []string{
		`shoal_proxy_probes_total{backend="` + a.url() + `",result="answered"} 200`,
		`shoal_proxy_probes_total{backend="` + b.url() + `",result="answered"} 200`,
	}
	answered := func() bool {
		metrics := scrape(t, rp.admin)
		return strings.Contains(metrics, want[0]) && strings.Contains(metrics, want[1])
	}
	waitFor(t, answered)
}

// TestMaglevKeepsAffinity: with hash_header, a user's requests all reach
// one backend, and users spread over both.
func TestMaglevKeepsAffinity(t *testing.T) {
	a, b := newTestBackend(t, "a"), newTestBackend(t, "b")
	cfg := testConfig(t, "maglev", a, b)
	cfg.HashHeader = "X-User"
	rp := startProxy(t, cfg)
	users := map[string]int{}
	for u := range 40 {
		first := ""
		for range 5 {
			req, _ := http.NewRequest(http.MethodGet, rp.url+"/", nil)
			req.Header.Set("X-User", fmt.Sprint("user-", u))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := resp.Header.Get("X-Backend")
			if first == "" {
				first = got
			} else if got != first {
				t.Fatalf("user %d went to %s, then %s", u, first, got)
			}
		}
		users[first]++
	}
	if users["a"] < 8 || users["b"] < 8 {
		t.Errorf("users per backend %v: want both well used", users)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRetriesIdempotentRequestsAndEjects(t *testing.T) {
	a, dead := newTestBackend(t, "a"), newTestBackend(t, "dead")
	dead.kill()
	cfg := testConfig(t, "rr", a, dead)
	rp := startProxy(t, cfg)
	for i := 0; i < 10; i++ {
		resp, body := get(t, rp.url+"/")
		if resp.StatusCode != 200 || !strings.HasPrefix(body, "a ") {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
	}
	s := rp.Status()
	if s.Backends[1].Healthy || s.Backends[1].EjectedUntil.IsZero() {
		t.Fatalf("dead backend not ejected after failures: %+v", s.Backends[1])
	}
	// A POST with a body is not replayed: it fails or reaches a.
	var posted, failed int
	for i := 0; i < 4; i++ {
		resp, err := http.Post(rp.url+"/", "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case 200:
			posted++
		case http.StatusBadGateway:
			failed++
		default:
			t.Fatalf("POST: %d", resp.StatusCode)
		}
	}
	if posted+failed != 4 {
		t.Fatalf("posted %d failed %d", posted, failed)
	}
	metrics := scrape(t, rp.admin)
	for _, want := range []string{
		`shoal_proxy_errors_total{backend="` + dead.url() + `",kind="connect"}`,
		`shoal_proxy_retries_total{backend="` + dead.url() + `"}`,
		`shoal_proxy_ejections_total{backend="` + dead.url() + `"} 1`,
		`shoal_proxy_backend_up{backend="` + dead.url() + `"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestEjectionBackoffDoubles(t *testing.T) {
	b := &backend{name: "x"}
	h := Health{Failures: 2, Backoff: time.Second, MaxBackoff: 3 * time.Second}
	now := time.Unix(100, 0)
	var got []time.Duration
	for i := 0; i < 8; i++ {
		if ej, until := b.failed(now, h); ej {
			got = append(got, until.Sub(now))
		}
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ejections %v, want %v", got, want)
	}
	b.succeeded()
	if ej, _ := b.failed(now, h); ej {
		t.Fatal("one failure after a success ejected")
	}
	if ej, until := b.failed(now, h); !ej || until.Sub(now) != time.Second {
		t.Fatalf("backoff not reset by a success: %v %v", ej, until.Sub(now))
	}
}

func TestActiveHealthCheck(t *testing.T) {
	a, b := newTestBackend(t, "a"), newTestBackend(t, "b")
	cfg := testConfig(t, "rr", a, b)
	// A check times out only when the backend is slow, not gone: a long
	// timeout keeps a busy machine from marking a down.
	cfg.Health.Check = &HealthCheck{Interval: 20 * time.Millisecond, Timeout: 10 * time.Second}
	cfg.ApplyDefaults()
	rp := startProxy(t, cfg)
	b.kill()
	waitFor(t, func() bool { return !rp.Status().Backends[1].Healthy })
	for i := 0; i < 6; i++ { // no request even tries b
		if resp, _ := get(t, rp.url+"/"); resp.Header.Get("X-Backend") != "a" {
			t.Fatalf("request %d went to %q", i, resp.Header.Get("X-Backend"))
		}
	}
	if n := scrapeValue(t, rp.admin, `shoal_proxy_errors_total{backend="`+b.url()+`",kind="connect"}`); n != 0 {
		t.Fatalf("%v connection errors at a backend the check had marked down", n)
	}
	b.restart()
	waitFor(t, func() bool { return rp.Status().Backends[1].Healthy })
}

func TestAdminEndpoints(t *testing.T) {
	a := newTestBackend(t, "a")
	rp := startProxy(t, testConfig(t, "sed", a))
	for i := 0; i < 3; i++ {
		get(t, rp.url+"/")
	}
	if resp, body := get(t, rp.admin+"/healthz"); resp.StatusCode != 200 {
		t.Fatalf("healthz %d %q", resp.StatusCode, body)
	}
	if resp, body := get(t, rp.admin+"/readyz"); resp.StatusCode != 200 {
		t.Fatalf("readyz %d %q", resp.StatusCode, body)
	}
	_, body := get(t, rp.admin+"/status")
	var s Status
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("status: %v\n%s", err, body)
	}
	if s.Policy != "sed" || len(s.Backends) != 1 || s.Backends[0].URL != a.url() || s.Backends[0].Weight != 1 {
		t.Fatalf("status %+v", s)
	}
	// A request is counted once its body has gone to the client, which may
	// be a moment after the client has read it.
	requests := `shoal_proxy_requests_total{backend="` + a.url() + `",code="2xx"}`
	waitFor(t, func() bool { return scrapeValue(t, rp.admin, requests) >= 3 })
	if n := scrapeValue(t, rp.admin, requests); n != 3 {
		t.Fatalf("requests_total %v, want 3", n)
	}
	if n := scrapeValue(t, rp.admin, `shoal_proxy_request_duration_seconds_count{backend="`+a.url()+`"}`); n != 3 {
		t.Fatalf("duration count %v, want 3", n)
	}
	bi := buildinfo.Read()
	if n := scrapeValue(t, rp.admin, fmt.Sprintf(`shoal_build_info{goversion="%s",modified="%t",revision="%s",version="%s"}`,
		bi.Go, bi.Dirty, bi.Revision, bi.Version)); n != 1 {
		t.Fatalf("shoal_build_info %v, want 1 with the labels of %+v", n, bi)
	}
	a.kill()
	for i := 0; i < 4; i++ { // eject the only backend
		http.Get(rp.url + "/")
	}
	if resp, _ := get(t, rp.admin+"/readyz"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz with no healthy backend: %d", resp.StatusCode)
	}
}

func scrape(t *testing.T, admin string) string {
	t.Helper()
	_, body := get(t, admin+"/metrics")
	return body
}

// scrapeValue returns the value of the series (name{labels} as exposed).
func scrapeValue(t *testing.T, admin, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(scrape(t, admin), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			if _, err := fmt.Sscan(rest, &v); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	return 0
}

// writeGeneralPolicy writes a general Distr-LB policy whose network
// lowers a server's weight by up to 10^-0.5 as its time at the server
// (feature 1) exceeds the others', or, with slows false, an untrained one
// (probing-sed).
func writeGeneralPolicy(t *testing.T, slows bool) string {
	t.Helper()
	pol, err := lb.NewGeneralPolicy([]int{1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	pol.Period = lb.Duration(20 * time.Millisecond)
	if slows { // y = -5·tanh(x1): the hidden unit reads feature 1 alone
		theta := make([]float64, len(pol.Params()))
		theta[1] = 1                     // W1[1][0]
		theta[lb.GeneralFeatures+1] = -5 // W2[0][0], after W1 and b1
		if err := pol.SetParams(theta); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "general.slb")
	if err := modelfile.WriteFile(path, pol.Write); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGeneralPolicyCorrectsProbingSED: one request at a time finds both
// backends idle, so probing-sed alone splits them about evenly; a general
// policy, reading the 20 ms each of b's responses reports, sends b few.
// Without an agent section the policy Shoal ships runs, and it too sends
// the 20 ms backend fewer requests than the idle one.
func TestGeneralPolicyCorrectsProbingSED(t *testing.T) {
	for _, c := range []struct {
		name   string
		agent  func() *AgentConfig
		served func(n int64) bool // of 200 to the 20 ms backend
	}{
		{"a network that does not slow", func() *AgentConfig { return &AgentConfig{File: writeGeneralPolicy(t, false)} }, func(n int64) bool { return n >= 60 }},
		{"a network that slows", func() *AgentConfig { return &AgentConfig{File: writeGeneralPolicy(t, true)} }, func(n int64) bool { return n <= 20 }},
		{"the shipped policy", func() *AgentConfig { return nil }, func(n int64) bool { return n < 100 }},
	} {
		a, b := newTestBackend(t, "a"), newTestBackend(t, "b")
		a.reportLoad.Store(true)
		b.reportLoad.Store(true)
		b.delay.Store(int64(20 * time.Millisecond))
		cfg := testConfig(t, "sed", a, b)
		cfg.Policy, cfg.Agent = PolicyDistrLBGeneral, c.agent()
		cfg.ApplyDefaults()
		if err := cfg.Validate(lb.Classical().Names()); err != nil {
			t.Fatal(err)
		}
		rp := startProxy(t, cfg)
		for range 200 {
			get(t, rp.url+"/")
		}
		na, nb := a.served.Load(), b.served.Load()
		t.Logf("%s: the 20 ms backend served %d of 200", c.name, nb)
		if na+nb != 200 || !c.served(nb) {
			t.Errorf("%s: the idle backend served %d, the 20 ms one %d of 200", c.name, na, nb)
		}
	}
}
