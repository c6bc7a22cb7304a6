package report

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// palette is the Okabe–Ito colour-blind-safe palette in the order series
// use it. Series beyond len(palette) reuse the colours with dashed, then
// dotted lines (lighter fills for bars).
var palette = [...]string{
	"#0072B2", // blue
	"#E69F00", // orange
	"#009E73", // bluish green
	"#D55E00", // vermillion
	"#CC79A7", // reddish purple
	"#56B4E9", // sky blue
	"#000000", // black
	"#F0E442", // yellow
}

// dashes are the line dash patterns of successive palette cycles.
var dashes = [...]string{"", "6 3", "1.5 2.5"}

// barOpacity are the bar fill opacities of successive palette cycles.
var barOpacity = [...]string{"1", "0.55", "0.3"}

// fontStack is the system font stack used by SVG text and HTML.
const fontStack = `system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, 'Noto Sans', 'DejaVu Sans', 'Liberation Sans', sans-serif`

// Layout sizes in pixels.
const (
	figPad        = 10.0 // outer padding of a figure
	titleSize     = 15.0 // figure title font size
	titleBand     = 28.0 // vertical space taken by the figure title
	panelTitle    = 12.0 // panel title font size
	panelBand     = 18.0 // vertical space taken by a panel title
	tickSize      = 11.0 // tick label font size
	labelSize     = 12.0 // axis label font size
	legendSize    = 12.0 // legend font size
	legendRow     = 18.0 // legend row height
	tickLen       = 4.0  // tick mark length
	cellGap       = 14.0 // gap between small multiples
	maxLegendName = 48   // legend names are cut to this many runes
	maxPanelCols  = 4    // small multiples per row at most
	minPanelWidth = 300  // small multiples are at least this wide
)

// DefaultSize returns the width and height in pixels the HTML report uses
// for f: 960 wide; about 400 high for a single plot, 260 per row of small
// multiples, plus title and legend.
func DefaultSize(f *Figure) (width, height int) {
	const w = 960.0
	panels, legend := resolve(f, nil)
	_, rows := grid(len(panels), w-2*figPad)
	cellH := 380.0
	if len(f.Panels) > 0 {
		cellH = 260
	}
	h := 2*figPad + float64(rows)*cellH + float64(rows-1)*cellGap
	if f.Title != "" {
		h += titleBand
	}
	h += legendHeight(legend, w-2*figPad)
	return int(w), int(math.Ceil(h))
}

// SVG writes f as a standalone SVG document (with XML declaration) of
// width x height pixels to w. All text is XML-escaped; very long series are
// downsampled to a few points per pixel column; NaN and infinite points,
// and non-positive values on log axes, are skipped.
func SVG(w io.Writer, f *Figure, width, height int) error {
	if f == nil {
		return fmt.Errorf("rendering svg: nil figure")
	}
	if width < 50 || height < 50 {
		return fmt.Errorf("rendering svg %q: size %dx%d too small, need at least 50x50", f.Title, width, height)
	}
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	if err := checkKinds(f); err != nil {
		return fmt.Errorf("rendering svg: %w", err)
	}
	render(&b, f, float64(width), float64(height), nil, "")
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("writing svg %q: %w", f.Title, err)
	}
	return nil
}

// panel is one resolved plot of a figure, with inherited settings.
type panel struct {
	title          string
	kind           string
	logX, logY     bool
	xLabel, yLabel string
	categories     []string
	series         []Series
	hlines         []HLine
	xRange, yRange [2]float64 // used when fixedX, fixedY
	fixedX, fixedY bool
	clipID         string   // id of the clip path when an axis is fixed
	names          []string // display names
	styles         []int    // style index per series
}

// legendEntry is one distinct series name of a figure.
type legendEntry struct {
	name  string
	style int
	bar   bool
	// marker and hollow: a scatter series, drawn as a (hollow) dot;
	// frontier: a scatter series drawn as a line (frontierStroke).
	marker, hollow, frontier bool
	empty                    bool // no drawable point in any panel
}

// resolve flattens f into panels (f itself when it has no Panels; its own
// Series, if any, as a first untitled panel otherwise) and assigns one
// style per distinct series name: the style fixed[name] when given (to keep
// a name's colour across the figures of a report), otherwise the lowest
// style not taken in this figure, in order of first appearance.
func resolve(f *Figure, fixed map[string]int) ([]panel, []legendEntry) {
	inherit := func(p *Figure, title string) panel {
		q := panel{
			title: title, kind: p.Kind, logX: p.LogX || f.LogX, logY: p.LogY || f.LogY,
			xLabel: p.XLabel, yLabel: p.YLabel, categories: p.Categories, series: p.Series,
			hlines: p.HLines,
		}
		if p != f {
			q.hlines = append(slices.Clip(f.HLines), p.HLines...)
		}
		if q.kind == "" {
			q.kind = f.Kind
		}
		if q.kind != KindStep && q.kind != KindBar && q.kind != KindScatter {
			q.kind = KindLine
		}
		if q.xLabel == "" {
			q.xLabel = f.XLabel
		}
		if q.yLabel == "" {
			q.yLabel = f.YLabel
		}
		if len(q.categories) == 0 {
			q.categories = f.Categories
		}
		if q.kind == KindBar {
			q.logX = false
		}
		q.xRange, q.fixedX = p.XRange, validRange(p.XRange, q.logX)
		if !q.fixedX {
			q.xRange, q.fixedX = f.XRange, validRange(f.XRange, q.logX)
		}
		q.yRange, q.fixedY = p.YRange, validRange(p.YRange, q.logY)
		if !q.fixedY {
			q.yRange, q.fixedY = f.YRange, validRange(f.YRange, q.logY)
		}
		if q.kind == KindBar {
			q.fixedX = false
		}
		return q
	}
	var panels []panel
	if len(f.Panels) == 0 {
		panels = append(panels, inherit(f, ""))
	} else {
		if len(f.Series) > 0 {
			panels = append(panels, inherit(&Figure{Series: f.Series}, ""))
		}
		for i := range f.Panels {
			panels = append(panels, inherit(&f.Panels[i], f.Panels[i].Title))
		}
	}
	var legend []legendEntry
	index := map[string]int{}
	named := false
	for pi := range panels {
		p := &panels[pi]
		p.names = make([]string, len(p.series))
		p.styles = make([]int, len(p.series))
		for si, s := range p.series {
			name := cmp.Or(s.Group, s.Name)
			if name != "" {
				named = true
			} else {
				name = "series " + strconv.Itoa(si+1)
			}
			k, ok := index[name]
			if !ok {
				k = len(legend)
				index[name] = k
				scatter := p.kind == KindScatter
				legend = append(legend, legendEntry{name: name, bar: p.kind == KindBar,
					marker: scatter && !s.Connect, hollow: s.Hollow, frontier: scatter && s.Connect, empty: true})
			}
			if countValid(p, &s) > 0 {
				legend[k].empty = false
			}
			p.names[si], p.styles[si] = name, k // entry index for now
		}
	}
	taken := map[int]bool{}
	for _, e := range legend {
		if st, ok := fixed[e.name]; ok {
			taken[st] = true
		}
	}
	next := 0
	for k := range legend {
		if st, ok := fixed[legend[k].name]; ok {
			legend[k].style = st
			continue
		}
		for taken[next] {
			next++
		}
		legend[k].style = next
		taken[next] = true
	}
	for pi := range panels {
		for si, k := range panels[pi].styles {
			panels[pi].styles[si] = legend[k].style
		}
	}
	if !named {
		legend = nil
	}
	return panels, legend
}

// maxMagnitude is the largest absolute value drawn; larger values are
// treated like infinities, so axis arithmetic cannot overflow.
const maxMagnitude = 1e300

// finite reports whether v is a drawable number.
func finite(v float64) bool { return v >= -maxMagnitude && v <= maxMagnitude }

// validRange reports whether r is a usable fixed axis range.
func validRange(r [2]float64, log bool) bool {
	return finite(r[0]) && finite(r[1]) && r[0] < r[1] && (!log || r[0] >= minLogValue)
}

// checkKinds reports an unknown figure kind in f or its panels.
func checkKinds(f *Figure) error {
	for _, k := range append([]string{f.Kind}, panelKinds(f)...) {
		switch k {
		case "", KindLine, KindStep, KindBar, KindScatter:
		default:
			return fmt.Errorf("figure %q: unknown kind %q, want %q, %q, %q or %q", f.Title, k, KindLine, KindStep, KindBar, KindScatter)
		}
	}
	return nil
}

func panelKinds(f *Figure) []string {
	var ks []string
	for _, p := range f.Panels {
		ks = append(ks, p.Kind)
	}
	return ks
}

// minLogValue is the smallest value drawn on a log axis; smaller positive
// values are skipped like non-positive ones, so log arithmetic stays in
// normal floating-point range.
const minLogValue = 1e-300

// validPoint reports whether (x, y) can be drawn in p.
func validPoint(p *panel, x, y float64) bool {
	if !finite(x) || !finite(y) {
		return false
	}
	if p.logX && x < minLogValue || p.logY && y < minLogValue {
		return false
	}
	return true
}

// countValid returns the number of drawable points of s in p.
func countValid(p *panel, s *Series) int {
	n := 0
	for i := range min(len(s.X), len(s.Y)) {
		if validPoint(p, s.X[i], s.Y[i]) {
			n++
		}
	}
	return n
}

// span is a data range; n counts the values added.
type span struct {
	lo, hi float64
	n      int
}

func (r *span) add(v float64) {
	if r.n == 0 || v < r.lo {
		r.lo = v
	}
	if r.n == 0 || v > r.hi {
		r.hi = v
	}
	r.n++
}

func (r *span) union(o span) {
	if o.n > 0 {
		r.add(o.lo)
		r.add(o.hi)
		r.n += o.n - 2
	}
}

// bandAt returns the bounds of point i of s when both exist and can be
// drawn in p.
func bandAt(p *panel, s *Series, i int) (lo, hi float64, ok bool) {
	if i >= len(s.Lo) || i >= len(s.Hi) {
		return 0, 0, false
	}
	lo, hi = s.Lo[i], s.Hi[i]
	if !validPoint(p, s.X[i], lo) || !validPoint(p, s.X[i], hi) {
		return 0, 0, false
	}
	return lo, hi, true
}

// xBandAt returns the x bounds of point i of s when both exist and can
// be drawn in p.
func xBandAt(p *panel, s *Series, i int) (lo, hi float64, ok bool) {
	if i >= len(s.XLo) || i >= len(s.XHi) {
		return 0, 0, false
	}
	lo, hi = s.XLo[i], s.XHi[i]
	if !validPoint(p, lo, s.Y[i]) || !validPoint(p, hi, s.Y[i]) {
		return 0, 0, false
	}
	return lo, hi, true
}

// ranges returns the x and y data ranges of p (including bands and
// reference lines) and, for bar panels, the sorted distinct x values. With
// a fixed x range only the points inside it count, so the y axis fits the
// zoomed-in data.
func ranges(p *panel) (xr, yr span, cats []float64) {
	for _, s := range p.series {
		for i := range min(len(s.X), len(s.Y)) {
			x, y := s.X[i], s.Y[i]
			if !validPoint(p, x, y) || p.fixedX && (x < p.xRange[0] || x > p.xRange[1]) {
				continue
			}
			xr.add(x)
			yr.add(y)
			if lo, hi, ok := bandAt(p, &s, i); ok {
				yr.add(lo)
				yr.add(hi)
			}
			if lo, hi, ok := xBandAt(p, &s, i); ok && p.kind == KindScatter {
				xr.add(lo)
				xr.add(hi)
			}
			if p.kind == KindBar {
				cats = append(cats, x)
			}
		}
	}
	for _, h := range p.hlines {
		if finite(h.Y) && (!p.logY || h.Y >= minLogValue) {
			yr.add(h.Y)
		}
	}
	if p.kind == KindBar && yr.n > 0 && !p.logY {
		yr.add(0)
	}
	slices.Sort(cats)
	return xr, yr, slices.Compact(cats)
}

// axis maps data values to pixels and carries its ticks.
type axis struct {
	log      bool
	lo, hi   float64 // data domain
	p0, p1   float64 // pixel positions of lo and hi
	major    []float64
	labels   []string
	minor    []float64
	category []float64 // bar axes: x value of each group, in order
	fixed    bool      // domain set by the caller: do not widen it
}

// pos returns the pixel position of data value v.
func (a *axis) pos(v float64) float64 {
	var t float64
	if a.log {
		t = (math.Log10(v) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo))
	} else {
		t = (v - a.lo) / (a.hi - a.lo)
	}
	return a.p0 + t*(a.p1-a.p0)
}

// domain turns a data range into a drawable domain: a default for no data,
// a widened one for a single value, a little head room on log y axes.
func domain(r span, log, padLog bool) (lo, hi float64) {
	switch {
	case r.n == 0 && log:
		return 1, 10
	case r.n == 0:
		return 0, 1
	case r.lo == r.hi && log:
		return r.lo / math.Sqrt(10), r.hi * math.Sqrt(10)
	case r.lo == r.hi:
		d := math.Abs(r.lo) / 2
		if d == 0 {
			d = 1
		}
		return r.lo - d, r.hi + d
	case log && padLog:
		// 3% of the decades spanned, computed in log space to not overflow.
		f := math.Pow(10, 0.03*(math.Log10(r.hi)-math.Log10(r.lo)))
		if lo, hi := r.lo/f, r.hi*f; lo > 0 && hi <= maxMagnitude {
			return lo, hi
		}
	}
	return r.lo, r.hi
}

// padDomain widens a scatter plot's x domain by 6% on each side, so that
// markers at the ends are whole; a linear domain of values that are all
// non-negative stays so.
func padDomain(lo, hi float64, log bool) (float64, float64) {
	if log {
		f := math.Pow(10, 0.06*(math.Log10(hi)-math.Log10(lo)))
		if l, h := lo/f, hi*f; l > 0 && h <= maxMagnitude {
			return l, h
		}
		return lo, hi
	}
	d := 0.06 * (hi - lo)
	if lo >= 0 && lo-d < 0 {
		return 0, hi + d
	}
	return lo - d, hi + d
}

// setTicks computes ticks of a for about target ticks; expand widens a
// linear domain to the enclosing ticks.
func (a *axis) setTicks(target int, expand bool) {
	a.minor = nil
	if a.log {
		major, minor, linear, s := logTicks(a.lo, a.hi, target)
		a.major, a.minor = major, minor
		if linear {
			a.labels = linearLabels(major, s)
		} else {
			a.labels = logLabels(major)
		}
		return
	}
	if expand {
		lo, hi, ticks, s := niceRange(a.lo, a.hi, target)
		a.lo, a.hi, a.major, a.labels = lo, hi, ticks, linearLabels(ticks, s)
		return
	}
	ticks, s := linearTicks(a.lo, a.hi, target)
	a.major, a.labels = ticks, linearLabels(ticks, s)
}

// textWidth estimates the rendered width in pixels of s at font size size.
func textWidth(s string, size float64) float64 {
	return float64(utf8.RuneCountInString(s)) * size * 0.6
}

// maxWidth returns the widest estimated width of labels.
func maxWidth(labels []string, size float64) float64 {
	w := 0.0
	for _, l := range labels {
		w = math.Max(w, textWidth(l, size))
	}
	return w
}

// cut shortens s to at most n runes, ending it with an ellipsis.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-1, 1)]) + "…"
}

// fitText cuts s so that it fits in width pixels at font size size.
func fitText(s string, size, width float64) string {
	return cut(s, max(int(width/(size*0.6)), 4))
}

// grid returns the number of columns and rows for n small multiples in
// the given width.
func grid(n int, width float64) (cols, rows int) {
	if n <= 1 {
		return 1, 1
	}
	cols = min(n, maxPanelCols, max(1, int(width/minPanelWidth)))
	rows = (n + cols - 1) / cols
	// Balance the rows: 4 panels in 2x2 rather than 3+1.
	cols = (n + rows - 1) / rows
	return cols, rows
}

// legendLayout flows legend entries into rows of the given width and
// returns each entry's x offset and row.
func legendLayout(legend []legendEntry, width float64) (xs []float64, rows []int) {
	x, row := 0.0, 0
	for _, e := range legend {
		w := 26 + textWidth(legendName(e), legendSize) + 16
		if x > 0 && x+w > width {
			x, row = 0, row+1
		}
		xs = append(xs, x)
		rows = append(rows, row)
		x += w
	}
	return xs, rows
}

// legendName is the text shown for a legend entry.
func legendName(e legendEntry) string {
	n := cut(e.name, maxLegendName)
	if e.empty {
		n += " (no data)"
	}
	return n
}

// legendHeight is the vertical space the legend takes, 0 without legend.
func legendHeight(legend []legendEntry, width float64) float64 {
	if len(legend) == 0 {
		return 0
	}
	_, rows := legendLayout(legend, width)
	return float64(rows[len(rows)-1]+1)*legendRow + 8
}

// svgWriter accumulates SVG markup.
type svgWriter struct{ b *bytes.Buffer }

// num formats a pixel coordinate with one decimal, without "-0.0".
func num(v float64) string {
	v = math.Round(v*10) / 10
	if v == 0 {
		v = 0
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// crisp snaps a coordinate to the middle of a pixel so 1px lines are sharp.
func crisp(v float64) string { return num(math.Floor(v) + 0.5) }

// esc writes s XML-escaped.
func (w svgWriter) esc(s string) {
	_ = xml.EscapeText(w.b, []byte(s)) // writes to a bytes.Buffer cannot fail
}

func (w svgWriter) str(parts ...string) {
	for _, p := range parts {
		w.b.WriteString(p)
	}
}

// text writes a <text> element; extra holds further attributes.
func (w svgWriter) text(x, y float64, anchor string, size float64, extra, s string) {
	w.str(`<text x="`, num(x), `" y="`, num(y), `"`)
	if anchor != "" && anchor != "start" {
		w.str(` text-anchor="`, anchor, `"`)
	}
	w.str(` font-size="`, num(size), `"`, extra, `>`)
	w.esc(s)
	w.str("</text>\n")
}

// render writes the <svg> element for f at width x height pixels; fixed
// optionally pins the styles of series names (see resolve); idPrefix makes
// clip-path ids unique within an HTML page.
func render(b *bytes.Buffer, f *Figure, width, height float64, fixed map[string]int, idPrefix string) {
	w := svgWriter{b}
	panels, legend := resolve(f, fixed)
	label := f.Title
	if label == "" {
		label = "figure"
	}
	w.str(`<svg xmlns="http://www.w3.org/2000/svg" width="`, num(width), `" height="`, num(height),
		`" viewBox="0 0 `, num(width), ` `, num(height), `" font-family="`, fontStack, `" role="img" aria-label="`)
	w.esc(label)
	w.str("\">\n<title>")
	w.esc(label)
	w.str("</title>\n")
	w.str(`<rect width="100%" height="100%" fill="#ffffff"/>` + "\n")

	top := figPad
	if f.Title != "" {
		w.text(figPad, figPad+titleSize, "", titleSize, ` font-weight="bold" fill="#111"`, fitText(f.Title, titleSize, width-2*figPad))
		top += titleBand
	}
	innerW := width - 2*figPad
	legH := legendHeight(legend, innerW)
	bottom := height - figPad - legH
	drawLegend(w, legend, figPad, bottom+8, innerW)

	// Shared ranges: x over panels of the same bar-ness and x scale, y over
	// panels of the same y scale.
	type xKey struct{ bar, log bool }
	xs := map[xKey]span{}
	ys := map[bool]span{}
	cats := map[bool][]float64{} // by logY, for bar panels
	for i := range panels {
		p := &panels[i]
		xr, yr, c := ranges(p)
		k := xKey{p.kind == KindBar, p.logX}
		u := xs[k]
		u.union(xr)
		xs[k] = u
		v := ys[p.logY]
		v.union(yr)
		ys[p.logY] = v
		if p.kind == KindBar {
			cats[false] = append(cats[false], c...)
		}
	}
	allCats := slices.Compact(slices.Sorted(slices.Values(cats[false])))

	anyTitle, anyXLabel, anyYLabel := false, false, false
	for _, p := range panels {
		anyTitle = anyTitle || p.title != ""
		anyXLabel = anyXLabel || p.xLabel != ""
		anyYLabel = anyYLabel || p.yLabel != ""
	}
	cols, rows := grid(len(panels), innerW)
	gridH := bottom - top
	cellW := (innerW - float64(cols-1)*cellGap) / float64(cols)
	cellH := (gridH - float64(rows-1)*cellGap) / float64(rows)
	for i := range panels {
		p := &panels[i]
		r, c := i/cols, i%cols
		cx := figPad + float64(c)*(cellW+cellGap)
		cy := top + float64(r)*(cellH+cellGap)
		ax := axis{log: p.logX}
		ay := axis{log: p.logY}
		ax.lo, ax.hi = domain(xs[xKey{p.kind == KindBar, p.logX}], p.logX, false)
		if x := xs[xKey{false, p.logX}]; p.kind == KindScatter && x.n > 0 && x.lo == x.hi && x.lo > 0 {
			ax.lo, ax.hi = 0.9*x.lo, 1.1*x.lo // one value: a narrow axis around it
		} else if p.kind == KindScatter {
			ax.lo, ax.hi = padDomain(ax.lo, ax.hi, p.logX)
		}
		ay.lo, ay.hi = domain(ys[p.logY], p.logY, true)
		if p.fixedX {
			ax.lo, ax.hi, ax.fixed = p.xRange[0], p.xRange[1], true
		}
		if p.fixedY {
			ay.lo, ay.hi, ay.fixed = p.yRange[0], p.yRange[1], true
		}
		if p.fixedX || p.fixedY {
			p.clipID = idPrefix + "clip" + strconv.Itoa(i+1)
		}
		if p.kind == KindBar {
			ax.category = allCats
		}
		// Axis labels only on the outer panels: the first column and the
		// lowest panel of every column.
		showX, showY := i+cols >= len(panels), c == 0
		drawPanel(w, p, &ax, &ay, cx, cy, cellW, cellH, anyTitle, anyXLabel, anyYLabel, showX, showY)
	}
	w.str("</svg>\n")
}

// drawLegend writes the legend entries flowed into rows starting at (x, y).
func drawLegend(w svgWriter, legend []legendEntry, x, y, width float64) {
	if len(legend) == 0 {
		return
	}
	offs, rows := legendLayout(legend, width)
	w.str(`<g class="legend">` + "\n")
	for i, e := range legend {
		lx := x + offs[i]
		ly := y + float64(rows[i])*legendRow + legendRow/2
		color := palette[e.style%len(palette)]
		cycle := (e.style / len(palette)) % len(dashes)
		switch {
		case e.bar:
			w.str(`<rect x="`, num(lx+6), `" y="`, num(ly-5), `" width="12" height="10" fill="`, color,
				`" fill-opacity="`, barOpacity[cycle], `" stroke="`, color, `"/>`+"\n")
		case e.marker:
			marker(w, lx+11, ly, color, e.hollow)
		case e.frontier:
			w.str(`<path d="M`, num(lx), ` `, num(ly), `h22"`, frontierStroke("#666"), `/>`+"\n")
		default:
			w.str(`<path d="M`, num(lx), ` `, num(ly), `h22" stroke="`, color, `" stroke-width="2.2"`)
			if d := dashes[cycle]; d != "" {
				w.str(` stroke-dasharray="`, d, `"`)
			}
			w.str(` fill="none"/>` + "\n")
		}
		fill := ` fill="#222"`
		if e.empty {
			fill = ` fill="#888"`
		}
		w.text(lx+26, ly+4, "", legendSize, fill, legendName(e))
	}
	w.str("</g>\n")
}

// catLabel returns the label of bar group x in p.
func catLabel(p *panel, x float64) string {
	if x == math.Trunc(x) && x >= 0 && x < float64(len(p.categories)) {
		return p.categories[int(x)]
	}
	return strconv.FormatFloat(x, 'g', 6, 64)
}

// drawPanel lays out and draws one plot into the cell at (cx, cy) of size
// cw x ch. The any* flags reserve the same space in every cell so plots of
// a grid line up; showX and showY say whether to draw the axis labels.
func drawPanel(w svgWriter, p *panel, ax, ay *axis, cx, cy, cw, ch float64, anyTitle, anyXLabel, anyYLabel, showX, showY bool) {
	top := cy + 8
	if anyTitle {
		top += panelBand
	}
	bottomBand := tickLen + 4 + tickSize + 2
	if anyXLabel {
		bottomBand += labelSize + 8
	}
	// Bar category labels: rotate when they do not fit side by side.
	var catLabels []string
	rotate := false
	if p.kind == KindBar {
		for _, x := range ax.category {
			catLabels = append(catLabels, cut(catLabel(p, x), 24))
		}
		if len(catLabels) > 0 {
			slot := (cw - 70) / float64(len(catLabels))
			if maxWidth(catLabels, tickSize)+6 > slot {
				rotate = true
				bottomBand += math.Min(maxWidth(catLabels, tickSize)*0.5, 110)
			}
		}
	}
	plotBottom := cy + ch - bottomBand
	plotH := plotBottom - top
	if plotH < 10 {
		plotH = 10
		plotBottom = top + plotH
	}
	ay.p0, ay.p1 = plotBottom, top
	ay.setTicks(clampInt(int(plotH/50), 2, 10), !ay.log && !ay.fixed)

	left := cx + maxWidth(ay.labels, tickSize) + tickLen + 6
	if anyYLabel {
		left += labelSize + 8
	}
	right := cx + cw - 14
	if right-left < 10 {
		right = left + 10
	}
	plotW := right - left
	ax.p0, ax.p1 = left, right
	if p.kind != KindBar {
		for target := clampInt(int(plotW/60), 2, 10); ; target-- {
			ax.setTicks(target, false)
			if target <= 2 || labelsFit(ax) {
				break
			}
		}
	}

	// Grid and frame.
	w.str(`<g class="panel">` + "\n")
	w.str(`<g stroke="#e8e8e8" stroke-width="1" fill="none">` + "\n")
	for _, v := range ay.minor {
		y := crisp(ay.pos(v))
		w.str(`<path d="M`, num(left), ` `, y, `H`, num(right), `" stroke="#f3f3f3"/>`+"\n")
	}
	for _, v := range ax.minor {
		x := crisp(ax.pos(v))
		w.str(`<path d="M`, x, ` `, num(top), `V`, num(plotBottom), `" stroke="#f3f3f3"/>`+"\n")
	}
	for _, v := range ay.major {
		w.str(`<path d="M`, num(left), ` `, crisp(ay.pos(v)), `H`, num(right), `"/>`+"\n")
	}
	if p.kind != KindBar {
		for _, v := range ax.major {
			w.str(`<path d="M`, crisp(ax.pos(v)), ` `, num(top), `V`, num(plotBottom), `"/>`+"\n")
		}
	}
	w.str("</g>\n")
	w.str(`<rect x="`, crisp(left), `" y="`, crisp(top), `" width="`, num(math.Floor(right)-math.Floor(left)),
		`" height="`, num(math.Floor(plotBottom)-math.Floor(top)), `" fill="none" stroke="#9a9a9a"/>`+"\n")

	// Ticks and labels.
	w.str(`<g fill="#333">` + "\n")
	for i, v := range ay.major {
		y := ay.pos(v)
		w.str(`<path d="M`, num(left-tickLen), ` `, crisp(y), `h`, num(tickLen), `" stroke="#9a9a9a"/>`+"\n")
		w.text(left-tickLen-3, y+tickSize*0.35, "end", tickSize, "", ay.labels[i])
	}
	labelY := plotBottom + tickLen + 3 + tickSize*0.85
	if p.kind == KindBar {
		n := float64(len(ax.category))
		for i, l := range catLabels {
			x := left + (float64(i)+0.5)*plotW/n
			w.str(`<path d="M`, crisp(x), ` `, num(plotBottom), `v`, num(tickLen), `" stroke="#9a9a9a"/>`+"\n")
			if rotate {
				w.str(`<text transform="translate(`, num(x+3), ` `, num(plotBottom+tickLen+4),
					`) rotate(-30)" text-anchor="end" dominant-baseline="hanging" font-size="`, num(tickSize), `">`)
				w.esc(l)
				w.str("</text>\n")
			} else {
				w.text(x, labelY, "middle", tickSize, "", l)
			}
		}
	} else {
		for i, v := range ax.major {
			x := ax.pos(v)
			w.str(`<path d="M`, crisp(x), ` `, num(plotBottom), `v`, num(tickLen), `" stroke="#9a9a9a"/>`+"\n")
			// Keep the label inside the cell.
			half := textWidth(ax.labels[i], tickSize) / 2
			lx := math.Min(math.Max(x, cx+half), cx+cw-half)
			w.text(lx, labelY, "middle", tickSize, "", ax.labels[i])
		}
	}
	w.str("</g>\n")

	// Titles and axis labels.
	if p.title != "" {
		w.text(left, cy+panelTitle+2, "", panelTitle, ` font-weight="bold" fill="#222"`, fitText(p.title, panelTitle, cx+cw-left))
	}
	if p.xLabel != "" && showX {
		w.text((left+right)/2, cy+ch-4, "middle", labelSize, ` fill="#222"`, fitText(p.xLabel, labelSize, cw))
	}
	if p.yLabel != "" && showY {
		yl := fitText(p.yLabel, labelSize, plotH+bottomBand/2)
		w.str(`<text transform="translate(`, num(cx+labelSize), ` `, num((top+plotBottom)/2),
			`) rotate(-90)" text-anchor="middle" font-size="`, num(labelSize), `" fill="#222">`)
		w.esc(yl)
		w.str("</text>\n")
	}

	// Data, clipped to the plot when an axis range is fixed.
	if p.clipID != "" {
		w.str(`<clipPath id="`, p.clipID, `"><rect x="`, num(left), `" y="`, num(top), `" width="`, num(plotW),
			`" height="`, num(plotH), `"/></clipPath>`+"\n"+`<g clip-path="url(#`, p.clipID, `)">`+"\n")
	}
	drawn := 0
	switch p.kind {
	case KindBar:
		drawn = drawBars(w, p, ax, ay, plotW)
	case KindScatter:
		drawn = drawScatter(w, p, ax, ay)
	default:
		drawn = drawLines(w, p, ax, ay, plotW)
	}
	if p.clipID != "" {
		w.str("</g>\n")
	}
	drawHLines(w, p, ay, left, right)
	if drawn == 0 {
		w.text((left+right)/2, (top+plotBottom)/2, "middle", labelSize, ` fill="#888"`, "no data")
	}
	w.str("</g>\n")
}

// drawHLines draws the reference lines of p across the plot, each with
// its label above the line at the right end.
func drawHLines(w svgWriter, p *panel, ay *axis, left, right float64) {
	for _, h := range p.hlines {
		if !finite(h.Y) || p.logY && h.Y < minLogValue || h.Y < ay.lo || h.Y > ay.hi {
			continue
		}
		y := ay.pos(h.Y)
		w.str(`<path class="hline" d="M`, num(left), ` `, num(y), `H`, num(right),
			`" stroke="#555" stroke-width="1.2" stroke-dasharray="5 4" fill="none"/>`+"\n")
		if h.Label != "" {
			w.text(right-4, y-4, "end", 10, ` fill="#333" stroke="#fff" stroke-width="3" paint-order="stroke"`,
				fitText(h.Label, 10, right-left-8))
		}
	}
}

// labelsFit reports whether the x tick labels of a do not overlap.
func labelsFit(a *axis) bool {
	for i := 1; i < len(a.major); i++ {
		d := math.Abs(a.pos(a.major[i]) - a.pos(a.major[i-1]))
		need := (textWidth(a.labels[i], tickSize)+textWidth(a.labels[i-1], tickSize))/2 + 8
		if d < need {
			return false
		}
	}
	return true
}

func clampInt(v, lo, hi int) int { return max(lo, min(v, hi)) }

// seriesStyle returns the stroke attributes of style k.
func seriesStyle(k, nSeries int) string {
	color := palette[k%len(palette)]
	width := "1.6"
	if nSeries > 8 {
		width = "1.2"
	}
	s := ` fill="none" stroke="` + color + `" stroke-width="` + width + `" stroke-linejoin="round"`
	if d := dashes[(k/len(palette))%len(dashes)]; d != "" {
		s += ` stroke-dasharray="` + d + `"`
	}
	return s
}

// drawLines draws the line or step series of p, one <path> per non-empty
// series, and returns how many were drawn.
func drawLines(w svgWriter, p *panel, ax, ay *axis, plotW float64) int {
	drawBands(w, p, ax, ay, plotW)
	drawn := 0
	var red columnReducer
	for si, s := range p.series {
		n := min(len(s.X), len(s.Y))
		reduce := float64(n) > 2*plotW
		red.x, red.y = red.x[:0], red.y[:0]
		for i := range n {
			if !validPoint(p, s.X[i], s.Y[i]) {
				continue
			}
			x, y := ax.pos(s.X[i]), ay.pos(s.Y[i])
			if reduce {
				red.add(x, y)
			} else {
				red.x, red.y = append(red.x, x), append(red.y, y)
			}
		}
		red.flush()
		px, py := red.x, red.y
		if len(px) == 0 {
			continue
		}
		drawn++
		w.str(`<path class="series" data-name="`)
		w.esc(p.names[si])
		w.str(`" d="M`, num(px[0]), ` `, num(py[0]))
		if len(px) == 1 {
			w.str(`h0" stroke-linecap="round`)
		} else if p.kind == KindStep {
			for i := 1; i < len(px); i++ {
				w.str(`H`, num(px[i]), `V`, num(py[i]))
			}
		} else {
			for i := 1; i < len(px); i++ {
				w.str(`L`, num(px[i]), ` `, num(py[i]))
			}
		}
		st := seriesStyle(p.styles[si], len(p.series))
		if len(px) == 1 {
			st = strings.Replace(st, `stroke-width="1.6"`, `stroke-width="5"`, 1)
			st = strings.Replace(st, `stroke-width="1.2"`, `stroke-width="5"`, 1)
		}
		w.str(`"`, st, "/>\n")
		if p.kind == KindLine && len(px) > 1 && len(px) <= maxMarkers {
			// Few points: mark them, so sparse measurements are not
			// mistaken for a continuous curve.
			w.str(`<path class="markers" d="`)
			for i := range px {
				w.str(`M`, num(px[i]), ` `, num(py[i]), `h0`)
			}
			w.str(`" stroke="`, palette[p.styles[si]%len(palette)], `" stroke-width="5" stroke-linecap="round" fill="none"/>`+"\n")
		}
	}
	return drawn
}

// maxMarkers is the largest number of points of a line series that still
// get point markers.
const maxMarkers = 25

// drawBands draws the Lo..Hi bands of the series of p as translucent
// areas, one <path class="band"> per series that has any.
func drawBands(w svgWriter, p *panel, ax, ay *axis, plotW float64) {
	var up, down columnReducer
	for si, s := range p.series {
		n := min(len(s.X), len(s.Y), len(s.Lo), len(s.Hi))
		reduce := float64(n) > 2*plotW
		up.x, up.y, down.x, down.y = up.x[:0], up.y[:0], down.x[:0], down.y[:0]
		for i := range n {
			if !validPoint(p, s.X[i], s.Y[i]) {
				continue
			}
			lo, hi, ok := bandAt(p, &s, i)
			if !ok {
				continue
			}
			x, yHi, yLo := ax.pos(s.X[i]), ay.pos(hi), ay.pos(lo)
			if reduce {
				up.add(x, yHi)
				down.add(x, yLo)
			} else {
				up.x, up.y = append(up.x, x), append(up.y, yHi)
				down.x, down.y = append(down.x, x), append(down.y, yLo)
			}
		}
		up.flush()
		down.flush()
		hx, hy, lx, ly := up.x, up.y, down.x, down.y
		if len(hx) < 2 || len(lx) < 2 {
			continue
		}
		w.str(`<path class="band" d="M`, num(hx[0]), ` `, num(hy[0]))
		for i := 1; i < len(hx); i++ {
			if p.kind == KindStep {
				w.str(`H`, num(hx[i]), `V`, num(hy[i]))
			} else {
				w.str(`L`, num(hx[i]), ` `, num(hy[i]))
			}
		}
		w.str(`L`, num(lx[len(lx)-1]), ` `, num(ly[len(ly)-1]))
		for i := len(lx) - 2; i >= 0; i-- {
			if p.kind == KindStep {
				// From (x[i+1], ·) down or up to the level lo[i] holds on
				// [x[i], x[i+1]), then left to x[i].
				w.str(`V`, num(ly[i]), `H`, num(lx[i]))
			} else {
				w.str(`L`, num(lx[i]), ` `, num(ly[i]))
			}
		}
		w.str(`Z" fill="`, palette[p.styles[si]%len(palette)], `" fill-opacity="0.18" stroke="none"/>`+"\n")
	}
}

// drawBars draws grouped bars, one <path> of rectangles per non-empty
// series, and returns how many were drawn.
func drawBars(w svgWriter, p *panel, ax, ay *axis, plotW float64) int {
	n := len(ax.category)
	if n == 0 || len(p.series) == 0 {
		return 0
	}
	slot := plotW / float64(n)
	barW := slot * 0.8 / float64(len(p.series))
	base := ay.p0
	if !ay.log {
		base = ay.pos(math.Max(ay.lo, math.Min(0, ay.hi)))
	}
	drawn := 0
	for si, s := range p.series {
		var d strings.Builder
		for i := range min(len(s.X), len(s.Y)) {
			x, y := s.X[i], s.Y[i]
			if !validPoint(p, x, y) {
				continue
			}
			g, ok := slices.BinarySearch(ax.category, x)
			if !ok {
				continue
			}
			x0 := ax.p0 + float64(g)*slot + slot*0.1 + float64(si)*barW
			fmt.Fprintf(&d, "M%s %sV%sH%sV%sZ", num(x0), num(base), num(ay.pos(y)), num(x0+barW), num(base))
		}
		if d.Len() == 0 {
			continue
		}
		drawn++
		k := p.styles[si]
		color := palette[k%len(palette)]
		w.str(`<path class="series" data-name="`)
		w.esc(p.names[si])
		w.str(`" d="`, d.String(), `" fill="`, color, `" fill-opacity="`, barOpacity[(k/len(palette))%len(barOpacity)],
			`" stroke="`, color, `" stroke-width="0.8"/>`+"\n")
		if e := errorBars(p, &s, si, ax, ay, slot, barW); e != "" {
			w.str(`<path class="errorbars" d="`, e, `" stroke="#222" stroke-width="1.2" fill="none"/>`+"\n")
		}
	}
	return drawn
}

// errorBars returns the path data of the Lo..Hi whiskers of bar series s.
func errorBars(p *panel, s *Series, si int, ax, ay *axis, slot, barW float64) string {
	var d strings.Builder
	capW := math.Min(barW*0.3, 6)
	for i := range min(len(s.X), len(s.Y)) {
		if !validPoint(p, s.X[i], s.Y[i]) {
			continue
		}
		lo, hi, ok := bandAt(p, s, i)
		if !ok {
			continue
		}
		g, ok := slices.BinarySearch(ax.category, s.X[i])
		if !ok {
			continue
		}
		xc := ax.p0 + float64(g)*slot + slot*0.1 + (float64(si)+0.5)*barW
		y0, y1 := ay.pos(lo), ay.pos(hi)
		fmt.Fprintf(&d, "M%s %sV%sM%s %sh%sM%s %sh%s", num(xc), num(y0), num(y1),
			num(xc-capW), num(y0), num(2*capW), num(xc-capW), num(y1), num(2*capW))
	}
	return d.String()
}

// frontierStroke is the style of a scatter figure's Connect series: a
// dashed line under the coloured points, grey for a frontier of its own,
// in the points' colour for the frontier of a series of the same name
// (one method's, among several).
func frontierStroke(color string) string {
	return ` fill="none" stroke="` + color + `" stroke-width="1.5" stroke-dasharray="6 3"`
}

// markerRadius is the radius of a scatter point's marker.
const markerRadius = 5.0

// marker draws a scatter point's dot at (x, y): filled, or a ring.
func marker(w svgWriter, x, y float64, color string, hollow bool) {
	fill := color
	if hollow {
		fill = "#ffffff"
	}
	w.str(`<circle cx="`, num(x), `" cy="`, num(y), `" r="`, num(markerRadius), `" fill="`, fill,
		`" stroke="`, color, `" stroke-width="2"/>`+"\n")
}

// drawScatter draws the series of a scatter panel: each point's intervals
// as error bars on both axes and its marker, or for a Connect series a line
// through its points; then the labels that fit. It returns how many series
// were drawn.
func drawScatter(w svgWriter, p *panel, ax, ay *axis) int {
	drawn := 0
	var labels []labelBox
	// Lines first, then rings, then dots, so that what matters is on top.
	order := make([]int, 0, len(p.series))
	for _, layer := range []func(s *Series) bool{
		func(s *Series) bool { return s.Connect },
		func(s *Series) bool { return !s.Connect && s.Hollow },
		func(s *Series) bool { return !s.Connect && !s.Hollow },
	} {
		for si := range p.series {
			if layer(&p.series[si]) {
				order = append(order, si)
			}
		}
	}
	for _, si := range order {
		s := p.series[si]
		color := palette[p.styles[si]%len(palette)]
		var xs, ys []float64
		var bars strings.Builder
		for i := range min(len(s.X), len(s.Y)) {
			if !validPoint(p, s.X[i], s.Y[i]) {
				continue
			}
			x, y := ax.pos(s.X[i]), ay.pos(s.Y[i])
			xs, ys = append(xs, x), append(ys, y)
			if lo, hi, ok := bandAt(p, &s, i); ok {
				fmt.Fprintf(&bars, "M%s %sV%sM%s %sh6M%s %sh6", num(x), num(ay.pos(lo)), num(ay.pos(hi)),
					num(x-3), num(ay.pos(lo)), num(x-3), num(ay.pos(hi)))
			}
			if lo, hi, ok := xBandAt(p, &s, i); ok {
				fmt.Fprintf(&bars, "M%s %sH%sM%s %sv6M%s %sv6", num(ax.pos(lo)), num(y), num(ax.pos(hi)),
					num(ax.pos(lo)), num(y-3), num(ax.pos(hi)), num(y-3))
			}
		}
		if len(xs) == 0 {
			continue
		}
		drawn++
		if s.Connect {
			// Steps: a point's level holds until the next point, as the
			// best attainable at each cost does along a frontier.
			w.str(`<path class="series" data-name="`)
			w.esc(p.names[si])
			w.str(`" d="M`, num(xs[0]), ` `, num(ys[0]))
			for i := 1; i < len(xs); i++ {
				w.str(`H`, num(xs[i]), `V`, num(ys[i]))
			}
			stroke := "#666"
			for oi, o := range p.series {
				if !o.Connect && p.names[oi] == p.names[si] {
					stroke = color
				}
			}
			w.str(`"`, frontierStroke(stroke), "/>\n")
			continue
		}
		if bars.Len() > 0 {
			w.str(`<path class="errorbars" d="`, bars.String(), `" stroke="`, color, `" stroke-width="1.2" fill="none"/>`+"\n")
		}
		name := cmp.Or(s.Name, p.names[si])
		w.str(`<g class="series" data-name="`)
		w.esc(name)
		w.str(`">` + "\n")
		for i := range xs {
			marker(w, xs[i], ys[i], color, s.Hollow)
		}
		w.str("</g>\n")
		if s.Label {
			for i := range xs {
				text := cut(name, 28)
				if s.Note != "" {
					text += " (" + s.Note + ")"
				}
				labels = append(labels, labelBox{x: xs[i], y: ys[i], text: text})
			}
		}
	}
	drawLabels(w, labels, ax.p0, ax.p1, ay.p1, ay.p0)
	return drawn
}

// labelBox is a point's label: the point, and the box its text takes.
type labelBox struct {
	x, y      float64
	text      string
	left, top float64
	w, h      float64
}

// labelFont is the font size of scatter point labels.
const labelFont = 11.0

// drawLabels writes each label beside its point, right of it or else left
// of it, nudged up or down to avoid the labels already placed; a label
// that finds no free place inside the plot is left out (the legend still
// names the point).
func drawLabels(w svgWriter, labels []labelBox, left, right, top, bottom float64) {
	var placed []labelBox
	free := func(b labelBox) bool {
		if b.left < left || b.left+b.w > right || b.top < top || b.top+b.h > bottom {
			return false
		}
		for _, o := range placed {
			if b.left < o.left+o.w && o.left < b.left+b.w && b.top < o.top+o.h && o.top < b.top+b.h {
				return false
			}
		}
		return true
	}
	for _, l := range labels {
		l.w, l.h = textWidth(l.text, labelFont), labelFont+2
	tries:
		for _, dy := range []float64{0, -12, 12, -24, 24} {
			for _, x := range []float64{l.x + markerRadius + 4, l.x - markerRadius - 4 - l.w} {
				b := l
				b.left, b.top = x, l.y-l.h/2+dy
				if free(b) {
					placed = append(placed, b)
					break tries
				}
			}
		}
	}
	if len(placed) == 0 {
		return
	}
	w.str(`<g class="labels" fill="#222">` + "\n")
	for _, b := range placed {
		w.text(b.left, b.top+labelFont-1, "", labelFont, ` stroke="#fff" stroke-width="3" paint-order="stroke"`, b.text)
	}
	w.str("</g>\n")
}
