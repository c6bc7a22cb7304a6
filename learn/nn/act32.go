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
	k := int64(x*log2e32 - 0.5) // nearest integer to 32x/ln2 (x ≤ 0)
	kf := float64(k)
	r := (x - kf*ln2Hi32) - kf*ln2Lo32
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120)))))
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
