// Package edge is the simulated edge-cloud world of the edge scheduling
// paper (Xiong, Wang, Wotawa, Hua: multi-scenario mixed service groups under
// edge cloud-native environments; edge-mixed-services-virtual-env.txt): a
// cloud, edge nodes and terminal devices joined by links, and three
// sub-scenes (scenario levels) of devices whose tasks run locally, on an
// edge node or in the cloud.
//
// Every step, each scene's agent chooses how its tasks are offloaded (a
// weight for local execution, each edge node and the cloud: 7 values) and
// the platform's engine agent chooses the scenes' CPU shares of the edge
// nodes' containers (3 values: the Koordinator-style co-location of the
// scenes' services). Tasks arrive as Poisson processes whose rates, sizes
// and preferences drift over a simulated month, driven by the Wikipedia
// trace's hourly request curve (January 2016), so that a day, a week and a
// month later are real distribution shifts.
package edge

import (
	"fmt"
	"math"
	"time"
)

// Numbers of the paper's setting (section 4.1): three scenes, and 7- and
// 3-dimensional actions.
const (
	Scenes  = 3
	Edges   = 5
	Targets = 1 + Edges + 1 // local, each edge node, the cloud
)

// Config describes the world.
type Config struct {
	// Step is how long an action holds (default 10 s).
	Step time.Duration
	// Cloud is the cloud data centre.
	Cloud Site
	// EdgeNodes are the edge nodes (Edges of them).
	EdgeNodes [Edges]Site
	// Links from the devices to each edge node; the cloud is reached
	// through edge node 0 and Backhaul.
	Links    [Edges]Link
	Backhaul Link
	// Groups are the scenes' device groups.
	Groups [Scenes]Group
	// Month is the simulated span the drift runs over (default 31 days).
	Month time.Duration
	// Staleness is the age of the queue lengths a per-task rule estimates
	// from: the platform refreshes its view of the edge nodes' and the
	// cloud's jobs every Staleness, as a metrics scrape would (0: every
	// task sees the queues as they are). Devices know their own backlog.
	Staleness time.Duration
	// Hourly, when set, replaces the trace's drift (a world learned from
	// logs: Hourly).
	Hourly *Hourly `json:",omitempty"`
}

// Hourly is a world's drift by hour of day, learned from logs (a grey-box
// virtual environment: the world's structure, its rates, work and
// channel learned): each scene's arrival rate and mean work, and each
// edge link's bandwidth, follow it instead of the trace's curve, the
// scenes' phases and the month's growth.
type Hourly struct {
	Rate      [Scenes][24]float64 `json:"rate"`      // tasks/s
	WorkG     [Scenes][24]float64 `json:"work_g"`    // mean Gcycles
	Bandwidth [Edges][24]float64  `json:"bandwidth"` // Mbit/s
}

// validate reports the first value that is not positive and finite.
func (h *Hourly) validate() error {
	for name, rows := range map[string][][24]float64{"rate": h.Rate[:], "work_g": h.WorkG[:], "bandwidth": h.Bandwidth[:]} {
		for i, row := range rows {
			for hour, v := range row {
				if !(v > 0) || math.IsInf(v, 0) {
					return fmt.Errorf("edge: hourly %s[%d][%d] is %g, want a positive finite value", name, i, hour, v)
				}
			}
		}
	}
	return nil
}

// Site is a set of cores at a speed (Gcycles per second per core).
type Site struct {
	Cores float64
	Speed float64
}

// Link has a latency (one way) and a bandwidth (Mbit/s).
type Link struct {
	Latency   time.Duration
	Bandwidth float64
}

// Group is one scene's devices and tasks.
type Group struct {
	Name    string
	Devices int
	// Rate is the mean task arrival rate of the whole group (tasks/s),
	// before the drift.
	Rate float64
	// SizeMB and WorkG are the mean input size (MB) and the mean work
	// (Gcycles) of a task (exponentially distributed around them).
	SizeMB, WorkG float64
	// Deadline is a task's deadline from its arrival.
	Deadline time.Duration
	// DeviceSpeed is a device's CPU speed (Gcycles/s, one core).
	DeviceSpeed float64
	// Prefer is the share of the group's tasks that must run locally,
	// on an edge node, or anywhere (privacy, affinity): a task's own
	// preference, drawn per task.
	Prefer [3]float64
	// Phase shifts the group's daily curve (its users' time zone).
	Phase time.Duration
	// Growth is the group's relative rate change over the month (0.5:
	// 50% more tasks at its end than at its start), and WorkGrowth its
	// tasks' work change.
	Growth, WorkGrowth float64
}

// Default is the world of the experiments: a 16-core cloud (the paper's
// server), five 4-core edge nodes, and three scenes: mobile broadband
// (video analytics: large inputs, loose deadlines), IoT sensors (small,
// frequent tasks) and the Internet of vehicles (tight deadlines, a fleet
// growing over the month).
func Default() Config {
	c := Config{Step: 10 * time.Second, Month: 31 * 24 * time.Hour,
		Cloud:    Site{Cores: 16, Speed: 2.1},
		Backhaul: Link{Latency: 30 * time.Millisecond, Bandwidth: 200},
	}
	for i := range c.EdgeNodes {
		c.EdgeNodes[i] = Site{Cores: 4, Speed: 2.0}
		c.Links[i] = Link{Latency: time.Duration(2+2*i) * time.Millisecond, Bandwidth: 100 - 10*float64(i)}
	}
	c.Groups = [Scenes]Group{
		{Name: "broadband", Devices: 40, Rate: 8, SizeMB: 2, WorkG: 1.2, Deadline: 2 * time.Second, DeviceSpeed: 1.5,
			Prefer: [3]float64{0.1, 0.2, 0.7}, Growth: 0.2},
		{Name: "iot", Devices: 200, Rate: 40, SizeMB: 0.05, WorkG: 0.1, Deadline: 500 * time.Millisecond, DeviceSpeed: 0.5,
			Prefer: [3]float64{0.3, 0.5, 0.2}, Phase: 8 * time.Hour},
		{Name: "vehicles", Devices: 60, Rate: 15, SizeMB: 0.5, WorkG: 0.4, Deadline: 300 * time.Millisecond, DeviceSpeed: 1.0,
			Prefer: [3]float64{0.2, 0.6, 0.2}, Phase: 16 * time.Hour, Growth: 0.6, WorkGrowth: 0.3},
	}
	return c
}

// Validate reports the first problem of the configuration, naming it.
func (c *Config) Validate() error {
	if c.Step <= 0 || c.Month <= 0 {
		return fmt.Errorf("edge: step and month must be positive, got %v and %v", c.Step, c.Month)
	}
	if c.Staleness < 0 {
		return fmt.Errorf("edge: staleness must be 0 or more, got %v", c.Staleness)
	}
	sites := append([]Site{c.Cloud}, c.EdgeNodes[:]...)
	for i, s := range sites {
		if !(s.Cores > 0 && s.Speed > 0) {
			return fmt.Errorf("edge: site %d: cores and speed must be positive, got %g and %g", i, s.Cores, s.Speed)
		}
	}
	for i, l := range append(c.Links[:], c.Backhaul) {
		if l.Latency < 0 || !(l.Bandwidth > 0) {
			return fmt.Errorf("edge: link %d: latency >= 0 and bandwidth > 0, got %v and %g", i, l.Latency, l.Bandwidth)
		}
	}
	for i, g := range c.Groups {
		if g.Devices <= 0 || !(g.Rate > 0) || !(g.SizeMB > 0) || !(g.WorkG > 0) || g.Deadline <= 0 || !(g.DeviceSpeed > 0) {
			return fmt.Errorf("edge: groups[%d] (%s): devices, rate, size, work, deadline and device speed must be positive", i, g.Name)
		}
		if s := g.Prefer[0] + g.Prefer[1] + g.Prefer[2]; s < 0.999 || s > 1.001 {
			return fmt.Errorf("edge: groups[%d] (%s): preferences sum to %g, want 1", i, g.Name, s)
		}
	}
	if c.Hourly != nil {
		return c.Hourly.validate()
	}
	return nil
}
