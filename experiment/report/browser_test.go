package report

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/shoal-project/shoal/experiment/report/browsertest"
)

// TestBrowserScreenshot renders the sample report in headless Chromium and
// checks that the screenshot shows text, tables and coloured plots. Set
// SHOAL_REPORT_SCREENSHOT=/some/file.png to keep the screenshot.
func TestBrowserScreenshot(t *testing.T) {
	bin := browsertest.Chromium(t)
	img, raw := screenshot(t, bin, sampleReport())
	if keep := os.Getenv("SHOAL_REPORT_SCREENSHOT"); keep != "" {
		if err := os.WriteFile(keep, raw, 0o644); err != nil {
			t.Logf("keeping screenshot: %v", err)
		}
	}
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 2000 {
		t.Errorf("screenshot is %dx%d, want 1200x2000", b.Dx(), b.Dy())
	}
	st := pixelStats(img)
	t.Logf("%d distinct colours, %.1f%% non-white; palette pixels %v", st.distinct, 100*st.inked, st.palette)
	// Antialiased plot lines and bands in many colours give thousands of
	// distinct colours; text alone gives a few hundred (see the control).
	if st.distinct < minDistinct {
		t.Errorf("only %d distinct colours, want >= %d: plots missing?", st.distinct, minDistinct)
	}
	if st.inked < minInked || st.inked > 0.6 {
		t.Errorf("%.1f%% of pixels are not white, want %.0f%%..60%%", 100*st.inked, 100*minInked)
	}
	// The first two figures (6 lines, 4 CDFs) are in view: the first four
	// palette colours must be visible.
	for i, n := range st.palette[:4] {
		if n < 150 {
			t.Errorf("palette colour %s shows on %d pixels, want >= 150", palette[i], n)
		}
	}

	// Negative control: a report with text only must not pass the checks
	// above, or they prove nothing.
	img, _ = screenshot(t, bin, &Report{Title: "text only", Notes: []string{"no figures"}})
	ctl := pixelStats(img)
	t.Logf("control: %d distinct colours, %.1f%% non-white; palette pixels %v", ctl.distinct, 100*ctl.inked, ctl.palette)
	for i, n := range ctl.palette[:4] {
		if n >= 150 {
			t.Errorf("text-only page: palette colour %s on %d pixels; the colour check cannot tell plots from text", palette[i], n)
		}
	}
	if ctl.inked >= minInked || ctl.distinct >= minDistinct {
		t.Errorf("text-only page: %.1f%% non-white, %d colours; the checks cannot tell plots from text", 100*ctl.inked, ctl.distinct)
	}
}

// Thresholds of the screenshot checks, between the text-only control
// (about 400 colours, 3.5% inked) and the sample report (about 4300
// colours, 13.6% inked).
const (
	minDistinct = 1500
	minInked    = 0.07
)

// screenshot renders r with headless Chromium at 1200x2000 and returns the
// decoded image and the PNG bytes.
func screenshot(t *testing.T, bin string, r *Report) (image.Image, []byte) {
	t.Helper()
	page := filepath.Join(t.TempDir(), "report.html")
	if err := WriteFile(page, r); err != nil {
		t.Fatal(err)
	}
	raw := browsertest.Screenshot(t, bin, page, 1200, 2000)
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	return img, raw
}

// TestBrowserLayout: laid out at 1280 px, the sample report's tables fit
// (folded ones opened) and its summary chart is there; a table of twenty
// wide columns does not fit, so the check can tell.
func TestBrowserLayout(t *testing.T) {
	bin := browsertest.Chromium(t)
	layout := func(r *Report) browsertest.Layout {
		page := filepath.Join(t.TempDir(), "report.html")
		if err := WriteFile(page, r); err != nil {
			t.Fatal(err)
		}
		return browsertest.Measure(t, bin, page, 1280)
	}
	l := layout(sampleReport())
	t.Logf("sample report at 1280 px: %+v", l)
	if l.PageOverflow > 0 || l.SummaryCharts != 1 || len(l.Tables) != 4 {
		t.Errorf("sample report: %+v, want no overflow, 1 summary chart, 4 tables", l)
	}
	for _, tb := range l.Tables {
		if tb.Overflow > 0 {
			t.Errorf("table %s (%q) is %d px too wide", tb.ID, tb.Caption, tb.Overflow)
		}
	}
	wide := Table{Caption: "wide"}
	for i := range 20 {
		wide.Columns = append(wide.Columns, fmt.Sprintf("column number %d", i))
	}
	wide.Rows = [][]string{make([]string, 20)}
	for i := range wide.Rows[0] {
		wide.Rows[0][i] = "12345.678 ± 90.12"
	}
	l = layout(&Report{Title: "wide", Tables: []Table{wide}})
	if len(l.Tables) != 1 || l.Tables[0].Overflow == 0 || l.SummaryCharts != 0 {
		t.Errorf("a twenty-column table: %+v, want it to overflow and no summary chart", l)
	}
}

type shotStats struct {
	distinct int
	inked    float64
	palette  [len(palette)]int
}

// pixelStats counts distinct colours, the non-white fraction and the
// pixels near each palette colour.
func pixelStats(img image.Image) shotStats {
	var st shotStats
	var pal [len(palette)][3]int
	for i, hex := range palette {
		for c := range 3 {
			v := 0
			for _, ch := range hex[1+2*c : 3+2*c] {
				v *= 16
				switch {
				case ch >= '0' && ch <= '9':
					v += int(ch - '0')
				default:
					v += int(ch-'A') + 10
				}
			}
			pal[i][c] = v
		}
	}
	seen := map[uint32]bool{}
	b := img.Bounds()
	inked := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r8, g8, b8 := int(r>>8), int(g>>8), int(bl>>8)
			seen[uint32(r8)<<16|uint32(g8)<<8|uint32(b8)] = true
			if r8+g8+b8 < 3*250 {
				inked++
			}
			for i, p := range pal {
				if abs(r8-p[0])+abs(g8-p[1])+abs(b8-p[2]) <= 30 {
					st.palette[i]++
				}
			}
		}
	}
	st.distinct = len(seen)
	st.inked = float64(inked) / float64(b.Dx()*b.Dy())
	return st
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
