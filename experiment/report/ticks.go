package report

import (
	"math"
	"strconv"
	"strings"
)

// decStep is a decimal tick step m·10^e with m in {1, 2, 5}. Keeping the
// step decimal lets tick values be computed as k·m scaled by an exact power
// of ten, so 3·0.2 is the double nearest 0.6 and not 0.6000000000000001.
type decStep struct {
	m int64
	e int
}

// value returns the step as a float64.
func (s decStep) value() float64 { return scaleDec(float64(s.m), s.e) }

// scaleDec returns x·10^e rounded once: for negative e it divides by the
// exact power of ten instead of multiplying by an inexact reciprocal.
func scaleDec(x float64, e int) float64 {
	if e >= 0 {
		return x * math.Pow10(e)
	}
	return x / math.Pow10(-e)
}

// niceStep returns the step of the form {1,2,5}·10^e nearest raw on a log
// scale (thresholds at the geometric means √2, √10, √50). raw must be
// positive and finite.
func niceStep(raw float64) decStep {
	e := floorLog10(raw)
	f := raw / math.Pow10(e) // in [1, 10)
	switch {
	case f < math.Sqrt2:
		return decStep{1, e}
	case f < math.Sqrt(10):
		return decStep{2, e}
	case f < math.Sqrt(50):
		return decStep{5, e}
	}
	return decStep{1, e + 1}
}

// maxTickCount bounds the number of ticks any axis computation returns.
const maxTickCount = 200

// stepTicks returns the multiples of s that lie in [lo, hi] (with a relative
// tolerance of 1e-9 of the step at both ends).
func stepTicks(lo, hi float64, s decStep) []float64 {
	sv := s.value()
	kLo := math.Ceil(lo/sv - 1e-9)
	kHi := math.Floor(hi/sv + 1e-9)
	if kHi-kLo+1 > maxTickCount || math.Abs(kLo) > 1e15 || math.Abs(kHi) > 1e15 {
		return nil
	}
	ticks := make([]float64, 0, int(kHi-kLo)+1)
	for k := kLo; k <= kHi; k++ {
		v := scaleDec(k*float64(s.m), s.e)
		if v == 0 {
			v = 0 // no negative zero
		}
		ticks = append(ticks, v)
	}
	return ticks
}

// linearTicks returns "nice" ticks inside [lo, hi]: multiples of the 1-2-5
// step nearest (hi-lo)/target, so about target+1 ticks. lo < hi.
func linearTicks(lo, hi float64, target int) ([]float64, decStep) {
	if target < 1 {
		target = 1
	}
	s := niceStep((hi - lo) / float64(target))
	return stepTicks(lo, hi, s), s
}

// niceRange widens [lo, hi] outwards to multiples of the 1-2-5 step chosen
// for target ticks and returns the widened range, its ticks and the step.
func niceRange(lo, hi float64, target int) (nlo, nhi float64, ticks []float64, s decStep) {
	if target < 1 {
		target = 1
	}
	s = niceStep((hi - lo) / float64(target))
	sv := s.value()
	nlo = scaleDec(math.Floor(lo/sv+1e-9)*float64(s.m), s.e)
	nhi = scaleDec(math.Ceil(hi/sv-1e-9)*float64(s.m), s.e)
	if nlo == 0 {
		nlo = 0
	}
	if nhi == 0 {
		nhi = 0
	}
	return nlo, nhi, stepTicks(nlo, nhi, s), s
}

// floorLog10 returns the largest integer p with 10^p <= v, for v > 0,
// correcting the rounding of math.Log10 at exact powers of ten.
func floorLog10(v float64) int {
	p := int(math.Floor(math.Log10(v)))
	for p > -330 && math.Pow10(p) > v {
		p--
	}
	for p < 310 && math.Pow10(p+1) <= v {
		p++
	}
	return p
}

// logTicks returns ticks for a base-10 logarithmic axis over [lo, hi],
// 0 < lo < hi: the densest of 1-2-5 per decade, every decade, or every k-th
// decade (k dividing the exponent) that gives at most target ticks. Minor
// ticks (2..9 times each power of ten) are returned when every decade is
// labelled. When fewer than two such ticks fall in the range (a range much
// narrower than a decade), it falls back to linear ticks, and linear reports
// true.
func logTicks(lo, hi float64, target int) (major, minor []float64, linear bool, s decStep) {
	if target < 2 {
		target = 2
	}
	pLo, pHi := floorLog10(lo), floorLog10(hi)
	inRange := func(v float64) bool { return v >= lo*(1-1e-9) && v <= hi*(1+1e-9) }
	// Level 0: 1, 2, 5 per decade.
	var cand []float64
	for p := pLo; p <= pHi; p++ {
		for _, m := range [...]float64{1, 2, 5} {
			if v := m * math.Pow10(p); inRange(v) {
				cand = append(cand, v)
			}
		}
	}
	if len(cand) < 2 {
		ticks, s := linearTicks(lo, hi, target)
		return ticks, nil, true, s
	}
	if len(cand) <= target {
		return cand, nil, false, decStep{}
	}
	// Decades, thinned to every k-th one.
	for k := 1; ; k++ {
		major = major[:0]
		for p := pLo; p <= pHi; p++ {
			if p%k != 0 {
				continue
			}
			if v := math.Pow10(p); inRange(v) {
				major = append(major, v)
			}
		}
		if len(major) <= target || len(major) <= 2 {
			break
		}
	}
	if len(major) < 2 {
		// A range just over a decade wide, e.g. 2..30, with target < 4.
		ticks, s := linearTicks(lo, hi, target)
		return ticks, nil, true, s
	}
	if len(major) >= 2 && math.Abs(math.Log10(major[1]/major[0])-1) < 1e-9 {
		for p := pLo; p <= pHi; p++ {
			for m := 2.0; m <= 9; m++ {
				if v := m * math.Pow10(p); inRange(v) {
					minor = append(minor, v)
				}
			}
		}
	}
	return major, minor, false, decStep{}
}

// minusSign is the typographic minus used in tick labels.
const minusSign = "\u2212"

// fixMinus replaces a leading ASCII hyphen with a typographic minus.
func fixMinus(s string) string {
	if strings.HasPrefix(s, "-") {
		return minusSign + s[1:]
	}
	return s
}

// tidyExp turns Go's exponent form "6e-05" into "6e-5" with a
// typographic minus.
func tidyExp(s string) string {
	mant, exp, ok := strings.Cut(s, "e")
	if !ok {
		return fixMinus(s)
	}
	neg := strings.HasPrefix(exp, "-")
	exp = strings.TrimLeft(exp, "+-")
	exp = strings.TrimLeft(exp, "0")
	if exp == "" {
		exp = "0"
	}
	if neg {
		exp = minusSign + exp
	}
	return fixMinus(mant) + "e" + exp
}

// siPrefixes are the suffixes for thousands, millions, billions, trillions.
var siPrefixes = [...]string{"", "k", "M", "G", "T"}

// linearLabels formats ticks that are multiples of step s compactly with
// one format for the whole axis: fixed decimals as the step needs,
// k/M/G/T suffixes for large whole-number ticks, exponent form for tiny or
// huge ones.
func linearLabels(ticks []float64, s decStep) []string {
	maxAbs := 0.0
	for _, t := range ticks {
		maxAbs = math.Max(maxAbs, math.Abs(t))
	}
	labels := make([]string, len(ticks))
	for i, t := range ticks {
		switch {
		case t == 0:
			labels[i] = "0"
		case maxAbs >= 1e15 || maxAbs < 1e-3:
			labels[i] = tidyExp(strconv.FormatFloat(t, 'e', -1, 64))
		case maxAbs >= 1e4 && s.e >= 0:
			n := 3 * (floorLog10(maxAbs) / 3)
			if n > 12 {
				n = 12
			}
			dec := max(0, n-s.e)
			labels[i] = fixMinus(strconv.FormatFloat(t/math.Pow10(n), 'f', dec, 64)) + siPrefixes[n/3]
		default:
			labels[i] = fixMinus(strconv.FormatFloat(t, 'f', max(0, -s.e), 64))
		}
	}
	return labels
}

// superscriptDigits maps '0'..'9' to Unicode superscript digits.
var superscriptDigits = [...]string{"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"}

// superscript renders an integer exponent with superscript characters.
func superscript(p int) string {
	var b strings.Builder
	if p < 0 {
		b.WriteString("⁻")
		p = -p
	}
	for _, c := range strconv.Itoa(p) {
		b.WriteString(superscriptDigits[c-'0'])
	}
	return b.String()
}

// logLabels formats ticks of a logarithmic axis (each m·10^p with m in
// {1,2,5}): plain decimals when all ticks lie in [0.001, 10000), otherwise
// "10³" / "2×10³" for every tick.
func logLabels(ticks []float64) []string {
	plain := true
	for _, t := range ticks {
		if t < 1e-3*(1-1e-12) || t >= 1e4*(1-1e-12) {
			plain = false
		}
	}
	labels := make([]string, len(ticks))
	for i, t := range ticks {
		p := floorLog10(t * (1 + 1e-12))
		m := math.Round(t / math.Pow10(p))
		if plain {
			labels[i] = strconv.FormatFloat(t, 'f', max(0, -p), 64)
			continue
		}
		if m == 1 {
			labels[i] = "10" + superscript(p)
		} else {
			labels[i] = strconv.FormatFloat(m, 'f', 0, 64) + "×10" + superscript(p)
		}
	}
	return labels
}
