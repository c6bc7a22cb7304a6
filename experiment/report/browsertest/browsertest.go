// Package browsertest renders reports in headless Chromium for tests: a
// screenshot, and the page's layout as the browser computes it (which
// tables overflow, whether the summary chart is there).
package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Chromium returns a headless Chromium binary ($SHOAL_CHROMIUM, or
// Debian's chromium-headless-shell or chromium). Without one it skips the
// test, or fails it under CI, where scripts/test.sh installs one and a
// skip would hide a broken install.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("SHOAL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium-headless-shell", "/usr/lib/chromium/chromium-headless-shell", "chromium", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const why = "no headless Chromium: install the Debian package chromium-headless-shell (or chromium), or set SHOAL_CHROMIUM"
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
	return ""
}

// run runs Chromium headless on page at width x height with the flags this
// machine needs (no sandbox as root, no network) and returns its stdout.
func run(t testing.TB, bin, page string, width, height int, extra ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + filepath.Join(dir, "profile"), "--window-size=" + strconv.Itoa(width) + "," + strconv.Itoa(height)}, extra...)
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+page)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s failed: %v\n%s", bin, err, errOut.String())
	}
	return out.Bytes()
}

// Screenshot renders the HTML file page at width x height and returns the
// PNG.
func Screenshot(t testing.TB, bin, page string, width, height int) []byte {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "shot.png")
	run(t, bin, page, width, height, "--screenshot="+shot)
	raw, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	return raw
}

// Table is one table as laid out: its id and caption, and how much wider
// its content is than the box it has (0 when it fits).
type Table struct {
	ID, Caption string
	Overflow    int
}

// Layout is what the browser made of a page.
type Layout struct {
	// PageOverflow is how much wider the page is than the window.
	PageOverflow int
	Tables       []Table
	// SummaryCharts counts the SVG charts in the page's summary section.
	SummaryCharts int
}

// measure is injected at the end of the page: it opens every folded
// table, measures, and writes the result into the page as JSON, which
// --dump-dom then prints.
const measure = `<script>
for (const d of document.querySelectorAll("details")) d.open = true;
const out = {PageOverflow: Math.max(0, document.documentElement.scrollWidth - window.innerWidth), Tables: [],
  SummaryCharts: document.querySelectorAll("section.summary svg").length};
for (const t of document.querySelectorAll("table")) {
  const cap = t.caption ? t.caption.textContent : (t.closest("details") ? t.closest("details").querySelector("summary").textContent : "");
  out.Tables.push({ID: t.id, Caption: cap, Overflow: Math.max(0, t.scrollWidth - t.clientWidth)});
}
const pre = document.createElement("pre");
pre.id = "shoal-layout";
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>`

// Measure lays out the HTML file page in a window width pixels wide.
func Measure(t testing.TB, bin, page string, width int) Layout {
	t.Helper()
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(t.TempDir(), "probe.html")
	doc := strings.Replace(string(raw), "</body>", measure+"</body>", 1)
	if err := os.WriteFile(probe, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(run(t, bin, probe, width, 900, "--dump-dom"))
	_, rest, ok := strings.Cut(dom, `<pre id="shoal-layout">`)
	body, _, ok2 := strings.Cut(rest, "</pre>")
	if !ok || !ok2 {
		t.Fatalf("the page's measurements are missing from the DOM Chromium dumped:\n%.2000s", dom)
	}
	var l Layout
	if err := json.Unmarshal([]byte(html.UnescapeString(body)), &l); err != nil {
		t.Fatalf("reading the page's measurements: %v\n%s", err, body)
	}
	return l
}
