package lb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The expected tables and picks below are Envoy's own, from
// test/extensions/load_balancing_policies/ring_hash/ring_hash_lb_test.cc and
// test/extensions/load_balancing_policies/maglev/maglev_lb_test.cc: the same
// host addresses (Address::asString of tcp://127.0.0.1:90 is
// "127.0.0.1:90"), weights, sizes and hash keys.

// hashView is an LB point whose backends are all up, named and weighted.
func hashView(names []string, weights ...float64) *View {
	n := len(names)
	v := &View{InFlight: make([]int32, n), Weights: make([]float64, n), Up: make([]bool, n), Names: names, Version: 1}
	for j := range n {
		v.Weights[j], v.Up[j] = 1, true
		if j < len(weights) {
			v.Weights[j] = weights[j]
		}
	}
	return v
}

// ports names backends 127.0.0.1:p for each port p.
func ports(ps ...int) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	return names
}

func portRange(from, n int) []int {
	ps := make([]int, n)
	for i := range ps {
		ps[i] = from + i
	}
	return ps
}

type pick struct {
	key  uint64
	host int
}

func checkPicks(t *testing.T, s Selector, v *View, picks []pick) {
	t.Helper()
	for _, p := range picks {
		if j := s.Select(v, Request{Key: p.key}); j != p.host {
			t.Errorf("key %d: picked %d, Envoy picks %d", p.key, j, p.host)
		}
	}
}

// checkRing compares the whole ring with Envoy's (hash, host) listing.
func checkRing(t *testing.T, s *RingHash, v *View, want []pick) {
	t.Helper()
	s.Select(v, Request{})
	if len(s.hashes) != len(want) {
		t.Fatalf("ring of %d entries, Envoy's has %d", len(s.hashes), len(want))
	}
	for i, w := range want {
		if s.hashes[i] != w.key || int(s.hosts[i]) != w.host {
			t.Errorf("ring[%d] = (%d, host %d), Envoy's (%d, host %d)", i, s.hashes[i], s.hosts[i], w.key, w.host)
		}
	}
}

// countKeys maps n keys i·(2^64−1)/n to backends, as Envoy's large-ring
// tests do.
func countKeys(s Selector, v *View, n uint64) []int {
	counts := make([]int, v.Len())
	for i := range n {
		counts[s.Select(v, Request{Key: i * (math.MaxUint64 / n)})]++
	}
	return counts
}

func entriesPerHost(hosts []int32, n int) (lo, hi int) {
	counts := make([]int, n)
	for _, j := range hosts {
		counts[j]++
	}
	lo = math.MaxInt
	for _, c := range counts {
		lo, hi = min(lo, c), max(hi, c)
	}
	return lo, hi
}

// Envoy RingHashLoadBalancerTest.Basic (and BasicWithRetryHostPredicate's
// first pick): six hosts, minimum ring size 12.
func TestRingHashEnvoyBasic(t *testing.T) {
	s, v := &RingHash{MinRingSize: 12}, hashView(ports(portRange(90, 6)...))
	checkRing(t, s, v, []pick{
		{833437586790550860, 4}, {928266305478181108, 2}, {1033482794131418490, 0},
		{3551244743356806947, 5}, {3851675632748031481, 3}, {5583722120771150861, 1},
		{6311230543546372928, 1}, {7700377290971790572, 3}, {13144177310400110813, 5},
		{13444792449719432967, 2}, {15516499411664133160, 4}, {16117243373044804889, 0},
	})
	checkPicks(t, s, v, []pick{
		{0, 4}, {math.MaxUint64, 4}, {3551244743356806947, 5}, {3551244743356806948, 3},
		{16117243373044804880, 0},
	})
}

// Envoy RingHashLoadBalancerTest.BasicWithHostname: the hosts hashed by the
// names "90" … "95".
func TestRingHashEnvoyBasicWithHostname(t *testing.T) {
	s, v := &RingHash{MinRingSize: 12}, hashView([]string{"90", "91", "92", "93", "94", "95"})
	checkRing(t, s, v, []pick{
		{1975508444536362413, 5}, {2376063919839173711, 5}, {2386806903309390596, 3},
		{6749904478991551885, 4}, {6803900775736438537, 3}, {7225015537174310577, 2},
		{8787465352164086522, 0}, {11282020843382717940, 2}, {13723418369486627818, 1},
		{13776502110861797421, 0}, {14338313586354474791, 1}, {15364271037087512980, 4},
	})
	checkPicks(t, s, v, []pick{
		{0, 5}, {math.MaxUint64, 5}, {7225015537174310577, 2}, {6803900775736438537, 3},
	})
}

// Envoy RingHashLoadBalancerTest.UnevenHosts: 2 hosts and a minimum ring
// size of 3 give 2 hashes per host; then the host set changes.
func TestRingHashEnvoyUnevenHosts(t *testing.T) {
	s, v := &RingHash{MinRingSize: 3}, hashView(ports(80, 81))
	checkRing(t, s, v, []pick{
		{5454692015285649509, 0}, {7859399908942313493, 1},
		{13838424394637650569, 0}, {16064866803292627174, 1},
	})
	checkPicks(t, s, v, []pick{{0, 0}})

	v = hashView(ports(81, 82))
	v.Version = 2
	checkRing(t, s, v, []pick{
		{7859399908942313493, 0}, {8241336090459785962, 1},
		{12882406409176325258, 1}, {16064866803292627174, 0},
	})
	checkPicks(t, s, v, []pick{{0, 0}})
}

// Envoy RingHashLoadBalancerTest.HostWeightedTinyRing: weights 1, 2, 3 on a
// ring of exactly 6; and LocalityWeightedTinyRing, the same with a fourth
// host of weight 0 (there a locality of weight 0), which gets no entry.
func TestRingHashEnvoyWeightedTinyRing(t *testing.T) {
	picks := []pick{
		{928266305478181108, 2}, {4443673547860492590, 2}, {5583722120771150861, 1},
		{6311230543546372928, 1}, {13444792449719432967, 2}, {16117243373044804889, 0},
	}
	for _, v := range []*View{hashView(ports(90, 91, 92), 1, 2, 3), hashView(ports(90, 91, 92, 93), 1, 2, 3, 0)} {
		s := &RingHash{MinRingSize: 6, MaxRingSize: 6}
		checkPicks(t, s, v, picks)
		if lo, hi := entriesPerHost(s.hosts, 3); len(s.hashes) != 6 || lo != 1 || hi != 3 {
			t.Errorf("%d hosts: ring of %d, %d to %d entries per host; Envoy: 6, 1 to 3", v.Len(), len(s.hashes), lo, hi)
		}
	}
}

// Envoy RingHashLoadBalancerTest.HostWeightedLargeRing: weights 1, 2, 3 and
// a minimum ring size of 6144; 6000 keys spread over the hash space.
func TestRingHashEnvoyWeightedLargeRing(t *testing.T) {
	s, v := &RingHash{MinRingSize: 6144}, hashView(ports(90, 91, 92), 1, 2, 3)
	if got, want := countKeys(s, v, 6000), []int{987, 1932, 3081}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counts %v, Envoy's %v", got, want)
	}
	if lo, hi := entriesPerHost(s.hosts, 3); len(s.hashes) != 6144 || lo != 1024 || hi != 3072 {
		t.Errorf("ring of %d, %d to %d entries per host; Envoy: 6144, 1024 to 3072", len(s.hashes), lo, hi)
	}
}

// Envoy RingHashLoadBalancerTest.HostAndLocalityWeightedTinyRing and
// …LargeRing: host weights 1:2 within two localities weighted 1:2, that is
// normalized weights 1/9, 2/9, 2/9, 4/9.
func TestRingHashEnvoyHostAndLocalityWeighted(t *testing.T) {
	s, v := &RingHash{MinRingSize: 9, MaxRingSize: 9}, hashView(ports(90, 91, 92, 93), 1, 2, 2, 4)
	checkPicks(t, s, v, []pick{
		{928266305478181108, 2}, {3851675632748031481, 3}, {5583722120771150861, 1},
		{6311230543546372928, 1}, {7700377290971790572, 3}, {12559126875973811811, 3},
		{13444792449719432967, 2}, {13784988426630141778, 3}, {16117243373044804889, 0},
	})
	if lo, hi := entriesPerHost(s.hosts, 4); len(s.hashes) != 9 || lo != 1 || hi != 4 {
		t.Errorf("ring of %d, %d to %d entries per host; Envoy: 9, 1 to 4", len(s.hashes), lo, hi)
	}

	s = &RingHash{MinRingSize: 9216}
	if got, want := countKeys(s, v, 9000), []int{924, 2009, 2053, 4014}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counts %v, Envoy's %v", got, want)
	}
	if lo, hi := entriesPerHost(s.hosts, 4); len(s.hashes) != 9216 || lo != 1024 || hi != 4096 {
		t.Errorf("ring of %d, %d to %d entries per host; Envoy: 9216, 1024 to 4096", len(s.hashes), lo, hi)
	}
}

// Envoy RingHashLoadBalancerTest.SmallFractionalScale and
// LargeFractionalScale: rings smaller than, or not a multiple of, the hosts.
func TestRingHashEnvoyFractionalScale(t *testing.T) {
	s, v := &RingHash{MinRingSize: 2, MaxRingSize: 2}, hashView(ports(90, 91, 92, 93))
	zeroes, sum := 0, 0
	for _, c := range countKeys(s, v, 1024) {
		if c == 0 {
			zeroes++
		}
		sum += c
	}
	if len(s.hashes) != 2 || zeroes != 2 || sum != 1024 {
		t.Errorf("ring of %d, %d hosts without traffic; Envoy: 2 and 2", len(s.hashes), zeroes)
	}

	s, v = &RingHash{MinRingSize: 1023, MaxRingSize: 1023}, hashView(ports(90, 91))
	if got, want := countKeys(s, v, 1023), []int{526, 497}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counts %v, Envoy's %v", got, want)
	}
	if lo, hi := entriesPerHost(s.hosts, 2); len(s.hashes) != 1023 || lo != 511 || hi != 512 {
		t.Errorf("ring of %d, %d to %d entries per host; Envoy: 1023, 511 to 512", len(s.hashes), lo, hi)
	}
}

// Envoy RingHashLoadBalancerTest.LopsidedWeightSmallScale: host :0 weighs
// 127/128 and each of :1 … :1023 weighs 1/(128·1023) (there through
// locality weights 127:1; here host weights 127·1023 and 1 give the same
// fractions) on a ring of exactly 1024.
func TestRingHashEnvoyLopsidedWeightSmallScale(t *testing.T) {
	v := hashView(ports(portRange(0, 1024)...))
	v.Weights[0] = 127 * 1023
	s := &RingHash{MinRingSize: 1024, MaxRingSize: 1024}
	checkPicks(t, s, v, []pick{
		{11664790346325243808, 1}, {15894554872961148518, 128}, {13958138884277627155, 256},
		{15803774069438192949, 384}, {3829253010855396576, 512}, {17918147347826565154, 640},
		{6442769608292299103, 768}, {5881074926069334434, 896},
	})
	if lo, hi := entriesPerHost(s.hosts, 1024); len(s.hashes) != 1024 || lo != 0 || hi != 1016 {
		t.Errorf("ring of %d, %d to %d entries per host; Envoy: 1024, 0 to 1016", len(s.hashes), lo, hi)
	}
}

// Envoy RingHashLoadBalancerTest.BadRingSizeBounds.
func TestRingHashBadRingSizeBounds(t *testing.T) {
	defer func() {
		if r := fmt.Sprint(recover()); r != "ring hash: minimum_ring_size (20) > maximum_ring_size (10)" {
			t.Errorf("panic %q, want Envoy's message", r)
		}
	}()
	(&RingHash{MinRingSize: 20, MaxRingSize: 10}).Select(hashView(ports(90)), Request{})
}

// Envoy MaglevLoadBalancerTest.Basic, BasicWithHostName and BasicStability:
// six hosts, table size 7, keys 0 … 20.
func TestMaglevEnvoyBasic(t *testing.T) {
	for _, c := range []struct {
		names []string
		want  []int
	}{
		{ports(portRange(90, 6)...), []int{2, 4, 0, 1, 5, 0, 3}},
		{[]string{"90", "91", "92", "93", "94", "95"}, []int{2, 5, 0, 3, 4, 1, 0}},
	} {
		s, v := &Maglev{TableSize: 7}, hashView(c.names)
		checkPicks(t, s, v, cycle(c.want, 3))
		if lo, hi := entriesPerHost(s.table, 6); lo != 1 || hi != 2 {
			t.Errorf("%d to %d entries per host; Envoy: 1 to 2", lo, hi)
		}
		// BasicStability: the same names in another order pick the
		// same hosts.
		perm := rand.New(rand.NewPCG(1, 2)).Perm(6)
		shuffled := make([]string, 6)
		for i, p := range perm {
			shuffled[i] = c.names[p]
		}
		s2, v2 := &Maglev{TableSize: 7}, hashView(shuffled)
		for k := range uint64(21) {
			if got, want := shuffled[s2.Select(v2, Request{Key: k})], c.names[s.Select(v, Request{Key: k})]; got != want {
				t.Errorf("key %d: shuffled hosts pick %s, Envoy keeps %s", k, got, want)
			}
		}
	}
}

// cycle repeats Envoy's expected assignments for keys 0 … times·len−1.
func cycle(hosts []int, times int) []pick {
	var picks []pick
	for i := range times * len(hosts) {
		picks = append(picks, pick{uint64(i), hosts[i%len(hosts)]})
	}
	return picks
}

// Envoy MaglevLoadBalancerTest.Weighted, WeightedSingleHost,
// LocalityWeightedSameLocalityWeights (one host per locality, localities
// 1:1, so weights 1:1) and LocalityWeightedDifferentLocalityWeights
// (localities 8:0:2 over :90, :92, :91, so weights 4, 1, 0): table size 17.
func TestMaglevEnvoyWeighted(t *testing.T) {
	for _, c := range []struct {
		weights []float64
		want    []int
		lo, hi  int
	}{
		{[]float64{1, 2}, []int{1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1}, 6, 11},
		{[]float64{1, 1}, []int{1, 0, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1, 0, 1}, 8, 9},
		{[]float64{4, 1, 0}, []int{1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0}, 4, 13},
		{[]float64{7}, make([]int, 17), 17, 17},
	} {
		s, v := &Maglev{TableSize: 17}, hashView(ports(portRange(90, len(c.weights))...), c.weights...)
		checkPicks(t, s, v, cycle(c.want, 3))
		if lo, hi := entriesPerHost(s.table, 2); len(c.weights) > 1 && (lo != c.lo || hi != c.hi) {
			t.Errorf("weights %v: %d to %d entries per host; Envoy: %d to %d", c.weights, lo, hi, c.lo, c.hi)
		}
	}
}

// Envoy MaglevLoadBalancerTest.LocalityWeightedLopsided: host :0 weighs
// 127/128 and each of :1 … :1023 1/(128·1023), table size 65537: each
// light host gets one slot, the heavy one the rest.
func TestMaglevEnvoyLopsided(t *testing.T) {
	v := hashView(ports(portRange(0, 1024)...))
	v.Weights[0] = 127 * 1023
	s := &Maglev{}
	counts := make([]int, 1024)
	for k := range uint64(65537) {
		counts[s.Select(v, Request{Key: k})]++
	}
	for j := 1; j < 1024; j++ {
		if counts[j] != 1 {
			t.Fatalf("host :%d has %d slots, Envoy: 1", j, counts[j])
		}
	}
	if counts[0] != 65537-1023 {
		t.Errorf("host :0 has %d slots, Envoy: %d", counts[0], 65537-1023)
	}
}

// Envoy MaglevLoadBalancerTest.NoPrimeNumber.
func TestMaglevNoPrimeNumber(t *testing.T) {
	defer func() {
		if r := fmt.Sprint(recover()); !strings.Contains(r, "not a prime number") {
			t.Errorf("panic %q, want a table size error", r)
		}
	}()
	(&Maglev{TableSize: 8}).Select(hashView(ports(90)), Request{})
}

// hashSelectors are fresh selectors of both kinds, at their defaults.
func hashSelectors() map[string]func() Selector {
	return map[string]func() Selector{
		"ring-hash": func() Selector { return &RingHash{} },
		"maglev":    func() Selector { return &Maglev{} },
	}
}

// disrupt maps keys before and after backend removed of 10 goes down.
func disrupt(s Selector, keys []uint64, removed int) (before, after []int) {
	v := hashView(ports(portRange(8000, 10)...))
	before, after = make([]int, len(keys)), make([]int, len(keys))
	for i, k := range keys {
		before[i] = s.Select(v, Request{Key: k})
	}
	v.Up[removed] = false
	v.Version++
	for i, k := range keys {
		after[i] = s.Select(v, Request{Key: k})
	}
	return before, after
}

func randomKeys(n int, seed uint64) []uint64 {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = rng.Uint64()
	}
	return keys
}

// TestMaglevMinimalDisruption: taking one of 10 backends down moves all
// its keys, and few others (the Maglev paper's near-minimal disruption).
func TestMaglevMinimalDisruption(t *testing.T) {
	const removed = 3
	keys := randomKeys(100000, 3)
	before, after := disrupt(&Maglev{}, keys, removed)
	moved, others := 0, 0
	for i := range keys {
		switch {
		case after[i] == removed:
			t.Fatalf("key %d still on the removed backend", keys[i])
		case before[i] == removed:
			moved++
		case after[i] != before[i]:
			others++
		}
	}
	frac := float64(moved+others) / float64(len(keys))
	t.Logf("%.4f of keys moved: %d from the removed backend, %d others", frac, moved, others)
	if math.Abs(frac-0.1) > 0.02 || others > len(keys)/100 {
		t.Errorf("%.4f of keys moved, %d not from the removed backend; want about 1/10, under 1%% others", frac, others)
	}
}

// TestRingHashMinimalDisruption: taking one of 10 backends down moves all
// its keys. Any other key that moves lands on an entry the rebuild added:
// Envoy keeps at least MinRingSize entries, so with the default 1024 each
// of 9 hosts gets ceil(1024/9) = 114 entries instead of ceil(1024/10) =
// 103, the first 103 as before. With MinRingSize 62 every host keeps
// ceil(6.2) = ceil(6.9) = 7 entries and exactly the removed host's keys move.
func TestRingHashMinimalDisruption(t *testing.T) {
	const removed = 3
	keys := randomKeys(100000, 3)
	for _, c := range []struct {
		min         uint64
		size, after int
		exact       bool // hashes per host unchanged
	}{{0, 1030, 1026, false}, {62, 70, 63, true}} {
		s := &RingHash{MinRingSize: c.min}
		s.Select(hashView(ports(portRange(8000, 10)...)), Request{})
		if len(s.hashes) != c.size {
			t.Fatalf("min %d: ring of %d, want %d", c.min, len(s.hashes), c.size)
		}
		old := make(map[uint64]bool)
		for _, h := range s.hashes {
			old[h] = true
		}
		before, after := disrupt(s, keys, removed)
		if len(s.hashes) != c.after {
			t.Fatalf("min %d: ring of %d after, want %d", c.min, len(s.hashes), c.after)
		}
		moved, others := 0, 0
		for i, k := range keys {
			switch {
			case after[i] == removed:
				t.Fatalf("min %d: key %d still on the removed backend", c.min, k)
			case before[i] == removed:
				moved++
			case after[i] != before[i]:
				others++
				p, _ := slices.BinarySearch(s.hashes, k)
				if old[s.hashes[p%len(s.hashes)]] {
					t.Fatalf("min %d: key %d moved from %d to %d's old entry", c.min, k, before[i], after[i])
				}
			}
		}
		t.Logf("min %d: %.4f of keys moved: %d from the removed backend, %d to added entries",
			c.min, float64(moved+others)/float64(len(keys)), moved, others)
		if c.exact && others != 0 {
			t.Errorf("min %d: %d keys moved that were not on the removed backend", c.min, others)
		}
	}
}

// TestHashWeights: with weights 1 and 3, random keys split about 1:3. The
// ring's tolerance is three standard deviations of the share of 256 of 1024
// random points; Maglev's table is exact but for rounding.
func TestHashWeights(t *testing.T) {
	tolerance := map[string]float64{"ring-hash": 0.05, "maglev": 0.01}
	for name, newSel := range hashSelectors() {
		s, v := newSel(), hashView(ports(8000, 8001), 1, 3)
		rng := rand.New(rand.NewPCG(5, 6))
		var counts [2]int
		const n = 100000
		for range n {
			counts[s.Select(v, Request{Key: rng.Uint64()})]++
		}
		share := float64(counts[0]) / n
		t.Logf("%s: shares %.4f and %.4f", name, share, 1-share)
		if math.Abs(share-0.25) > tolerance[name] {
			t.Errorf("%s: shares %.4f and %.4f, want 1/4 and 3/4 within %g", name, share, 1-share, tolerance[name])
		}
	}
}

// TestHashView: down and weightless backends are left out, the table is
// rebuilt only on a new Version, missing Names hash as decimal indices, and
// a backend taken down without a new Version is still avoided.
func TestHashView(t *testing.T) {
	for name, newSel := range hashSelectors() {
		v := hashView(make([]string, 4), 1, 1, 0, 1)
		v.Names, v.Up[0] = nil, false
		s := newSel()
		counts := make([]int, 4)
		for k := range uint64(2000) {
			counts[s.Select(v, Request{Key: k * 0x9e3779b97f4a7c15})]++
		}
		if counts[0] != 0 || counts[2] != 0 || counts[1] == 0 || counts[3] == 0 {
			t.Errorf("%s: counts %v, want none on down 0 and weightless 2", name, counts)
		}

		named, sn := hashView([]string{"0", "1", "2", "3"}, 1, 1, 0, 1), newSel()
		named.Up[0] = false
		for k := range uint64(2000) {
			r := Request{Key: k * 0x9e3779b97f4a7c15}
			if a, b := s.Select(v, r), sn.Select(named, r); a != b {
				t.Fatalf("%s: key %d picks %d without names, %d named by index", name, r.Key, a, b)
			}
		}

		// Up changes without a new Version: the table stays, its down
		// backend is skipped, and none up gives -1.
		v.Weights[0], v.Up[0] = 1, true
		for k := range uint64(2000) {
			if s.Select(v, Request{Key: k * 0x9e3779b97f4a7c15}) == 0 {
				t.Fatalf("%s: rebuilt without a new Version", name)
			}
		}
		v.Up[3] = false
		for k := range uint64(200) {
			if j := s.Select(v, Request{Key: k * 0x9e3779b97f4a7c15}); j != 1 {
				t.Fatalf("%s: picked %d, want the only up backend in the table, 1", name, j)
			}
		}
		v.Up[1] = false
		if j := s.Select(v, Request{Key: 42}); j != -1 {
			t.Errorf("%s: picked %d with the table's backends down, want -1", name, j)
		}
		v.Version++
		if j := s.Select(v, Request{Key: 42}); j != 0 {
			t.Errorf("%s: picked %d after the new Version, want 0, the one up", name, j)
		}
		v.Up[0] = false
		v.Version++
		if j := s.Select(v, Request{Key: 42}); j != -1 {
			t.Errorf("%s: picked %d with none up, want -1", name, j)
		}
	}
}

func TestHashSelectDoesNotAllocate(t *testing.T) {
	for name, newSel := range hashSelectors() {
		s, v := newSel(), hashView(ports(portRange(8000, 100)...))
		k := uint64(0)
		if a := testing.AllocsPerRun(1000, func() { k += 0x9e3779b97f4a7c15; s.Select(v, Request{Key: k}) }); a != 0 {
			t.Errorf("%s: %g allocations per Select", name, a)
		}
	}
}

func benchmarkHash(b *testing.B, s Selector) {
	v := hashView(ports(portRange(8000, 100)...))
	s.Select(v, Request{})
	b.ReportAllocs()
	b.ResetTimer()
	k := uint64(0)
	for b.Loop() {
		k += 0x9e3779b97f4a7c15
		s.Select(v, Request{Key: k})
	}
}

func BenchmarkMaglev(b *testing.B)   { benchmarkHash(b, &Maglev{}) }
func BenchmarkRingHash(b *testing.B) { benchmarkHash(b, &RingHash{}) }
