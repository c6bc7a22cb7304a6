package autothrottle

import (
	"math"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// tick runs the Captain for one period ending at now, in which the one
// instance used cores and was throttled in throttled CFS periods; it
// returns the limit set, or 0.
func tick(c *Captain, now, period time.Duration, cores float64, throttled int64) float64 {
	snap := &metrics.Snapshot{At: now, Period: period, Services: []metrics.ServiceStats{{
		Name: "s", CFSThrottled: throttled, Instances: []metrics.InstanceStats{{CPUUse: cores, CFSThrottled: throttled}},
	}}}
	for _, a := range c.Decide(now, snap) {
		return a.(control.SetResources).CPU
	}
	return 0
}

// TestCaptainFollowsTheRelease checks worker-daemon.py's rules on
// schedules worked by hand: a decision a second, scale-up above three
// times the target by the excess, scale-down to the usage's peak plus the
// margin's deviations when that saves 10%, and the rollback.
func TestCaptainFollowsTheRelease(t *testing.T) {
	ms := time.Millisecond
	// Throttled in every period: r = 1 at 1 s, above 3 x 0.1, so the limit
	// grows by 1 - 0.3: 1 -> 1.7; nothing changes before.
	c := NewCaptain("s", 1, CaptainConfig{})
	c.Target = 0.1
	for k := 1; k <= 10; k++ {
		got := tick(c, time.Duration(k)*100*ms, 100*ms, 1, 1)
		if want := map[bool]float64{true: 1.7}[k == 10]; math.Abs(got-want) > 1e-12 {
			t.Fatalf("throttled, period %d: limit set %g, want %g", k, got, want)
		}
	}
	// Never throttled at 0.2 cores: at 1 s the margin is 3 - 0.1 and the
	// usage window holds ten samples of 0.2 and forty empty slots: peak
	// 0.2, sample deviation sqrt((10 x 0.04 - 50 x 0.04^2) / 49); their sum
	// (0.434) is under 0.9 x 1, and the cut is held to half the limit.
	c = NewCaptain("s", 1, CaptainConfig{})
	c.Target = 0.1
	var got float64
	for k := 1; k <= 10; k++ {
		got = tick(c, time.Duration(k)*100*ms, 100*ms, 0.2, 0)
	}
	sd := math.Sqrt((10*0.04 - 50*0.04*0.04) / 49)
	if u := 0.2 + 2.9*sd; got != 0.5 || !(u < 0.5) || math.Abs(c.margin-2.9) > 1e-12 || !c.lastDown {
		t.Fatalf("calm: limit set %g (usage bound %g), margin %g, scaled down %v; want 0.5, 2.9, true", got, u, c.margin, c.lastDown)
	}
	// Half-second samples: throttled in all five periods of the one after
	// the cut, r = 5/10 > 0.3: the cut is rolled back past the old limit,
	// 2 x 1 - 0.5, and the margin grows by r - the target.
	c = NewCaptain("s", 1, CaptainConfig{})
	c.Target = 0.1
	tick(c, 500*ms, 500*ms, 0.2, 0)
	if got := tick(c, 1000*ms, 500*ms, 0.2, 0); got != 0.5 {
		t.Fatalf("half-second samples: cut to %g, want 0.5", got)
	}
	margin := c.margin
	if got := tick(c, 1500*ms, 500*ms, 0.5, 5); got != 1.5 || math.Abs(c.margin-(margin+0.4)) > 1e-12 || c.lastDown {
		t.Errorf("rollback: limit %g, margin %g (was %g), scaled down %v; want 1.5, +0.4, false", got, c.margin, margin, c.lastDown)
	}
	// At target 0 any throttled period scales up, and the limit stays
	// within its bounds.
	c = NewCaptain("s", 12, CaptainConfig{})
	for k := 1; k <= 10; k++ {
		got = tick(c, time.Duration(k)*100*ms, 100*ms, 12, 1)
	}
	if got != 16 {
		t.Errorf("bounded scale-up: %g, want the 16-core bound", got)
	}
}
