package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// shoal policies lists a kind's policies with their parameters' ranges,
// and a wrong kind is a usage error naming the kinds.
func TestPoliciesList(t *testing.T) {
	code, out, _ := mainCLI("policies", "autoscaler")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"hpa", "target", "a number in [1, 1000] %", "drpc:FILE", "sim, operator"} {
		if !strings.Contains(out, want) {
			t.Errorf("shoal policies autoscaler lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "prequal") {
		t.Error("shoal policies autoscaler lists a selector")
	}
	if code, _, errOut := mainCLI("policies", "selectors"); code != 2 || !strings.Contains(errOut, "selector, autoscaler, route, serverless, edge") {
		t.Errorf("a wrong kind: exit %d, %q", code, errOut)
	}
}

// The HPA at three targets beside the KPA: four results, named by their
// settings, from one --policy with a range.
func TestSimSweepsABaselinesKnob(t *testing.T) {
	out, err := runCLI(t, "sim", "trainticket-surge", "--policy", "hpa:target=30..90/30,kpa", "--seeds", "1", "--horizon", "1m", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Policies []struct {
			Policy string `json:"policy"`
		} `json:"policies"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range res.Policies {
		names = append(names, p.Policy)
	}
	if want := []string{"hpa:target=30", "hpa:target=60", "hpa:target=90", "kpa"}; !slices.Equal(names, want) {
		t.Errorf("policies %v, want %v", names, want)
	}
	if code, _, errOut := mainCLI("sim", "trainticket-surge", "--policy", "hpa:target=0"); code != 2 || !strings.Contains(errOut, "policy hpa: parameter target must be a number in [1, 1000] %") {
		t.Errorf("a setting out of range: exit %d, %q", code, errOut)
	}
}
