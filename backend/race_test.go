//go:build race

package backend

// raceEnabled: the race detector slows every request several times, too
// much for the timing of the queueing-theory benchmark.
const raceEnabled = true
