package nn

import "math"

// Float32 activations for the GRU's gates. math.Exp and math.Tanh compute in
// float64 to full precision, more than a float32 network can use, and are
// the GRU's main cost after its products. expNonPos evaluates e^x in float64
// to a relative error below 1e-13 with the usual table method: x = (32q +
// j)·ln2/32 + r with |r| ≤ ln2/64, e^x = 2^q · 2^(j/32) · e^r, and e^r by
// its degree-5 Taylor polynomial (remainder ≤ (ln2/64)⁶/6! ≈ 2e-15).
// sigmoid32 and tanh32 round the float64 result to float32, so they differ
// from float32(math.…) only when the exact value lies within ~1e-13
// relative of a float32 rounding boundary, and then by one unit in the last
// place. Both are branch-free on the sign, which is random in a network.

const (
	ln2Hi32 = 6.93147180369123816490e-01 / 32 // ln2/32 to 32 bits, so k·ln2Hi32 is exact
	ln2Lo32 = 1.90821492927058770002e-10 / 32 // ln2/32 − ln2Hi32
	log2e32 = 32 * 1.44269504088896338700e+00 // 32/ln 2
	tanhLo  = 0.05                            // below: tanh by its Taylor series
)

// exp2Frac holds 2^(j/32), j = 0..31.
var exp2Frac = func() (t [32]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 32)
	}
	return t
}()

// expNonPos returns e^x for x ≤ 0 (0 below −708, where e^x is subnormal;
// NaN for NaN).
func expNonPos(x float64) float64 {
	if !(x >= -708) {
		if x != x {
			return x
		}
		return 0
	}
	// Adding 1.5·2⁵² rounds 32x/ln2 to the nearest integer k, left in the
	// low bits of the sum (|k| < 2¹⁶ here).
	t := x*log2e32 + 0x1.8p52
	k := int64(math.Float64bits(t)<<32) >> 32
	kf := t - 0x1.8p52
	r := (x - kf*ln2Hi32) - kf*ln2Lo32
	// e^r ≈ 1 + r + r²/2 + r³/6 + r⁴/24 + r⁵/120 in Estrin's form, which
	// shortens the dependency chain of Horner's.
	r2 := r * r
	p := (1 + r) + r2*((1.0/2+r*(1.0/6))+r2*(1.0/24+r*(1.0/120)))
	return p * exp2Frac[k&31] * math.Float64frombits(uint64((k>>5)+1023)<<52)
}

// widen converts a float32 to float64 exactly, with integer operations for
// normal numbers: the SSE conversion (CVTSS2SD) merges into its destination
// register, a false dependency that chains independent loop iterations
// through the previous call's registers and made sigmoid32 4x slower.
func widen(v float32) float64 {
	b := math.Float32bits(v)
	e := b >> 23 & 0xff
	if e == 0 || e == 0xff { // zero, subnormal, Inf, NaN
		return float64(v)
	}
	return math.Float64frombits(uint64(b>>31)<<63 | uint64(e+(1023-127))<<52 | uint64(b&(1<<23-1))<<29)
}

// sigmoid32 returns 1/(1+e^−v) rounded to float32, from e = e^−|v|:
// 1/(1+e) for v ≥ 0 and e/(1+e) otherwise.
func sigmoid32(v float32) float32 {
	x := widen(v)
	e := expNonPos(-math.Abs(x))
	s := 1 / (1 + e)
	// Select s or e·s by the sign bit without a branch.
	neg := math.Float64bits(x) >> 63 // 1 when v < 0 (or −0)
	f := math.Float64frombits(math.Float64bits(e)&-neg | math.Float64bits(1)&(neg-1))
	return float32(f * s)
}

// tanh32 returns tanh(v) rounded to float32: (1 − e^−2|v|)/(1 + e^−2|v|)
// with v's sign, or x − x³/3 + 2x⁵/15 − 17x⁷/315 for |v| < 0.05 (remainder
// below 62/2835·0.05⁸ ≈ 1e-12 relative), where 1 − e^−2|v| would cancel.
func tanh32(v float32) float32 {
	x := widen(v)
	a := math.Abs(x)
	if a < tanhLo {
		x2 := x * x
		return float32(x * (1 + x2*(-1.0/3+x2*(2.0/15+x2*(-17.0/315)))))
	}
	e := expNonPos(-2 * a)
	return float32(math.Copysign((1-e)/(1+e), x))
}

// sigmoid32s sets dst[i] = σ(src[i]) (dst may be src), four at a time with
// AVX2 (act32_amd64.s) or with sigmoid32. Both are accurate to one float32
// ulp, but may differ from each other in the last bit. The tail goes
// through a padded block, so every value takes the same path.
func sigmoid32s(dst, src []float32) {
	dst = dst[:len(src)]
	if !actFast {
		for i, v := range src {
			dst[i] = sigmoid32(v)
		}
		return
	}
	n := len(src) &^ 3
	if n > 0 {
		sigmoid32x4(&dst[0], &src[0], n)
	}
	if n < len(src) {
		var buf [4]float32
		copy(buf[:], src[n:])
		sigmoid32x4(&buf[0], &buf[0], 4)
		copy(dst[n:], buf[:])
	}
}

// tanh32s sets dst[i] = tanh(src[i]) like sigmoid32s.
func tanh32s(dst, src []float32) {
	dst = dst[:len(src)]
	if !actFast {
		for i, v := range src {
			dst[i] = tanh32(v)
		}
		return
	}
	n := len(src) &^ 3
	if n > 0 {
		tanh32x4(&dst[0], &src[0], n)
	}
	if n < len(src) {
		var buf [4]float32
		copy(buf[:], src[n:])
		tanh32x4(&buf[0], &buf[0], 4)
		copy(dst[n:], buf[:])
	}
}
