package report

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// findChromium returns a headless Chromium binary: $SHOAL_CHROMIUM, or
// Debian's chromium-headless-shell or chromium.
func findChromium() (string, bool) {
	if p := os.Getenv("SHOAL_CHROMIUM"); p != "" {
		return p, true
	}
	for _, name := range []string{"chromium-headless-shell", "/usr/lib/chromium/chromium-headless-shell", "chromium", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, true
		}
	}
	return "", false
}

// TestBrowserScreenshot renders the sample report in headless Chromium and
// checks that the screenshot shows text, tables and coloured plots. Set
// SHOAL_REPORT_SCREENSHOT=/some/file.png to keep the screenshot.
func TestBrowserScreenshot(t *testing.T) {
	bin, ok := findChromium()
	if !ok {
		t.Skip("no headless Chromium: install the Debian package chromium-headless-shell (or chromium), or set SHOAL_CHROMIUM")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	shot := filepath.Join(dir, "shot.png")
	if err := WriteFile(page, sampleReport()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot,
		"--window-size=1200,2000", "file://"+page)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s failed: %v\n%s", bin, err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, out)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if keep := os.Getenv("SHOAL_REPORT_SCREENSHOT"); keep != "" {
		if b, err := os.ReadFile(shot); err == nil {
			_ = os.WriteFile(keep, b, 0o644)
		}
	}
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 2000 {
		t.Errorf("screenshot is %dx%d, want 1200x2000", b.Dx(), b.Dy())
	}
	st := pixelStats(img)
	t.Logf("%d distinct colours, %.1f%% non-white; palette pixels %v", st.distinct, 100*st.inked, st.palette)
	if st.distinct < 200 {
		t.Errorf("only %d distinct colours: page looks blank or unstyled", st.distinct)
	}
	if st.inked < 0.02 || st.inked > 0.6 {
		t.Errorf("%.1f%% of pixels are not white, want 2%%..60%%", 100*st.inked)
	}
	// The first two figures (6 lines, 4 CDFs) are in view: the first four
	// palette colours must be visible.
	for i, n := range st.palette[:4] {
		if n < 150 {
			t.Errorf("palette colour %s shows on %d pixels, want >= 150", Palette[i], n)
		}
	}
}

type shotStats struct {
	distinct int
	inked    float64
	palette  [len(Palette)]int
}

// pixelStats counts distinct colours, the non-white fraction and the
// pixels near each palette colour.
func pixelStats(img image.Image) shotStats {
	var st shotStats
	var pal [len(Palette)][3]int
	for i, hex := range Palette {
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
