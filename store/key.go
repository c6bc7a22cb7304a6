package store

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
)

// keyVersion prefixes what ComputeKey hashes: a change to the encoding
// must change every key rather than collide with old ones.
const keyVersion = "shoal run key v1\n"

// ComputeKey returns the identity of what r ran: its kind, the scenario's
// and policy's contents (ScenarioHash, Policy, PolicyHash), the load, the
// seeds and the flags. Two runs with the same key ran the same thing, so a
// sweep skips a point whose key is stored. The scenario's name, the code
// version, the times and the results are not part of it.
func (r *Run) ComputeKey() string {
	load := r.Load
	if load == 0 {
		load = 0 // -0 and 0 are the same load
	}
	// encoding/json writes struct fields in order and map keys sorted,
	// so equal runs give equal bytes.
	b, err := json.Marshal(struct {
		Kind, ScenarioHash, Policy, PolicyHash, Load, RootSeed string
		Seeds                                                  int
		Flags                                                  map[string]string
	}{r.Kind, r.ScenarioHash, r.Policy, r.PolicyHash, strconv.FormatFloat(load, 'g', -1, 64),
		strconv.FormatUint(r.RootSeed, 10), r.Seeds, r.Flags})
	if err != nil {
		panic(err) // strings, an int and a map of strings always encode
	}
	return Hash(append([]byte(keyVersion), b...))
}

// Hash is the SHA-256 of b in hex, as ScenarioHash and PolicyHash hold it.
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// NewID returns a random 128-bit id in hex. Ids drawn apart (by shards of
// a sweep, on different machines) do not collide, so their runs merge.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
