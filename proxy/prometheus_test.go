package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/prom/promtest"
)

// TestPrometheusScrapesAdmin starts a real Prometheus server on loopback
// that scrapes the proxy's admin listener, then asks its HTTP API for the
// proxy's request count.
func TestPrometheusScrapesAdmin(t *testing.T) {
	a := newTestBackend(t, "a")
	rp := startProxy(t, testConfig(t, "lsq", a))
	const sent = 25
	for i := 0; i < sent; i++ {
		get(t, rp.url+"/")
	}
	srv := promtest.Start(t, strings.TrimPrefix(rp.admin, "http://"))
	query := srv.URL + "/api/v1/query?query=" + url.QueryEscape(`sum(shoal_proxy_requests_total{job="test"})`)
	promtest.Wait(t, 30*time.Second, fmt.Sprintf("%d requests", sent), func() (bool, error) {
		v, err := queryScalar(query)
		return err == nil && v == sent, err
	})
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
