package metrics

import (
	"fmt"
	"time"
)

// TimeAverage integrates a piecewise-constant signal over simulated time, e.g. the number of
// requests in a system (Little's law L) or busy CPU cores (utilisation). The signal holds its value
// from one change to the next. Integral is in value-seconds, Mean in the unit of the value.
//
// The zero value is a signal that is 0 from time 0, with the averaging window starting at time 0.
// Restart begins a new window (e.g. each control period) keeping the current value. Times passed to
// the methods must not go backwards (a programmer error: it panics). Allocation-free.
type TimeAverage struct {
	start    time.Duration // beginning of the current window
	last     time.Duration // time of the last change (>= start)
	value    float64       // current value, held since last
	integral float64       // integral over [start, last], value-seconds
}

func (a *TimeAverage) advance(now time.Duration) {
	if now < a.last {
		panic(fmt.Sprintf("metrics: TimeAverage time went backwards: %v after %v", now, a.last))
	}
	a.integral += a.value * (now - a.last).Seconds()
	a.last = now
}

// Set changes the signal to v at time now.
func (a *TimeAverage) Set(now time.Duration, v float64) {
	a.advance(now)
	a.value = v
}

// Add changes the signal by dv at time now (e.g. +1 on arrival, -1 on departure).
func (a *TimeAverage) Add(now time.Duration, dv float64) {
	a.advance(now)
	a.value += dv
}

// Value returns the current value of the signal.
func (a *TimeAverage) Value() float64 { return a.value }

// Integral returns the integral of the signal over the window [start, now], in value-seconds.
// It does not change a.
func (a *TimeAverage) Integral(now time.Duration) float64 {
	if now < a.last {
		panic(fmt.Sprintf("metrics: TimeAverage time went backwards: %v after %v", now, a.last))
	}
	return a.integral + a.value*(now-a.last).Seconds()
}

// Mean returns the time average of the signal over the window [start, now], in the unit of the
// value: Integral(now) / (now - start). For an empty window (now == start) it returns the current
// value.
func (a *TimeAverage) Mean(now time.Duration) float64 {
	span := (now - a.start).Seconds()
	if span <= 0 {
		if now < a.last {
			panic(fmt.Sprintf("metrics: TimeAverage time went backwards: %v after %v", now, a.last))
		}
		return a.value
	}
	return a.Integral(now) / span
}

// Restart begins a new averaging window at now, keeping the current value of the signal.
func (a *TimeAverage) Restart(now time.Duration) {
	a.advance(now)
	a.start = now
	a.integral = 0
}

// Start returns the beginning of the current averaging window.
func (a *TimeAverage) Start() time.Duration { return a.start }
