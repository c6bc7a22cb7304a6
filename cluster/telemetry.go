package cluster

import (
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/metrics"
)

// What a cluster's monitoring measures of its locations, with the
// imperfections of the real series (Snapshot.Locations): controllers see
// these, never the configured RTTs and background loads.
const (
	// scrapeInterval is Prometheus's: a period's rates end at the last
	// scrape before it ends, so they lag by up to one interval.
	scrapeInterval = 15 * time.Second
	// probeInterval is the blackbox exporter's between two locations, and
	// probeJitter the relative deviation of one probe's duration.
	probeInterval = 15 * time.Second
	probeJitter   = 0.1
	// sidecarCPU is the CPU a call costs the mesh's two sidecars it passes
	// (Istio's performance page: about 0.5 vCPU per 1,000 requests per
	// second through a sidecar), which node_exporter counts and the
	// simulated instances do not spend.
	sidecarCPU = 0.5e-3 // core-seconds per call
)

// telemetry is the state of the measured series between periods: this
// period's values before the lag, and the last period's.
type telemetry struct {
	rng       *rand.Rand
	cur, prev []metrics.LocationStats
	started   bool
}

// measureLocations fills snap.Locations with the period's measured series
// (snap.Services and snap.Routes already filled):
//   - Cores: the location's nodes' cores (0 without nodes);
//   - PodCPU: the CPU its services' instances used, plus sidecarCPU per
//     call they received; NodeCPU: that plus the background share of the
//     cores;
//   - RTT: the mean of one probe per probeInterval each way, each the
//     configured RTT times 1 + probeJitter x N(0, 1);
//
// each blended with the last period's by the share of the period a
// scrape lag drawn uniformly in [0, scrapeInterval) covers.
func (cl *Cluster) measureLocations(snap *metrics.Snapshot) {
	n := len(cl.locNames)
	t := &cl.telemetry
	period := snap.Period.Seconds()
	if len(t.cur) != n {
		t.cur, t.prev = make([]metrics.LocationStats, n), make([]metrics.LocationStats, n)
		for i := range n {
			t.cur[i].RTT, t.prev[i].RTT = make([]time.Duration, n), make([]time.Duration, n)
		}
	}
	now := t.cur
	for i := range now {
		now[i].Cores, now[i].NodeCPU, now[i].PodCPU = 0, 0, 0
	}
	for _, nd := range cl.nodes {
		now[nd.loc].Cores += nd.cpu
	}
	if period > 0 {
		for i, s := range cl.services {
			now[s.loc].PodCPU += snap.Services[i].CPUUse
		}
		for _, r := range snap.Routes {
			if to := cl.locIndex(r.To); to >= 0 {
				now[to].PodCPU += sidecarCPU * float64(r.Calls) / period
			}
		}
	}
	probes := max(1, int(snap.Period/probeInterval))
	for i := range n {
		now[i].NodeCPU = now[i].PodCPU + cl.background[i]*now[i].Cores
		for j := range n {
			if i == j {
				continue
			}
			sum := 0.0
			for range probes {
				sum += max(float64(cl.rtt[i][j])*(1+probeJitter*t.rng.NormFloat64()), 0)
			}
			now[i].RTT[j] = time.Duration(sum / float64(probes))
		}
	}
	snap.Locations = resize(snap.Locations, n)
	for i := range n {
		m := &snap.Locations[i]
		m.Name, m.Cores = cl.locNames[i], now[i].Cores
		m.RTT = resize(m.RTT, n)
		m.NodeCPU, m.PodCPU = now[i].NodeCPU, now[i].PodCPU
		copy(m.RTT, now[i].RTT)
		if !t.started || !(period > 0) {
			continue
		}
		lag := min(t.rng.Float64()*scrapeInterval.Seconds()/period, 1)
		p := &t.prev[i]
		m.NodeCPU, m.PodCPU = (1-lag)*now[i].NodeCPU+lag*p.NodeCPU, (1-lag)*now[i].PodCPU+lag*p.PodCPU
		for j := range n {
			m.RTT[j] = time.Duration((1-lag)*float64(now[i].RTT[j]) + lag*float64(p.RTT[j]))
		}
	}
	t.cur, t.prev, t.started = t.prev, t.cur, true
}
