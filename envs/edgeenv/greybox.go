package edgeenv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/edge"
)

// GreyBox is a virtual edge environment whose structure is given and
// whose drift is learned from task logs alone: the sites, the links'
// latencies, the backhaul, the deadlines and the processor-sharing
// queues are the operator's inventory (the base world's); each scene's
// arrival rate and mean work by hour of day, its tasks' mean input size,
// preference mix, devices and device speed, and each edge link's
// bandwidth by hour are fitted to the records. Each member of the
// ensemble fits a bootstrap resample of the records, so that what the
// logs say little about (an hour or a link seldom seen) differs between
// members: a policy trained across them cannot lean on one fit.
type GreyBox struct {
	Members []edge.Config
}

// GreyBoxConfig configures the fit.
type GreyBoxConfig struct {
	Members int
	// Every is the logs' sampling: one task in Every was recorded.
	Every int
	Seed  uint64
}

// DefaultGreyBox is four members, fitted to logs of every 20th task.
func DefaultGreyBox() GreyBoxConfig { return GreyBoxConfig{Members: 4, Every: TaskEvery, Seed: 1} }

// TaskEvery is how often a logged task is recorded: one in 20 keeps a
// day's records of the default world to about 270,000.
const TaskEvery = 20

// LearnGreyBox fits the ensemble to task records logged in base's world
// (its structure given), one task in cfg.Every recorded.
func LearnGreyBox(base edge.Config, recs []edge.TaskRecord, cfg GreyBoxConfig) (*GreyBox, error) {
	if cfg.Members < 1 || cfg.Every < 1 {
		return nil, fmt.Errorf("edgeenv: grey box: %d members of records every %d tasks: both must be positive", cfg.Members, cfg.Every)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("edgeenv: grey box: no task records to learn from")
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x67726579)) // "grey"
	hours := loggedHours(recs)
	g := &GreyBox{}
	sample := make([]edge.TaskRecord, len(recs))
	for m := range cfg.Members {
		rs := recs
		if m > 0 { // the first member fits the records themselves
			for i := range sample {
				sample[i] = recs[rng.IntN(len(recs))]
			}
			rs = sample
		}
		c, err := fitWorld(base, rs, hours, cfg.Every)
		if err != nil {
			return nil, err
		}
		g.Members = append(g.Members, c)
	}
	return g, nil
}

// loggedHours is how long the records' log covered each hour of the day
// (in hours): the span from each logged day-hour's first to its last
// record, counted whole (the logs run whole hours).
func loggedHours(recs []edge.TaskRecord) [24]float64 {
	seen := map[int]bool{}
	var out [24]float64
	for _, r := range recs {
		k := int(math.Floor(r.Day * 24))
		if !seen[k] {
			seen[k] = true
			out[k%24]++
		}
	}
	return out
}

// fitWorld fits one world to the records.
func fitWorld(base edge.Config, recs []edge.TaskRecord, hours [24]float64, every int) (edge.Config, error) {
	c := base
	h := &edge.Hourly{}
	var count, work [edge.Scenes][24]float64
	var bw, bwN [edge.Edges][24]float64
	var size, n, speed, speedN [edge.Scenes]float64
	var prefer [edge.Scenes][3]float64
	var devices [edge.Scenes]int
	for _, r := range recs {
		g, hour := r.Scene, int(math.Floor(r.Day*24))%24
		count[g][hour]++
		work[g][hour] += r.Work
		size[g] += r.SizeMB
		n[g]++
		devices[g] = max(devices[g], r.Device+1)
		switch {
		case len(r.Cands) == 1:
			prefer[g][0]++
		case r.Cands[0].Target != 0:
			prefer[g][1]++
		default:
			prefer[g][2]++
		}
		switch e := r.Target - 1; {
		case r.Target == 0:
			if run := r.Took - r.Backlog; run > 0 {
				speed[g] += r.Work / run
				speedN[g]++
			}
		case e < edge.Edges:
			if t := r.Upload - base.Links[e].Latency.Seconds(); t > 0 {
				bw[e][hour] += r.SizeMB * 8 / t
				bwN[e][hour]++
			}
		}
	}
	for g := range edge.Scenes {
		if n[g] == 0 {
			return c, fmt.Errorf("edgeenv: grey box: no records of scene %d (%s)", g, base.Groups[g].Name)
		}
		gr := &c.Groups[g]
		gr.SizeMB, gr.Devices = size[g]/n[g], devices[g]
		if speedN[g] > 0 {
			gr.DeviceSpeed = speed[g] / speedN[g]
		}
		for k := range 3 {
			gr.Prefer[k] = prefer[g][k] / n[g]
		}
		gr.Growth, gr.WorkGrowth, gr.Phase = 0, 0, 0
		for hour := range 24 {
			if hours[hour] > 0 && count[g][hour] > 0 {
				h.Rate[g][hour] = count[g][hour] * float64(every) / (hours[hour] * 3600)
				h.WorkG[g][hour] = work[g][hour] / count[g][hour]
			}
		}
		fillHours(&h.Rate[g])
		fillHours(&h.WorkG[g])
		gr.Rate, gr.WorkG = meanOf(h.Rate[g][:]), meanOf(h.WorkG[g][:])
	}
	for e := range edge.Edges {
		for hour := range 24 {
			if bwN[e][hour] > 0 {
				h.Bandwidth[e][hour] = bw[e][hour] / bwN[e][hour]
			}
		}
		if !fillHours(&h.Bandwidth[e]) { // a link never used: its inventory bandwidth
			for hour := range 24 {
				h.Bandwidth[e][hour] = base.Links[e].Bandwidth
			}
		}
	}
	c.Hourly = h
	return c, c.Validate()
}

// fillHours fills the hours without a value (0) from the nearest hours
// with one, around the clock, and reports whether any hour had one.
func fillHours(row *[24]float64) bool {
	src := *row
	any := false
	for _, v := range src {
		any = any || v > 0
	}
	if !any {
		return false
	}
	for hour := range 24 {
		for d := 1; src[hour] == 0 && row[hour] == 0 && d <= 12; d++ {
			a, b := src[(hour+d)%24], src[(hour-d+24)%24]
			switch {
			case a > 0 && b > 0:
				row[hour] = (a + b) / 2
			case a > 0:
				row[hour] = a
			case b > 0:
				row[hour] = b
			}
		}
	}
	return true
}

func meanOf(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// World builds member m's world from month time start (only its hour of
// day matters to the drift), seeded.
func (g *GreyBox) World(m int, seed uint64, start time.Duration) (*edge.World, error) {
	shape, err := edge.WikipediaShape()
	if err != nil {
		return nil, err
	}
	return edge.New(g.Members[m%len(g.Members)], shape, seed, start)
}
