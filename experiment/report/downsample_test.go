package report

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestDecimateKeepsExtremes(t *testing.T) {
	nz := noise(3)
	for _, n := range []int{1, 2, 5, 1000, 100000} {
		xs := make([]float64, n)
		ys := make([]float64, n)
		for i := range n {
			xs[i] = float64(i) * 500 / float64(n) // 500 pixel columns
			ys[i] = nz.next()*100 - 50
		}
		if n > 10 {
			ys[n/3] = 1e6    // spike up
			ys[2*n/3] = -1e6 // spike down
		}
		dx, dy := decimate(nil, nil, xs, ys)
		if len(dx) != len(dy) {
			t.Fatalf("n=%d: %d x, %d y", n, len(dx), len(dy))
		}
		if cols := math.Floor(xs[n-1]) + 1; float64(len(dx)) > 4*cols {
			t.Errorf("n=%d: %d points for %.0f columns, want at most 4 per column", n, len(dx), cols)
		}
		if slices.Max(dy) != slices.Max(ys) || slices.Min(dy) != slices.Min(ys) {
			t.Errorf("n=%d: range %g..%g, want %g..%g", n, slices.Min(dy), slices.Max(dy), slices.Min(ys), slices.Max(ys))
		}
		if dx[0] != xs[0] || dy[0] != ys[0] || dx[len(dx)-1] != xs[n-1] || dy[len(dy)-1] != ys[n-1] {
			t.Errorf("n=%d: first or last point lost", n)
		}
		if !slices.IsSorted(dx) {
			t.Errorf("n=%d: order not kept", n)
		}
		// Every column's own min and max survive.
		type mm struct{ lo, hi float64 }
		want := map[float64]mm{}
		for i := range n {
			c := math.Floor(xs[i])
			m, ok := want[c]
			if !ok {
				m = mm{ys[i], ys[i]}
			}
			want[c] = mm{min(m.lo, ys[i]), max(m.hi, ys[i])}
		}
		got := map[float64]mm{}
		for i := range dx {
			c := math.Floor(dx[i])
			m, ok := got[c]
			if !ok {
				m = mm{dy[i], dy[i]}
			}
			got[c] = mm{min(m.lo, dy[i]), max(m.hi, dy[i])}
		}
		for c, w := range want {
			if got[c] != w {
				t.Fatalf("n=%d column %g: kept %v, want %v", n, c, got[c], w)
			}
		}
	}
}

// TestLongSeriesDownsampled renders 200k points and checks the path stays
// small and still reaches the spike.
func TestLongSeriesDownsampled(t *testing.T) {
	const n = 200000
	s := Series{Name: "long", X: make([]float64, n), Y: make([]float64, n)}
	for i := range n {
		s.X[i] = float64(i)
		s.Y[i] = math.Sin(float64(i) / 1000)
	}
	s.Y[77777] = 10
	f := &Figure{Title: "long", Series: []Series{s}}
	var b bytes.Buffer
	if err := SVG(&b, f, 800, 400); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	i := strings.Index(doc, `class="series"`)
	if i < 0 {
		t.Fatal("no series path")
	}
	d := doc[i:]
	d = d[strings.Index(d, ` d="`)+4:]
	d = d[:strings.IndexByte(d, '"')]
	pts := strings.Count(d, "L") + 1
	if pts > 4*800 || pts < 800 {
		t.Errorf("%d points drawn, want between 800 and 3200 for an 800 px wide figure", pts)
	}
	// The highest point drawn (smallest pixel y) is the spike: the top of
	// the plot, where y = 10 maps after the axis is widened to 0..10 at
	// most, so it is far above every sine point.
	minY, second := math.Inf(1), math.Inf(1)
	for _, seg := range strings.FieldsFunc(d, func(r rune) bool { return r == 'M' || r == 'L' }) {
		_, ys, _ := strings.Cut(seg, " ")
		y, err := strconv.ParseFloat(ys, 64)
		if err != nil {
			t.Fatalf("bad point %q", seg)
		}
		if y < minY {
			minY, second = y, minY
		} else if y < second {
			second = y
		}
	}
	if second-minY < 100 {
		t.Errorf("spike lost: top two pixel y %g and %g", minY, second)
	}
}

// BenchmarkSVGLongSeries renders one million points into an 800 px figure.
func BenchmarkSVGLongSeries(b *testing.B) {
	const n = 1000000
	nz := noise(5)
	s := Series{Name: "long", X: make([]float64, n), Y: make([]float64, n)}
	for i := range n {
		s.X[i] = float64(i)
		s.Y[i] = nz.next()
	}
	f := &Figure{Title: "1M points", Series: []Series{s}}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := SVG(&buf, f, 800, 400); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes/svg")
}
