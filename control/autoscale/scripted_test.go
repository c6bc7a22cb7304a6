package autoscale

import (
	"reflect"
	"testing"
	"time"
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
