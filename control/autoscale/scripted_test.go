package autoscale

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// scaleAct is one SetReplicas decision of a scripted test.
type scaleAct struct {
	At       time.Duration
	Replicas int
}

// sec turns seconds into a Duration.
func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// checkActs fails the test unless the decisions are the wanted ones.
func checkActs(t *testing.T, got, want []scaleAct) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decisions:\n got  %v\n want %v", got, want)
	}
}

// steadyAllocs runs c on the same snapshot every period, n times to warm
// up and n times measured, failing on any action, and returns the
// allocations per Decide.
func steadyAllocs(t *testing.T, c control.Controller, snap *metrics.Snapshot, period time.Duration, n int) float64 {
	t.Helper()
	now := time.Duration(0)
	step := func() {
		now += period
		if acts := c.Decide(now, snap); len(acts) != 0 {
			t.Fatalf("%v: actions %v", now, acts)
		}
	}
	for range n {
		step()
	}
	return testing.AllocsPerRun(n, step)
}

// wantFieldErrors fails unless err names every field ("field:").
func wantFieldErrors(t *testing.T, err error, fields ...string) {
	t.Helper()
	for _, f := range fields {
		if err == nil || !strings.Contains(err.Error(), f+":") {
			t.Errorf("error %v does not name %s", err, f)
		}
	}
}
