package edge

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/shoal-project/shoal/workload"
)

// Shape is a rate curve over the month, mean 1: the Wikipedia trace's
// hourly requests (January 2016, 744 hours), interpolated between hours
// and repeated beyond the month.
type Shape struct {
	step   time.Duration
	values []float64
}

// WikipediaShape loads the embedded Wikipedia trace as a shape.
func WikipediaShape() (*Shape, error) {
	tr, err := workload.NewTraces("").Load("wikipedia", "")
	if err != nil {
		return nil, err
	}
	s, err := tr.Series("", 0)
	if err != nil {
		return nil, err
	}
	return NewShape(s.Step, s.Values)
}

// NewShape normalises values (one per step) to mean 1.
func NewShape(step time.Duration, values []float64) (*Shape, error) {
	mean := 0.0
	for _, v := range values {
		mean += v
	}
	mean /= float64(len(values))
	if step <= 0 || len(values) == 0 || !(mean > 0) {
		return nil, fmt.Errorf("edge: shape needs a positive step and values of positive mean")
	}
	out := make([]float64, len(values))
	for i, v := range values {
		out[i] = v / mean
	}
	return &Shape{step: step, values: out}, nil
}

// At is the shape at month time t.
func (s *Shape) At(t time.Duration) float64 {
	span := s.step * time.Duration(len(s.values))
	t = ((t % span) + span) % span
	i := int(t / s.step)
	f := float64(t%s.step) / float64(s.step)
	return s.values[i]*(1-f) + s.values[(i+1)%len(s.values)]*f
}

// GroupStats are one scene's tasks finished in a step.
type GroupStats struct {
	Tasks   int64
	TimeSum float64  // seconds
	Missed  int64    // past their deadline
	Where   [3]int64 // ran locally, on an edge node, in the cloud
	// LateOffloaded are the offloaded tasks past their deadline.
	LateOffloaded int64
}

// Add adds o's tasks to g's.
func (g *GroupStats) Add(o GroupStats) {
	g.Tasks += o.Tasks
	g.TimeSum += o.TimeSum
	g.Missed += o.Missed
	g.LateOffloaded += o.LateOffloaded
	for i := range g.Where {
		g.Where[i] += o.Where[i]
	}
}

// MeanTime is the mean task completion time, seconds (0 with no tasks).
func (g GroupStats) MeanTime() float64 {
	if g.Tasks == 0 {
		return 0
	}
	return g.TimeSum / float64(g.Tasks)
}

// Offloaded is the offloading ratio: tasks that ran away from their
// device over all tasks (section 4.1).
func (g GroupStats) Offloaded() float64 {
	if g.Tasks == 0 {
		return 0
	}
	return float64(g.Where[1]+g.Where[2]) / float64(g.Tasks)
}

// OnTimeOffloaded is the successful offloading ratio: tasks that ran away
// from their device and met their deadline, over all tasks. An offload
// whose result comes too late has failed; this is the ratio a scheduler
// raises (Table 2's "offloading ratio improved"), where Offloaded counts
// failed offloads too.
func (g GroupStats) OnTimeOffloaded() float64 {
	if g.Tasks == 0 {
		return 0
	}
	return float64(g.Where[1]+g.Where[2]-g.LateOffloaded) / float64(g.Tasks)
}

// MissRatio is the share of tasks past their deadline.
func (g GroupStats) MissRatio() float64 {
	if g.Tasks == 0 {
		return 0
	}
	return float64(g.Missed) / float64(g.Tasks)
}

// StepStats are a step's outcomes by scene.
type StepStats struct {
	Groups [Scenes]GroupStats
}

// DeviceStats are one device's (a virtual agent's) figures over the run:
// its mean task time, offloading ratio, and convergence time, the time
// from its first task until its running mean task time stays within 10%
// of its mean (Table 1's measures).
type DeviceStats struct {
	Tasks, Offloaded, Missed int64
	TimeSum, SizeSum         float64
	first                    time.Duration // when its first task was done
	started                  bool
	trace                    []float64 // running means, to judge convergence at the end
	times                    []time.Duration
	took                     []float64 // each task's time, seconds
}

func (d *DeviceStats) record(took time.Duration, offloaded, missed bool, sizeMB float64, now time.Duration) {
	if !d.started {
		d.started, d.first = true, now
	}
	d.Tasks++
	d.TimeSum += took.Seconds()
	d.SizeSum += sizeMB
	d.took = append(d.took, took.Seconds())
	if offloaded {
		d.Offloaded++
	}
	if missed {
		d.Missed++
	}
	d.trace = append(d.trace, d.TimeSum/float64(d.Tasks))
	d.times = append(d.times, now)
}

// Mean is the device's mean task time, seconds.
func (d *DeviceStats) Mean() float64 {
	if d.Tasks == 0 {
		return 0
	}
	return d.TimeSum / float64(d.Tasks)
}

// Quantile is the q-quantile of the device's task times, seconds. It
// sorts them in place (nothing else reads their order), so that the
// record's three quantiles sort once.
func (d *DeviceStats) Quantile(q float64) float64 {
	if len(d.took) == 0 {
		return 0
	}
	slices.Sort(d.took)
	return d.took[min(int(q*float64(len(d.took))), len(d.took)-1)]
}

// Convergence is the time from the device's first task until its running
// mean stays within 10% of its final mean.
func (d *DeviceStats) Convergence() time.Duration {
	m := d.Mean()
	last := d.first
	for i, v := range d.trace {
		if math.Abs(v-m) > 0.1*m {
			last = d.times[i]
		}
	}
	return last - d.first
}
