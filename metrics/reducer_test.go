package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// naiveReduce is the reference: the formulas of the SampleReducer doc comment, computed directly
// on the samples with sorting and math.Pow.
func naiveReduce(ts []time.Duration, vs []float64, now, unit time.Duration, gamma float64) [5]float64 {
	n := len(vs)
	if n == 0 {
		return [5]float64{}
	}
	var s float64
	for _, v := range vs {
		s += v
	}
	mean := s / float64(n)
	var ss float64
	for _, v := range vs {
		ss += (v - mean) * (v - mean)
	}
	sorted := slices.Clone(vs)
	slices.Sort(sorted)
	h := 0.9 * float64(n-1)
	lo := int(math.Floor(h))
	p90 := sorted[lo]
	if lo+1 < n {
		p90 += (h - float64(lo)) * (sorted[lo+1] - sorted[lo])
	}
	var sw, swv float64
	for k, v := range vs {
		age := max(now-ts[k], 0)
		w := math.Pow(gamma, float64(age)/float64(unit))
		sw += w
		swv += w * v
	}
	return [5]float64{mean, p90, math.Sqrt(ss / float64(n)), swv / sw, swv / float64(n)}
}

func TestSampleReducerHand(t *testing.T) {
	r := NewSampleReducer(8)
	r.Add(0, 1)
	r.Add(1*time.Second, 2)
	r.Add(2*time.Second, 3)
	var got [5]float64
	r.Reduce(2*time.Second, time.Second, &got)
	// weights 0.81, 0.9, 1: sum w v = 0.81 + 1.8 + 3 = 5.61, sum w = 2.71.
	want := [5]float64{2, 2.8, math.Sqrt(2.0 / 3), 5.61 / 2.71, 5.61 / 3}
	for k := range want {
		if math.Abs(got[k]-want[k]) > 1e-12 {
			t.Errorf("scalar %d = %.15g, want %.15g", k, got[k], want[k])
		}
	}
	// numpy: np.percentile(range(1, 11), 90) = 9.1, np.std(range(1, 11)) = 2.8722813232690143.
	r = NewSampleReducer(10)
	for i := 10; i >= 1; i-- {
		r.Add(0, float64(i))
	}
	r.Reduce(0, time.Second, &got)
	if math.Abs(got[ReduceP90]-9.1) > 1e-12 || math.Abs(got[ReduceStdDev]-2.8722813232690143) > 1e-12 || got[ReduceMean] != 5.5 {
		t.Errorf("1..10: mean %g p90 %g std %g, want 5.5 9.1 2.87228", got[ReduceMean], got[ReduceP90], got[ReduceStdDev])
	}
	// All at the same time as now: both discounted averages are the plain mean.
	if got[ReduceDiscountedMean] != 5.5 || got[ReduceWeightedDiscountedMean] != 5.5 {
		t.Errorf("no discount: %g %g, want 5.5", got[ReduceDiscountedMean], got[ReduceWeightedDiscountedMean])
	}
	// One unit later, disc stays 5.5 and wdisc shrinks by 0.9.
	r.Reduce(time.Second, time.Second, &got)
	if math.Abs(got[ReduceDiscountedMean]-5.5) > 1e-12 || math.Abs(got[ReduceWeightedDiscountedMean]-0.9*5.5) > 1e-12 {
		t.Errorf("one unit later: %g %g, want 5.5 4.95", got[ReduceDiscountedMean], got[ReduceWeightedDiscountedMean])
	}
	// Empty: zeros. Reset empties.
	r.Reset()
	got = [5]float64{1, 1, 1, 1, 1}
	r.Reduce(time.Second, time.Second, &got)
	if got != [5]float64{} || r.Len() != 0 || r.Capacity() != 10 {
		t.Errorf("after Reset: %v len %d cap %d", got, r.Len(), r.Capacity())
	}
	// Very old samples: the normalised average is still defined (the reference's 0/0 is avoided),
	// and wdisc underflows to 0.
	r.Add(0, 1)
	r.Add(time.Second, 3)
	r.Reduce(100000*time.Second, time.Second, &got)
	if math.Abs(got[ReduceDiscountedMean]-(0.9*1+3)/1.9) > 1e-12 || got[ReduceWeightedDiscountedMean] != 0 {
		t.Errorf("old samples: disc %g wdisc %g, want %g 0", got[ReduceDiscountedMean], got[ReduceWeightedDiscountedMean], 3.9/1.9)
	}
	// Discount 1: disc = wdisc = mean.
	r.SetDiscount(1)
	r.Reduce(100000*time.Second, time.Second, &got)
	if got[ReduceDiscountedMean] != 2 || got[ReduceWeightedDiscountedMean] != 2 {
		t.Errorf("gamma 1: %g %g, want 2 2", got[ReduceDiscountedMean], got[ReduceWeightedDiscountedMean])
	}
}

// TestSampleReducerProperty compares against naiveReduce on random streams: fewer samples than the
// capacity, wrap-around, ties (values from a small set), and various units.
func TestSampleReducerProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(99, 100))
	for trial := range 2000 {
		capacity := 1 + rng.IntN(64)
		r := NewSampleReducer(capacity)
		gamma := 0.9
		if trial%4 == 3 {
			gamma = 0.5 + 0.5*rng.Float64()
			r.SetDiscount(gamma)
		}
		adds := rng.IntN(3 * capacity)
		var ts []time.Duration
		var vs []float64
		var now time.Duration
		for range adds {
			now += time.Duration(rng.ExpFloat64() * 1e8) // ~100 ms apart
			var v float64
			if trial%2 == 0 {
				v = float64(rng.IntN(5)) // many ties
			} else {
				v = rng.ExpFloat64() * 0.05
			}
			r.Add(now, v)
			ts = append(ts, now)
			vs = append(vs, v)
		}
		if len(vs) > capacity {
			ts, vs = ts[len(ts)-capacity:], vs[len(vs)-capacity:]
		}
		unit := []time.Duration{time.Millisecond, 100 * time.Millisecond, time.Second}[trial%3]
		at := now + time.Duration(rng.IntN(1e9))
		if trial%5 == 4 {
			at = now - time.Duration(rng.IntN(1e9)) // some samples stamped after the reduction time
		}
		var got [5]float64
		r.Reduce(at, unit, &got)
		want := naiveReduce(ts, vs, at, unit, gamma)
		if r.Len() != len(vs) {
			t.Fatalf("trial %d: Len %d, want %d", trial, r.Len(), len(vs))
		}
		for k := range want {
			if math.IsNaN(want[k]) {
				continue // reference underflowed (0/0); covered by the hand test
			}
			if math.Abs(got[k]-want[k]) > 1e-9*math.Max(1, math.Abs(want[k])) {
				t.Fatalf("trial %d (cap %d, n %d, unit %v): scalar %d = %.15g, reference %.15g", trial, capacity, len(vs), unit, k, got[k], want[k])
			}
		}
		// Reduce twice gives the same (the scratch buffer does not disturb the ring).
		var again [5]float64
		r.Reduce(at, unit, &again)
		if again != got {
			t.Fatalf("trial %d: second Reduce %v != first %v", trial, again, got)
		}
	}
}

func FuzzSelectKth(f *testing.F) {
	f.Add([]byte{3, 1, 2}, uint8(1))
	f.Add([]byte{5, 5, 5, 5, 1}, uint8(4))
	f.Add([]byte{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, uint8(9))
	f.Fuzz(func(t *testing.T, data []byte, k uint8) {
		if len(data) == 0 {
			return
		}
		a := make([]float64, len(data))
		for i, b := range data {
			a[i] = float64(b % 16) // small alphabet: many ties
		}
		kk := int(k) % len(a)
		sorted := slices.Clone(a)
		slices.Sort(sorted)
		if got := selectKth(a, kk); got != sorted[kk] {
			t.Fatalf("selectKth(%v, %d) = %g, want %g", data, kk, got, sorted[kk])
		}
		for i, v := range a {
			if (i < kk && v > a[kk]) || (i > kk && v < a[kk]) {
				t.Fatalf("not partitioned around %d: %v", kk, a)
			}
		}
	})
}

func TestSampleReducerAllocs(t *testing.T) {
	r := NewSampleReducer(256)
	var now time.Duration
	var dst [5]float64
	if a := testing.AllocsPerRun(1000, func() { now += time.Millisecond; r.Add(now, float64(now%7)) }); a != 0 {
		t.Errorf("Add allocates %v", a)
	}
	if a := testing.AllocsPerRun(100, func() { r.Reduce(now, time.Second, &dst) }); a != 0 {
		t.Errorf("Reduce allocates %v", a)
	}
}

func BenchmarkSampleReducerReduce(b *testing.B) {
	for _, capacity := range []int{64, 1024} {
		b.Run("cap="+itoa(capacity), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			r := NewSampleReducer(capacity)
			var now time.Duration
			for range capacity {
				now += time.Duration(rng.ExpFloat64() * 1e6)
				r.Add(now, rng.ExpFloat64()*0.05)
			}
			var dst [5]float64
			b.ReportAllocs()
			for b.Loop() {
				r.Reduce(now, 100*time.Millisecond, &dst)
			}
		})
	}
}

func BenchmarkSampleReducerAdd(b *testing.B) {
	r := NewSampleReducer(256)
	b.ReportAllocs()
	var now time.Duration
	for b.Loop() {
		now += time.Microsecond
		r.Add(now, 0.01)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var buf [20]byte
	i := len(buf)
	for n > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	return string(buf[i:])
}
