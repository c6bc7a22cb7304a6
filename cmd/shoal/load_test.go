package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLoad: 'shoal load' sends the scheduled requests and prints the counts
// and percentiles; a bad command line is a usage error.
func TestLoad(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	out, err := runCLI(t, "load", srv.URL, "--arrivals", "constant", "--rate", "200", "--requests", "5")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"constant arrivals, seed 1", "5 scheduled, 5 completed, 0 failed", "p99.9"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, args := range [][]string{
		{"load"},
		{"load", srv.URL, "--arrivals", "bogus"},
		{"load", srv.URL, "--timeout", "0s"},
		{"load", srv.URL, "--phases", "100:1s,fast"},
		{"load", srv.URL, "--phases", "100:0s"},
		{"load", srv.URL, "--phases", "100:1s", "--rate", "5"},
		{"load", srv.URL, "--rate", "5", "--window", "-1s"},
	} {
		if _, err := runCLI(t, args...); !errors.Is(err, errUsage) {
			t.Errorf("%v: error %v, want a usage error", args, err)
		}
	}
	out, err = runCLI(t, "load", srv.URL, "--phases", "100:200ms,300:100ms")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"phases arrivals", "phase 1    0s-200ms:", "phase 2    200ms-300ms:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := runCLI(t, "load", srv.URL, "--rate", "-1"); err == nil || errors.Is(err, errUsage) {
		t.Errorf("negative rate: error %v, want a validation error", err)
	}
}
