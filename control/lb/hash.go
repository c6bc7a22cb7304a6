package lb

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// Envoy's two consistent-hashing load balancers. Both route on Request.Key
// (Envoy's request hash; 0 is a valid hash, not "none") and build their
// table over the up backends of positive weight, named by View.Names (the
// decimal index when absent), rebuilding it only when View.Version changes.
//
// Both start from Envoy's normalized weights
// (source/extensions/load_balancing_policies/common/thread_aware_lb_impl.cc,
// normalizeHostWeights): each host's weight over the sum, with the minimum
// and maximum of those fractions.
//
// A host's name is what Envoy hashes: its address string ("10.0.0.1:8080")
// or, with use_hostname_for_hashing, its hostname; Names equal to those
// give Envoy's tables bit for bit.
//
// Not modelled: priorities and the panic threshold (Envoy builds over all
// hosts when too few are healthy; here View.Up alone decides), locality
// weights (host weights can express the same fractions), retry attempts
// (shouldSelectAnotherHost), the MURMUR_HASH_2 option, and
// hash_balance_factor (bounded load, BoundedLoadHashingLoadBalancer: it
// would read View.InFlight as Envoy reads rq_active, but probes hosts in
// an order drawn from std::mt19937 seeded by the hash, which a faithful
// port would have to reproduce).

// RingHash is Envoy's RING_HASH load balancer, ketama-style
// (source/extensions/load_balancing_policies/ring_hash/ring_hash_lb.cc,
// Ring::Ring and Ring::chooseHost):
//
//   - The scale is ceil(minW·MinRingSize)/minW capped at MaxRingSize, with
//     minW the smallest normalized weight, so the lightest host gets a whole
//     number of entries.
//   - Walking the hosts in order, a running target grows by scale·weight and
//     a host adds entries while the running count is below it; entry i of a
//     host hashes name + "_" + i with xxHash64, seed 0 (HashUtil::xxHash64).
//   - A key picks the first entry whose hash is >= the key, wrapping to the
//     first entry past the end.
type RingHash struct {
	// MinRingSize and MaxRingSize are minimum_ring_size and
	// maximum_ring_size (defaults 1024 and 8M); a minimum above the
	// maximum panics, as Envoy rejects it.
	MinRingSize, MaxRingSize uint64

	hashes []uint64 // sorted ring positions
	hosts  []int32  // the backend at each position
	hashTable
}

// hashTable is the cache bookkeeping both selectors share.
type hashTable struct {
	version uint64
	n       int
	built   bool
}

func (t *hashTable) stale(v *View) bool {
	return !t.built || t.version != v.Version || t.n != v.Len()
}

func (t *hashTable) done(v *View) { t.version, t.n, t.built = v.Version, v.Len(), true }

// Select implements Selector.
func (s *RingHash) Select(v *View, r Request) int {
	if s.stale(v) {
		s.rebuild(v)
	}
	n := len(s.hashes)
	if n == 0 {
		return -1
	}
	i, _ := slices.BinarySearch(s.hashes, r.Key)
	for k := range n { // the next entries, should the chosen one be down
		if j := int(s.hosts[(i+k)%n]); v.Up[j] {
			return j
		}
	}
	return -1
}

// Validate reports sizes Envoy rejects.
func (s *RingHash) Validate() error {
	if minSize, maxSize := cmp.Or(s.MinRingSize, 1024), cmp.Or(s.MaxRingSize, 8<<20); minSize > maxSize {
		return fmt.Errorf("minimum_ring_size (%d) > maximum_ring_size (%d)", minSize, maxSize)
	}
	return nil
}

func (s *RingHash) rebuild(v *View) {
	if err := s.Validate(); err != nil {
		panic("ring hash: " + err.Error())
	}
	minSize := cmp.Or(s.MinRingSize, 1024)
	maxSize := cmp.Or(s.MaxRingSize, 8<<20)
	s.hashes, s.hosts = s.hashes[:0], s.hosts[:0]
	idx, w, minW, _ := normalized(v)
	if len(idx) > 0 {
		scale := math.Min(math.Ceil(minW*float64(minSize))/minW, float64(maxSize))
		type entry struct {
			hash uint64
			host int32
		}
		ring := make([]entry, 0, int(math.Ceil(scale)))
		var key []byte
		current, target := 0.0, 0.0
		for h, j := range idx {
			key = append(append(key[:0], hostName(v, j)...), '_')
			base := len(key)
			target += scale * w[h]
			for i := uint64(0); current < target; i++ {
				key = strconv.AppendUint(key[:base], i, 10)
				ring = append(ring, entry{xxhash.Sum64(key), int32(j)})
				current++
			}
		}
		slices.SortFunc(ring, func(a, b entry) int { return cmp.Or(cmp.Compare(a.hash, b.hash), cmp.Compare(a.host, b.host)) })
		for _, e := range ring {
			s.hashes, s.hosts = append(s.hashes, e.hash), append(s.hosts, e.host)
		}
	}
	s.done(v)
}

// Maglev is Envoy's MAGLEV load balancer
// (source/extensions/load_balancing_policies/maglev/maglev_lb.cc,
// MaglevTable::constructMaglevTableInternal and
// OriginalMaglevTable::constructImplementationInternals), the Maglev paper's
// population (Eisenbud et al., NSDI 2016, pseudocode listing 1) with weights:
//
//   - The hosts are sorted by name; each has offset = xxHash64(name, seed 0)
//     mod M and skip = xxHash64(name, seed 1) mod (M−1) + 1, and its
//     permutation visits slot (offset + skip·next) mod M.
//   - In rounds 1, 2, …, every host in order whose round·weight is not below
//     its target weight (initially 0) raises that target by the largest
//     normalized weight and takes its next free slot, until the table is
//     full: the heaviest host fills a slot every round, one a third as heavy
//     every third round.
//   - A key picks slot key mod M.
type Maglev struct {
	// TableSize is table_size M (default 65537); it must be prime, or
	// building the table panics, as Envoy rejects it.
	TableSize uint64

	table []int32 // backend per slot
	hashTable
}

// Select implements Selector.
func (s *Maglev) Select(v *View, r Request) int {
	if s.stale(v) {
		s.rebuild(v)
	}
	m := uint64(len(s.table))
	if m == 0 {
		return -1
	}
	c := r.Key % m
	for range m { // the next slots, should the chosen one be down
		if j := int(s.table[c]); v.Up[j] {
			return j
		}
		if c++; c == m {
			c = 0
		}
	}
	return -1
}

// Validate reports a table size Envoy rejects.
func (s *Maglev) Validate() error {
	if m := cmp.Or(s.TableSize, 65537); !new(big.Int).SetUint64(m).ProbablyPrime(0) { // exact below 2^64
		return fmt.Errorf("table_size: %d is not a prime number", m)
	}
	return nil
}

func (s *Maglev) rebuild(v *View) {
	if err := s.Validate(); err != nil {
		panic("maglev: " + err.Error())
	}
	m := cmp.Or(s.TableSize, 65537)
	s.table = s.table[:0]
	idx, w, _, maxW := normalized(v)
	if len(idx) > 0 {
		type entry struct {
			name               string
			host               int32
			weight, target     float64
			offset, skip, next uint64
		}
		es := make([]entry, len(idx))
		for h, j := range idx {
			es[h] = entry{name: hostName(v, j), host: int32(j), weight: w[h]}
		}
		slices.SortStableFunc(es, func(a, b entry) int { return cmp.Compare(a.name, b.name) })
		d := xxhash.New()
		for i := range es {
			e := &es[i]
			e.offset = xxhash.Sum64String(e.name) % m
			d.ResetWithSeed(1)
			d.WriteString(e.name)
			e.skip = d.Sum64()%(m-1) + 1
		}
		s.table = slices.Grow(s.table, int(m))[:m]
		for c := range s.table {
			s.table[c] = -1
		}
		for filled, round := uint64(0), uint32(1); filled < m; round++ {
			for i := 0; i < len(es) && filled < m; i++ {
				e := &es[i]
				if float64(round)*e.weight < e.target {
					continue
				}
				e.target += maxW
				c := (e.offset + e.skip*e.next) % m
				for s.table[c] >= 0 {
					e.next++
					c = (e.offset + e.skip*e.next) % m
				}
				s.table[c] = e.host
				e.next++
				filled++
			}
		}
	}
	s.done(v)
}

// normalized returns the up backends of positive weight, in index order,
// and their weights over the sum, with the smallest and largest of those
// (thread_aware_lb_impl.cc, normalizeHostWeights).
func normalized(v *View) (idx []int, w []float64, minW, maxW float64) {
	sum := 0.0
	for j, up := range v.Up {
		if up && v.Weights[j] > 0 {
			idx = append(idx, j)
			sum += v.Weights[j]
		}
	}
	minW, maxW = 1, 0
	for _, j := range idx {
		x := v.Weights[j] / sum
		w = append(w, x)
		minW, maxW = min(minW, x), max(maxW, x)
	}
	return idx, w, minW, maxW
}

// hostName is backend j's identity for hashing: its name, or its index.
func hostName(v *View, j int) string {
	if j < len(v.Names) && v.Names[j] != "" {
		return v.Names[j]
	}
	return strconv.Itoa(j)
}
