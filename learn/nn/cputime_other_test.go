//go:build !unix

package nn

import (
	"testing"
	"time"
)

func processCPU() time.Duration { return 0 }

func reportCPU(*testing.B, time.Duration) {}
