package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// need returns the path of a Debian program the test needs; scripts/test.sh
// installs it, so in CI its absence fails the test instead of skipping.
func need(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		why := fmt.Sprintf("%s not found: install the Debian package %s (scripts/test.sh does)", name, pkg)
		if os.Getenv("CI") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	return p
}

// freeAddr returns a 127.0.0.1 address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestPrometheusScrapesAdmin starts a real Prometheus server on loopback
// that scrapes the proxy's admin listener, then asks its HTTP API for the
// proxy's request count.
func TestPrometheusScrapesAdmin(t *testing.T) {
	bin := need(t, "prometheus", "prometheus")
	a := newTestBackend(t, "a")
	rp := startProxy(t, testConfig(t, "lsq", a))
	const sent = 25
	for i := 0; i < sent; i++ {
		get(t, rp.url+"/")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "prometheus.yml")
	target := strings.TrimPrefix(rp.admin, "http://")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: shoal-proxy
    static_configs: [{targets: ["%s"]}]
`, target)), 0o644); err != nil {
		t.Fatal(err)
	}
	web := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+web, "--log.level=warn")
	out, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(out.Name())
			t.Logf("prometheus log:\n%s", log)
		}
	})
	query := "http://" + web + "/api/v1/query?query=" + url.QueryEscape(`sum(shoal_proxy_requests_total{job="shoal-proxy"})`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := queryScalar(query)
		if err == nil && v == sent {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus never reported %d requests: last %v, %v", sent, v, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// queryScalar runs an instant query that returns one sample.
func queryScalar(u string) (float64, error) {
	resp, err := http.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, err
	}
	if r.Status != "success" || len(r.Data.Result) != 1 {
		return 0, fmt.Errorf("status %s, %d samples", r.Status, len(r.Data.Result))
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}
