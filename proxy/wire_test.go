package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/proxy/http1"
)

// rawBackend serves each connection on 127.0.0.1 with handle, for
// behaviour that net/http would not produce (closing kept-alive
// connections, no Date, bodies delimited by the close).
func rawBackend(t testing.TB, handle func(c net.Conn, br *bufio.Reader)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); handle(c, bufio.NewReader(c)) }()
		}
	}()
	return "http://" + ln.Addr().String()
}

// echoBackend answers with what it saw: the body, its length and its
// framing at the backend.
func echoBackend(t testing.TB) string {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.Header().Set("X-Seen-Length", fmt.Sprint(r.ContentLength))
		w.Header().Set("X-Seen-Chunked", fmt.Sprint(len(r.TransferEncoding) > 0))
		w.Header().Set("X-Seen-Expect", r.Header.Get("Expect"))
		w.Write(body)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func proxyFor(t *testing.T, urls ...string) *runningProxy {
	t.Helper()
	cfg := &Config{}
	for _, u := range urls {
		cfg.Backends = append(cfg.Backends, BackendConfig{URL: u})
	}
	cfg.ApplyDefaults()
	return startProxy(t, cfg)
}

// rawClient is a client connection to the proxy that writes bytes as
// given and reads responses with http.ReadResponse.
type rawClient struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialProxy(t *testing.T, rp *runningProxy) *rawClient {
	c, err := net.Dial("tcp", strings.TrimPrefix(rp.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawClient{t: t, c: c, br: bufio.NewReader(c)}
}

func (rc *rawClient) send(s string) {
	rc.t.Helper()
	if _, err := io.WriteString(rc.c, s); err != nil {
		rc.t.Fatal(err)
	}
}

// response reads one response to a request with method and its body.
func (rc *rawClient) response(method string) (*http.Response, string) {
	rc.t.Helper()
	resp, err := http.ReadResponse(rc.br, &http.Request{Method: method})
	if err != nil {
		rc.t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		rc.t.Fatal(err)
	}
	return resp, string(body)
}

// closed reports whether the proxy closed the connection (within 30 s).
func (rc *rawClient) closed() bool {
	rc.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := rc.br.ReadByte()
	return err == io.EOF
}

func TestRelaysRequestBodies(t *testing.T) {
	rp := proxyFor(t, echoBackend(t))
	rc := dialProxy(t, rp)
	tests := []struct {
		name, req, body, length, chunked string
	}{
		{name: "length", req: "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", body: "hello", length: "5", chunked: "false"},
		{name: "chunked", req: "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n",
			body: "abcde", length: "-1", chunked: "true"},
		{name: "empty", req: "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", body: "", length: "0", chunked: "false"},
	}
	for _, tt := range tests {
		rc.send(tt.req)
		resp, body := rc.response("POST")
		if resp.StatusCode != 200 || body != tt.body || resp.Header.Get("X-Seen-Length") != tt.length || resp.Header.Get("X-Seen-Chunked") != tt.chunked {
			t.Errorf("%s: %d %q, backend saw length %s chunked %s", tt.name, resp.StatusCode, body, resp.Header.Get("X-Seen-Length"), resp.Header.Get("X-Seen-Chunked"))
		}
	}
}

func TestExpectContinue(t *testing.T) {
	rp := proxyFor(t, echoBackend(t))
	rc := dialProxy(t, rp)
	rc.send("PUT /a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
	// The proxy asks for the body itself before it sends anything on.
	resp, _ := rc.response("PUT")
	if resp.StatusCode != http.StatusContinue {
		t.Fatalf("got %d, want 100 Continue first", resp.StatusCode)
	}
	rc.send("body")
	resp, body := rc.response("PUT")
	if resp.StatusCode != 200 || body != "body" || resp.Header.Get("X-Seen-Expect") != "" {
		t.Errorf("got %d %q, Expect at the backend %q", resp.StatusCode, body, resp.Header.Get("X-Seen-Expect"))
	}
}

func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	b := newTestBackend(t, "a")
	rp := proxyFor(t, b.url())
	rc := dialProxy(t, rp)
	rc.send("GET /1?sleep=30ms HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nHEAD /3 HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []string{"a /1?sleep=30ms\n", "a /2\n"} {
		if _, body := rc.response("GET"); body != want {
			t.Errorf("got %q, want %q", body, want)
		}
	}
	resp, body := rc.response("HEAD")
	if resp.StatusCode != 200 || body != "" {
		t.Errorf("HEAD: %d %q", resp.StatusCode, body)
	}
}

// The next request may come while the proxy serves one (pipelining in
// separate segments), split across segments, or after a body: the proxy
// waits for a request without first reading (serveLoop), and must not miss
// any of these.
func TestRequestsArrivingWhileServing(t *testing.T) {
	b := newTestBackend(t, "a")
	rp := proxyFor(t, b.url())
	rc := dialProxy(t, rp)
	rc.send("GET /1?sleep=100ms HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(30 * time.Millisecond) // the proxy waits for the backend
	rc.send("GET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []string{"a /1?sleep=100ms\n", "a /2\n"} {
		if _, body := rc.response("GET"); body != want {
			t.Fatalf("got %q, want %q", body, want)
		}
	}
	// A head in pieces, the first byte alone.
	for _, part := range []string{"G", "ET /3 HTTP/1.1\r\nHo", "st: x\r\n", "\r\n"} {
		rc.send(part)
		time.Sleep(20 * time.Millisecond)
	}
	if _, body := rc.response("GET"); body != "a /3\n" {
		t.Fatalf("head in pieces: got %q", body)
	}
	// A request with a body (served outside the loop), then one without,
	// sent while the first is served.
	rc.send("POST /4?sleep=50ms HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nda")
	time.Sleep(20 * time.Millisecond)
	rc.send("ta")
	time.Sleep(10 * time.Millisecond)
	rc.send("GET /5 HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []string{"a /4?sleep=50ms\n", "a /5\n"} {
		if _, body := rc.response("GET"); body != want {
			t.Fatalf("got %q, want %q", body, want)
		}
	}
	// A head longer than the client buffer, then a short one after it.
	long := "GET /6 HTTP/1.1\r\nHost: x\r\nX-Long: " + strings.Repeat("y", 3*clientBuffer) + "\r\n\r\n"
	rc.send(long + "GET /7 HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []string{"a /6\n", "a /7\n"} {
		if _, body := rc.response("GET"); body != want {
			t.Fatalf("got %q, want %q", body, want)
		}
	}
}

// A client that half-closes after its request gets the response and then
// the close, however its FIN and the request's bytes reach the proxy
// (together or not: serveLoop's finCheck).
func TestHalfClosedClientIsClosed(t *testing.T) {
	b := newTestBackend(t, "a")
	rp := proxyFor(t, b.url())
	for i := 0; i < 100; i++ {
		rc := dialProxy(t, rp)
		rc.send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
		rc.c.(*net.TCPConn).CloseWrite()
		if _, body := rc.response("GET"); body != "a /x\n" {
			t.Fatalf("got %q", body)
		}
		start := time.Now()
		rc.c.SetReadDeadline(start.Add(5 * time.Second))
		if _, err := rc.br.ReadByte(); err != io.EOF {
			t.Fatalf("connection %d: %v after %v, want the close", i, err, time.Since(start))
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("connection %d closed %v after the response", i, d)
		}
		rc.c.Close()
	}
}

func TestHTTP10Clients(t *testing.T) {
	b := newTestBackend(t, "a")
	rp := proxyFor(t, b.url())

	rc := dialProxy(t, rp)
	rc.send("GET /x HTTP/1.0\r\n\r\n")
	resp, body := rc.response("GET")
	if resp.StatusCode != 200 || body != "a /x\n" || !rc.closed() {
		t.Errorf("plain HTTP/1.0: %d %q; want the connection closed after", resp.StatusCode, body)
	}
	if got := resp.Header.Get("X-Seen-Host"); got != strings.TrimPrefix(b.url(), "http://") {
		t.Errorf("Host at the backend %q, want its address", got)
	}

	rc = dialProxy(t, rp)
	rc.send("GET /y HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	resp, body = rc.response("GET")
	if body != "a /y\n" || resp.Header.Get("Connection") != "keep-alive" {
		t.Errorf("keep-alive HTTP/1.0: %q, Connection %q", body, resp.Header.Get("Connection"))
	}
	rc.send("GET /z HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	if _, body = rc.response("GET"); body != "a /z\n" {
		t.Errorf("second request on the kept connection: %q", body)
	}
}

func TestRefusesMalformedAndUnsupported(t *testing.T) {
	b := newTestBackend(t, "a")
	rp := proxyFor(t, b.url())
	for _, tt := range []struct {
		req    string
		status int
	}{
		{"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 400}, // authority-form is not a gateway's
		{"CONNECT / HTTP/1.1\r\nHost: x\r\n\r\n", 405},
		{"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
		{"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
		{"GET / HTTP/1.1\r\n\r\n", 400},
		{"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
	} {
		rc := dialProxy(t, rp)
		rc.send(tt.req)
		resp, _ := rc.response("GET")
		if resp.StatusCode != tt.status || !rc.closed() {
			t.Errorf("%q: %d, want %d and the connection closed", tt.req, resp.StatusCode, tt.status)
		}
	}
	if n := b.served.Load(); n != 0 {
		t.Errorf("the backend saw %d of these requests", n)
	}
}

// A backend that closes every kept-alive connection after one response:
// the proxy finds out on the next request and must use a new connection,
// for replayable requests and for those with a body alike.
func TestBackendClosingKeptConnections(t *testing.T) {
	closedConns := make(chan struct{}, 6)
	url := rawBackend(t, func(c net.Conn, br *bufio.Reader) {
		var h http1.Head
		if h.ReadRequest(br, 8192) != nil {
			return
		}
		http1.Copy(bufio.NewWriter(io.Discard), br, h.RequestFraming(), h.Chunked, false)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		time.Sleep(5 * time.Millisecond) // closed after the proxy pooled it
		c.Close()
		closedConns <- struct{}{}
	})
	rp := proxyFor(t, url)
	for i := 0; i < 6; i++ {
		method, body := "GET", ""
		if i%2 == 1 {
			method, body = "POST", "data"
		}
		req, _ := http.NewRequest(method, rp.url+"/", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(got) != "ok" {
			t.Fatalf("request %d (%s): %d %q", i, method, resp.StatusCode, got)
		}
		// The next request finds the connection closed, however long the
		// backend took to close it.
		select {
		case <-closedConns:
		case <-time.After(30 * time.Second):
			t.Fatal("the backend did not close its connection")
		}
	}
}

func TestUntilCloseBodyRechunkedAndDateAdded(t *testing.T) {
	url := rawBackend(t, func(c net.Conn, br *bufio.Reader) {
		var h http1.Head
		if h.ReadRequest(br, 8192) != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\nstreamed until the end")
	})
	rp := proxyFor(t, url)
	rc := dialProxy(t, rp)
	rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, body := rc.response("GET")
	if body != "streamed until the end" || len(resp.TransferEncoding) == 0 || resp.Header.Get("Date") == "" || resp.Close {
		t.Errorf("body %q, transfer encoding %v, Date %q, close %v", body, resp.TransferEncoding, resp.Header.Get("Date"), resp.Close)
	}
	rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, body := rc.response("GET"); body != "streamed until the end" {
		t.Errorf("second request: %q", body)
	}
}

func TestUpgradeTunnels(t *testing.T) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" || r.Header.Get("Connection") != "Upgrade" {
			http.Error(w, "want Upgrade: echo", 400)
			return
		}
		c, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		io.Copy(c, brw)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	rp := proxyFor(t, "http://"+ln.Addr().String())
	rc := dialProxy(t, rp)
	rc.send("GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	resp, err := http.ReadResponse(rc.br, &http.Request{Method: "GET"})
	if err != nil || resp.StatusCode != 101 || resp.Header.Get("Upgrade") != "echo" {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	for _, msg := range []string{"ping", "pong"} {
		rc.send(msg)
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(rc.br, buf); err != nil || string(buf) != msg {
			t.Fatalf("echo %q: %q %v", msg, buf, err)
		}
	}
}

// TestForwardingAllocatesNothing: once warm, a request through the proxy
// allocates nothing in the whole process (client, proxy and backend here
// all reuse their buffers).
func TestForwardingAllocatesNothing(t *testing.T) {
	okResponse := []byte("HTTP/1.1 200 OK\r\nDate: Tue, 24 Nov 2026 00:00:00 GMT\r\nContent-Length: 3\r\n\r\nok\n")
	url := rawBackend(t, func(c net.Conn, br *bufio.Reader) {
		var h http1.Head
		discard := bufio.NewWriter(io.Discard)
		for h.ReadRequest(br, 8192) == nil {
			if _, err := http1.Copy(discard, br, h.RequestFraming(), false, false); err != nil {
				return
			}
			c.Write(okResponse)
		}
	})
	rp := proxyFor(t, url)
	rc := dialProxy(t, rp)
	rc.c.SetDeadline(time.Time{})
	req := []byte("GET /x HTTP/1.1\r\nHost: x\r\nUser-Agent: t\r\n\r\n")
	var h http1.Head
	discard := bufio.NewWriter(io.Discard)
	roundTrip := func() {
		if _, err := rc.c.Write(req); err != nil {
			t.Fatal(err)
		}
		if err := h.ReadResponse(rc.br, 8192); err != nil {
			t.Fatal(err)
		}
		if _, err := http1.Copy(discard, rc.br, h.ResponseFraming([]byte("GET")), false, false); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 100; i++ {
		roundTrip()
	}
	if n := testing.AllocsPerRun(500, roundTrip); n > 0.05 {
		t.Errorf("%.2f allocations per request", n)
	}
	// A request with a body, not idempotent: the kept-alive connection is
	// checked before it is sent (alive), and the request is served
	// outside serveLoop's step.
	req = []byte("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\ndata")
	for i := 0; i < 100; i++ {
		roundTrip()
	}
	if n := testing.AllocsPerRun(500, roundTrip); n > 0.05 {
		t.Errorf("POST: %.2f allocations per request", n)
	}
}
