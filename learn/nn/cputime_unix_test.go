//go:build unix

package nn

import (
	"syscall"
	"testing"
	"time"
)

// processCPU returns the CPU time (user + system) used by this process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds a cpu-ns/op metric measured from process CPU time since
// start, which stays meaningful when other processes compete for the cores
// (wall-clock ns/op does not).
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}
