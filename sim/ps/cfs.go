package ps

import (
	"time"

	"github.com/shoal-project/shoal/metrics"
)

// CFSPeriod is the bandwidth period of the throttling counters, the
// snapshot's (the kernel's default cpu.cfs_period_us).
const CFSPeriod = metrics.CFSPeriod

// cfs counts a queue's CFS bandwidth periods as a cgroup's cpu.stat does
// (Documentation/scheduler/sched-bwc.rst): windows of CFSPeriod aligned to
// time zero, of which those that had work are periods, and of those the
// ones whose demand exceeded the quota, servers x CFSPeriod, are
// throttled. Each job in service is a runnable thread that could use one
// unit, so the window's demand is the integral of the number of jobs: the
// fluid counterpart of threads running ahead until the quota is spent.
// (Processor sharing stretches a job that waits, so a burst that spills
// into the next window counts there too, where the kernel would have run
// it in the first.) The quota is the servers at the window's end.
type cfs struct {
	start time.Duration // the open window's start
	// demand is the integral of the jobs in service over the open window,
	// job-nanoseconds: exact, and summed without a division per event.
	demand             int64
	periods, throttled int64
}

// accrue advances c over [from, to) with n jobs in service on servers
// units. from is in the open window. The common cases, staying in it or
// moving to the next, take no division.
func (c *cfs) accrue(from, to time.Duration, n int, servers float64) {
	jobs := int64(n)
	end := c.start + CFSPeriod
	if to < end {
		c.demand += jobs * int64(to-from)
		return
	}
	c.demand += jobs * int64(end-from)
	c.close(servers, end)
	if to < end+CFSPeriod { // in the next window
		c.demand += jobs * int64(to-end)
		return
	}
	k := int64((to - end) / CFSPeriod) // whole windows, at n jobs
	c.start = end + time.Duration(k)*CFSPeriod
	if n > 0 {
		c.periods += k
		if float64(n) > servers*(1+1e-9) {
			c.throttled += k
		}
		c.demand = jobs * int64(to-c.start)
	}
}

// close ends the open window and opens the one at next.
func (c *cfs) close(servers float64, next time.Duration) {
	if c.demand > 0 {
		c.periods++
		if float64(c.demand) > servers*float64(CFSPeriod)*(1+1e-9) {
			c.throttled++
		}
	}
	c.demand, c.start = 0, next
}
