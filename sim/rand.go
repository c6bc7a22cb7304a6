package sim

import (
	"hash/fnv"
	"math/rand/v2"
)

// Streams derives independent, named random streams from one root seed, so
// that adding a component does not shift the randomness of the others and the
// same seed always gives the same numbers.
type Streams struct {
	root uint64
}

// NewStreams returns the stream factory for a root seed.
func NewStreams(root uint64) Streams { return Streams{root: root} }

// Root is the root seed.
func (s Streams) Root() uint64 { return s.root }

// Stream returns a new PCG generator for the component called name. Calling it
// twice with one name gives two generators with identical sequences.
func (s Streams) Stream(name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	n := h.Sum64()
	return rand.New(rand.NewPCG(splitmix(s.root^n), splitmix(n+0x9e3779b97f4a7c15*(s.root+1))))
}

// splitmix is the SplitMix64 finaliser (Steele, Lea, Flood 2014), used to turn
// structured seeds into well-spread PCG state.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
