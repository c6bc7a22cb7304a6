package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run go test ./experiment/report -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		lo := max(0, i-80)
		t.Errorf("%s differs from golden at byte %d (run with -update if intended)\n got: %q\nwant: %q",
			name, i, got[lo:min(len(got), i+80)], want[lo:min(len(want), i+80)])
	}
}

func TestGoldenReport(t *testing.T) {
	var a, b bytes.Buffer
	if err := Write(&a, sampleReport()); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, sampleReport()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two writes of the same report differ")
	}
	golden(t, "sample.html", a.Bytes())
	if a.Len() > 600_000 {
		t.Errorf("sample report is %d bytes; downsampling should keep it under 600 kB", a.Len())
	}
	for _, bad := range []string{"<script", "http://", "https://", "@import", "url(", "src=", "href="} {
		// The SVG namespace is the only URL allowed; references are in-page (#id).
		s := strings.ReplaceAll(a.String(), `xmlns="http://www.w3.org/2000/svg"`, "")
		s = strings.ReplaceAll(s, "url(#", "")
		s = strings.ReplaceAll(s, `href="#`, "")
		if strings.Contains(strings.ToLower(s), bad) {
			t.Errorf("report contains %q: it must be self-contained and script-free", bad)
		}
	}
}

func TestGoldenSVG(t *testing.T) {
	r := sampleReport()
	var b bytes.Buffer
	if err := SVG(&b, &r.Figures[5], 900, 560); err != nil {
		t.Fatal(err)
	}
	golden(t, "panels.svg", b.Bytes())
}

// svgStats decodes an SVG document with encoding/xml over its whole
// length and returns its root element and the data-name of every series
// path, in order.
func svgStats(t *testing.T, doc []byte) (root xml.StartElement, series []string, texts []string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	depth := 0
	inText := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("svg does not parse as XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				root = e.Copy()
			}
			depth++
			if e.Name.Local == "text" || e.Name.Local == "title" {
				inText = true
				texts = append(texts, "")
			}
			if e.Name.Local == "path" || e.Name.Local == "polyline" {
				cls, name := "", ""
				for _, a := range e.Attr {
					switch a.Name.Local {
					case "class":
						cls = a.Value
					case "data-name":
						name = a.Value
					}
				}
				if cls == "series" {
					series = append(series, name)
				}
			}
		case xml.EndElement:
			depth--
			inText = false
		case xml.CharData:
			if inText {
				texts[len(texts)-1] += string(e)
			}
		}
	}
	if depth != 0 {
		t.Fatalf("unbalanced svg: depth %d at end", depth)
	}
	return root, series, texts
}

// drawable counts the series of f (or of its panels) with at least one
// drawable point, computed directly from the data.
func drawable(f *Figure) (n int) {
	figs := []*Figure{f}
	if len(f.Panels) > 0 {
		figs = figs[:0]
		for i := range f.Panels {
			figs = append(figs, &f.Panels[i])
		}
	}
	for _, g := range figs {
		for _, s := range g.Series {
			for i := range min(len(s.X), len(s.Y)) {
				x, y := s.X[i], s.Y[i]
				if x != x || y != y || x > 1e308 || x < -1e308 || y > 1e308 || y < -1e308 {
					continue
				}
				if (f.LogX || g.LogX) && x < 1e-300 || (f.LogY || g.LogY) && y < 1e-300 {
					continue
				}
				n++
				break
			}
		}
	}
	return n
}

func TestSVGParsesWithOnePathPerSeries(t *testing.T) {
	r := sampleReport()
	for _, f := range r.Figures {
		t.Run(f.Title, func(t *testing.T) {
			var b bytes.Buffer
			if err := SVG(&b, &f, 800, 500); err != nil {
				t.Fatal(err)
			}
			root, series, _ := svgStats(t, b.Bytes())
			if root.Name.Local != "svg" || root.Name.Space != "http://www.w3.org/2000/svg" {
				t.Fatalf("root element %v, want svg in the SVG namespace", root.Name)
			}
			if want := drawable(&f); len(series) != want {
				t.Errorf("%d series paths, want %d (one per series with data): %q", len(series), want, series)
			}
		})
	}
}

func TestSVGSeriesNamesAndEmpty(t *testing.T) {
	f := &Figure{Title: "gaps", LogY: true, Series: []Series{
		{Name: "a", X: []float64{1, 2, 3, 4, 5}, Y: []float64{1, nan(), 3, -1, 5}},
		{Name: "b"},
		{Name: "c", X: []float64{1, 2}, Y: []float64{0, inf()}},
		{Name: "d", X: []float64{1, 2, 3}, Y: []float64{2}}, // X longer than Y
	}}
	var b bytes.Buffer
	if err := SVG(&b, f, 400, 300); err != nil {
		t.Fatal(err)
	}
	_, series, texts := svgStats(t, b.Bytes())
	if strings.Join(series, ",") != "a,d" {
		t.Errorf("series paths %q, want a,d (b and c have nothing drawable)", series)
	}
	// a keeps 3 of 5 points: one M and two L.
	doc := b.String()
	i := strings.Index(doc, `data-name="a" d="`)
	d := doc[i+len(`data-name="a" d="`):]
	d = d[:strings.IndexByte(d, '"')]
	if got := strings.Count(d, "M") + strings.Count(d, "L"); got != 3 {
		t.Errorf("series a path %q has %d points, want 3 (NaN, -1 skipped on log y)", d, got)
	}
	joined := strings.Join(texts, "|")
	for _, want := range []string{"b (no data)", "c (no data)"} {
		if !strings.Contains(joined, want) {
			t.Errorf("legend lacks %q: %q", want, joined)
		}
	}
}

func TestSVGNoData(t *testing.T) {
	for _, f := range []*Figure{
		{},
		{Title: "empty series", Series: []Series{{Name: "x"}}},
		{Title: "all NaN", Kind: KindBar, Series: []Series{{X: []float64{nan()}, Y: []float64{1}}}},
		{Title: "log of negatives", LogX: true, LogY: true, Kind: KindStep, Series: []Series{{X: []float64{-1, 0}, Y: []float64{1, 2}}}},
		{Title: "panels", Panels: []Figure{{Title: "p1"}, {Title: "p2", Series: []Series{{Name: "z"}}}}},
	} {
		var b bytes.Buffer
		if err := SVG(&b, f, 300, 200); err != nil {
			t.Fatal(err)
		}
		_, series, texts := svgStats(t, b.Bytes())
		if len(series) != 0 {
			t.Errorf("%q: %d series paths, want none", f.Title, len(series))
		}
		if !strings.Contains(strings.Join(texts, "|"), "no data") {
			t.Errorf("%q: no \"no data\" message", f.Title)
		}
	}
}

func TestSVGRejectsBadInput(t *testing.T) {
	if err := SVG(io.Discard, nil, 100, 100); err == nil {
		t.Error("nil figure: no error")
	}
	if err := SVG(io.Discard, &Figure{}, 10, 100); err == nil {
		t.Error("10 px wide: no error")
	}
	if err := Write(io.Discard, nil); err == nil {
		t.Error("nil report: no error")
	}
}

// hostile is text that breaks markup if not escaped.
const hostile = `<script>alert("x")</script> & </svg><b>'q'</b> ]]> <!--`

func TestEscaping(t *testing.T) {
	r := &Report{
		Title: hostile, Subtitle: hostile, Meta: []KV{{hostile, hostile}}, Notes: []string{hostile},
		Tables: []Table{{Caption: hostile, Columns: []string{hostile}, Rows: [][]string{{hostile}}, Highlight: []int{0}}},
		Figures: []Figure{{
			Title: hostile, XLabel: hostile, YLabel: hostile, Kind: KindBar, Categories: []string{hostile},
			Series: []Series{{Name: hostile, X: []float64{0}, Y: []float64{1}}},
		}},
	}
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	low := strings.ToLower(b.String())
	for _, bad := range []string{"<script", "<b>", "</svg><b>", "<!--"} {
		if strings.Contains(low, bad) {
			t.Errorf("HTML contains unescaped %q", bad)
		}
	}
	if n := strings.Count(b.String(), "&lt;script&gt;"); n < 8 {
		t.Errorf("escaped title appears %d times, want at least 8 (title, h1, subtitle, meta, note, table, svg)", n)
	}

	var s bytes.Buffer
	if err := SVG(&s, &r.Figures[0], 600, 400); err != nil {
		t.Fatal(err)
	}
	_, series, texts := svgStats(t, s.Bytes())
	if len(series) != 1 || series[0] != hostile {
		t.Errorf("series name did not round-trip through XML: %q", series)
	}
	found := 0
	for _, tx := range texts {
		if strings.HasPrefix(tx, `<script>alert("x")`) {
			found++
		}
	}
	if found < 4 { // title element, title text, axis label, legend; x label and category are cut
		t.Errorf("hostile text decoded back %d times, want >= 4: %q", found, texts)
	}
}

func TestTableHighlightAndAlignment(t *testing.T) {
	r := &Report{Tables: []Table{{
		Columns:   []string{"policy", "p99 (ms)", "note"},
		Rows:      [][]string{{"a", "3.0 ± 0.1", "x"}, {"b", "−2.5", ""}, {"c", "1e3"}},
		Highlight: []int{-1, 1, 7},
	}}}
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if got := strings.Count(html, "<strong>"); got != 1 {
		t.Errorf("%d bold cells, want 1", got)
	}
	if !strings.Contains(html, `<td class="num"><strong>−2.5</strong></td>`) {
		t.Errorf("row 1 of column 1 not bold and right-aligned:\n%s", html)
	}
	if !strings.Contains(html, `<td></td></tr>`) {
		t.Error("short row not padded with an empty cell")
	}
	if strings.Contains(html, `<td class="num">a</td>`) {
		t.Error("text column right-aligned")
	}
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.html")
	if err := WriteFile(path, sampleReport()); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, sampleReport()); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Error("WriteFile wrote other bytes than Write")
	}
	if err := WriteFile(filepath.Join(t.TempDir(), "missing", "r.html"), sampleReport()); err == nil {
		t.Error("writing into a missing directory: no error")
	}
}

func BenchmarkWriteSample(b *testing.B) {
	r := sampleReport()
	b.ReportAllocs()
	for b.Loop() {
		if err := Write(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

// strokeOf returns the stroke colour of the series path named name in doc.
func strokeOf(t *testing.T, doc, name string) string {
	t.Helper()
	i := strings.Index(doc, `class="series" data-name="`+name+`"`)
	if i < 0 {
		t.Fatalf("no series %q", name)
	}
	rest := doc[i:]
	rest = rest[strings.Index(rest, `stroke="`)+len(`stroke="`):]
	return rest[:strings.IndexByte(rest, '"')]
}

func TestSharedColoursAcrossFigures(t *testing.T) {
	pts := []float64{1, 2, 3}
	r := &Report{Figures: []Figure{
		{Title: "a", Series: []Series{{Name: "ECMP", X: pts, Y: pts}, {Name: "LSQ", X: pts, Y: pts}}},
		{Title: "b", Series: []Series{{Name: "only here", X: pts, Y: pts}, {Name: "LSQ", X: pts, Y: pts}, {Name: "ECMP", X: pts, Y: pts}}},
	}}
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	figA := doc[:strings.Index(doc, `aria-label="b"`)]
	figB := doc[strings.Index(doc, `aria-label="b"`):]
	for _, name := range []string{"ECMP", "LSQ"} {
		if a, b := strokeOf(t, figA, name), strokeOf(t, figB, name); a != b {
			t.Errorf("%s is %s in one figure and %s in the other", name, a, b)
		}
	}
	// The unshared name takes the first colour not used in its figure.
	if got := strokeOf(t, figB, "only here"); got != palette[2] {
		t.Errorf("unshared series colour %s, want %s", got, palette[2])
	}
	// Standalone SVG: styles by order within the figure.
	var s bytes.Buffer
	if err := SVG(&s, &r.Figures[1], 400, 300); err != nil {
		t.Fatal(err)
	}
	if got := strokeOf(t, s.String(), "only here"); got != palette[0] {
		t.Errorf("standalone first series colour %s, want %s", got, palette[0])
	}
}

func FuzzSVG(f *testing.F) {
	f.Add("title", "x", 1.0, 2.0, 3.0, false, "line")
	f.Add(hostile, "\x00\xff\ufffe", math.NaN(), math.Inf(-1), -1e308, true, "bar")
	f.Add("", "", 0.0, 0.0, 0.0, true, "step")
	f.Add("r", "n", 0.5, 2.0, 3.0, true, "")
	f.Fuzz(func(t *testing.T, title, name string, a, b, c float64, log bool, kind string) {
		fig := &Figure{
			XRange: [2]float64{a, b}, YRange: [2]float64{b, c},
			Title: title, XLabel: name, YLabel: title, Kind: kind, LogX: log, LogY: log,
			Categories: []string{name},
			HLines:     []HLine{{Label: name, Y: c}},
			Series: []Series{
				{Name: name, X: []float64{a, b, c, 0}, Y: []float64{c, a, b, 1}, Lo: []float64{a, b}, Hi: []float64{c, c}},
				{Name: title, X: []float64{b}, Y: []float64{a}},
			},
		}
		var buf bytes.Buffer
		err := SVG(&buf, fig, 320, 240)
		switch kind {
		case "", KindLine, KindStep, KindBar:
			if err != nil {
				t.Fatal(err)
			}
		default:
			if err == nil {
				t.Fatalf("kind %q: no error", kind)
			}
			return
		}
		if bytes.Contains(buf.Bytes(), []byte("NaN")) || bytes.Contains(buf.Bytes(), []byte("Inf")) {
			if !strings.Contains(title+name, "NaN") && !strings.Contains(title+name, "Inf") {
				t.Fatalf("non-finite coordinate in output:\n%s", buf.Bytes())
			}
		}
		svgStats(t, buf.Bytes())
	})
}

func TestFixedRangesClip(t *testing.T) {
	f := &Figure{
		Title: "zoom", XRange: [2]float64{2, 4}, YRange: [2]float64{0, 1},
		HLines: []HLine{{Label: "inside", Y: 0.5}, {Label: "outside", Y: 7}},
		Series: []Series{{Name: "s", X: []float64{0, 1, 2, 3, 4, 5, 6}, Y: []float64{0, 2, 0.5, 0.7, 0.2, 3, 0}}},
	}
	var b bytes.Buffer
	if err := SVG(&b, f, 500, 300); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	_, series, texts := svgStats(t, b.Bytes())
	if len(series) != 1 {
		t.Fatalf("%d series", len(series))
	}
	if !strings.Contains(doc, `<clipPath id="clip1">`) || !strings.Contains(doc, `clip-path="url(#clip1)"`) {
		t.Error("fixed range without clip path")
	}
	joined := "|" + strings.Join(texts, "|") + "|"
	// x ticks within 2..4, y ticks within 0..1, not widened.
	for _, want := range []string{"|2.0|", "|4.0|", "|0|", "|1.0|", "|inside|"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no %q among texts %q", want, joined)
		}
	}
	for _, bad := range []string{"|6|", "|1.2|", "|outside|"} {
		if strings.Contains(joined, bad) {
			t.Errorf("%q drawn outside the fixed range: %q", bad, joined)
		}
	}
	// An invalid range falls back to automatic, without a clip path.
	f.XRange, f.YRange = [2]float64{3, 3}, [2]float64{nan(), 1}
	b.Reset()
	if err := SVG(&b, f, 500, 300); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "clipPath") {
		t.Error("invalid range still clips")
	}
}

func TestUnknownKind(t *testing.T) {
	r := &Report{Figures: []Figure{{Title: "ok"}, {Title: "bad", Panels: []Figure{{Kind: "cdf"}}}}}
	err := Write(io.Discard, r)
	if err == nil || !strings.Contains(err.Error(), `figure 2`) || !strings.Contains(err.Error(), `"cdf"`) {
		t.Errorf("Write with kind cdf: error %v, want one naming figure 2 and \"cdf\"", err)
	}
}

func TestExtremeLogRange(t *testing.T) {
	f := &Figure{LogX: true, LogY: true, Series: []Series{
		{Name: "wide", X: []float64{1e-299, 1, 1e299}, Y: []float64{1e-299, 1e299, 5e-324}},
	}}
	var b bytes.Buffer
	if err := SVG(&b, f, 400, 300); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
		t.Fatalf("non-finite coordinates:\n%s", s)
	}
	_, series, texts := svgStats(t, b.Bytes())
	if len(series) != 1 {
		t.Errorf("%d series, want 1", len(series))
	}
	if !strings.Contains(strings.Join(texts, "|"), "10⁰") {
		t.Errorf("no 10⁰ tick on a 1e-299..1e299 log axis: %q", texts)
	}
}

func TestPanelsShareAxesAndLegend(t *testing.T) {
	pts := []float64{0, 1, 2}
	f := &Figure{
		Title: "panels", YLabel: "load", HLines: []HLine{{Label: "cap", Y: 50}},
		Series: []Series{{Name: "mean", X: pts, Y: []float64{5, 5, 5}}},
		Panels: []Figure{
			{Title: "small", Series: []Series{{Name: "s1", X: pts, Y: []float64{1, 2, 3}}, {Name: "s2", X: pts, Y: []float64{2, 3, 4}}}},
			{Title: "large", Series: []Series{{Name: "s1", X: pts, Y: []float64{10, 100, 60}}}},
		},
	}
	var b bytes.Buffer
	if err := SVG(&b, f, 900, 400); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	_, series, texts := svgStats(t, b.Bytes())
	if got := strings.Count(doc, `<g class="panel">`); got != 3 {
		t.Errorf("%d panels, want 3 (parent series first)", got)
	}
	if strings.Join(series, ",") != "mean,s1,s2,s1" {
		t.Errorf("series %q, want mean,s1,s2,s1", series)
	}
	// One legend entry per name, s1 with the same colour in both panels.
	legend := doc[strings.Index(doc, `<g class="legend">`):]
	legend = legend[:strings.Index(legend, "</g>")]
	if got := strings.Count(legend, "<text"); got != 3 {
		t.Errorf("%d legend entries, want 3", got)
	}
	first := strokeOf(t, doc, "s1")
	last := doc[strings.LastIndex(doc, `data-name="s1"`)-len(`class="series" `):]
	if strokeOf(t, last, "s1") != first {
		t.Error("s1 has different colours in two panels")
	}
	// Shared y axis: every panel reaches the top tick of the largest one.
	count := map[string]int{}
	for _, tx := range texts {
		count[tx]++
	}
	if count["100"] != 3 {
		t.Errorf("tick 100 appears %d times, want once per panel (3): %q", count["100"], texts)
	}
	if count["cap"] != 3 {
		t.Errorf("reference line label appears %d times, want 3", count["cap"])
	}
	if count["load"] != 2 { // first column of a 2-row grid only
		t.Logf("texts: %q", texts)
		t.Errorf("y label appears %d times, want 2 (first column of each row)", count["load"])
	}
}

// TestFrontierColours: in a scatter figure a Connect series of its own
// (the frontier of all points) is grey; one that shares its name with a
// series of points (one method's frontier among several) takes their
// colour.
func TestFrontierColours(t *testing.T) {
	fig := &Figure{Kind: KindScatter, Series: []Series{
		{Name: "hpa", X: []float64{1, 2}, Y: []float64{3, 2}},
		{Name: "hpa", X: []float64{1, 2}, Y: []float64{3, 2}, Connect: true},
		{Name: "frontier", X: []float64{1, 2}, Y: []float64{3, 2}, Connect: true},
	}}
	var b bytes.Buffer
	if err := SVG(&b, fig, 400, 300); err != nil {
		t.Fatal(err)
	}
	lines := regexp.MustCompile(`<path class="series" data-name="([^"]+)"[^>]*stroke="([^"]+)"`).FindAllStringSubmatch(b.String(), -1)
	got := map[string]string{}
	for _, m := range lines {
		got[m[1]] = m[2]
	}
	if got["hpa"] != palette[0] || got["frontier"] != "#666" {
		t.Fatalf("frontier strokes %v, want hpa's in %s and the lone one grey", got, palette[0])
	}
}
