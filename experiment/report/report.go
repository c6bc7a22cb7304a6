// Package report writes self-contained HTML reports with inline SVG plots for
// Shoal simulation and experiment runs.
//
// A report needs no JavaScript, loads no external resource and uses the
// system font stack, so it can be archived, mailed and printed as one file.
// Output is deterministic: the same Report yields the same bytes.
//
// Usage:
//
//	r := &report.Report{Title: "LB comparison", Meta: []report.KV{{Key: "seed", Value: "1"}}}
//	r.Tables = append(r.Tables, report.Table{Caption: "p99 latency (ms)", Columns: cols, Rows: rows})
//	r.Figures = append(r.Figures, report.Figure{Title: "latency CDF", Kind: report.KindStep, Series: s})
//	if err := report.WriteFile("report.html", r); err != nil { ... }
//
// Figures are line plots, step plots (empirical CDFs, see ECDF), grouped
// bars or scatter plots with intervals on both axes (a quality-cost
// frontier; Report.Summary puts such figures first), optionally as small
// multiples (Figure.Panels) with shared axes. Axes
// get 1-2-5 ticks (decades on log axes); series get Okabe–Ito colours, then
// dashed and dotted variants; a name keeps its colour across the figures of
// a report. Series.Lo/Hi add confidence bands (error bars on bars),
// Figure.HLines reference lines such as an SLO. Series longer than about
// two points per pixel column are reduced to the first, lowest, highest
// and last point of each column, so files stay small and spikes survive.
// MeanCI and Best help fill Table cells and Table.Highlight.
//
// SVG renders one figure as a standalone SVG document for use elsewhere;
// DefaultSize is the size Write uses.
package report

// Report is everything one run of `shoal sim` or `shoal experiment` shows.
type Report struct {
	// Title is the page title and top heading.
	Title string
	// Subtitle is shown under the title, e.g. the scenario description.
	Subtitle string
	// Meta lists run provenance in the given order: scenario, seeds, root
	// seed, horizon, shoal version, command line, ...
	Meta []KV
	// Summary figures open the report, before the run's details: the
	// answer a reader came for (which policy is best at what cost). Their
	// captions carry the one-sentence verdict.
	Summary []Figure
	// Tables are shown in order, before the figures.
	Tables []Table
	// Figures are shown in order after the tables.
	Figures []Figure
	// Notes are warnings shown prominently near the top, e.g. a failed
	// Little's-law check.
	Notes []string
}

// KV is one key/value line of report metadata.
type KV struct{ Key, Value string }

// Table is a table of preformatted cells.
type Table struct {
	// Caption is shown above the table.
	Caption string
	// Columns are the header cells.
	Columns []string
	// Rows are preformatted cells, e.g. "1.234 ± 0.012". Rows shorter than
	// Columns are padded with empty cells.
	Rows [][]string
	// Highlight optionally gives, per column, the index of the row whose
	// cell is shown in bold (the best value); -1 means none. It may be
	// shorter than Columns; out-of-range indices are ignored.
	Highlight []int
	// Collapsed shows the table folded under its caption until the reader
	// opens it (an HTML details element), for detail most readers skip.
	Collapsed bool
}

// Figure kinds.
const (
	// KindLine draws each series as a polyline through its points (default).
	KindLine = "line"
	// KindStep draws each series as a right-continuous step function, as for
	// an empirical CDF: the value Y[i] holds from X[i] up to X[i+1].
	KindStep = "step"
	// KindBar draws grouped bars: every series contributes one bar per X
	// value (X values are category positions, usually 0,1,2,...).
	KindBar = "bar"
	// KindScatter draws each point as a marker with its intervals on both
	// axes (Series.Lo/Hi and XLo/XHi): one policy's quality against its
	// cost, say. A series with Connect set is drawn as a line instead.
	KindScatter = "scatter"
)

// Figure is one plot, or a grid of small multiples when Panels is set.
type Figure struct {
	// Title is shown above the plot; XLabel and YLabel label the axes and
	// should state units, e.g. "time (s)".
	Title, XLabel, YLabel string
	// Kind is KindLine (the default when empty), KindStep, KindBar or
	// KindScatter.
	Kind string
	// LogX and LogY select base-10 logarithmic axes; non-positive values
	// (and positive ones below 1e-300) are then skipped. LogX is ignored
	// for bar figures.
	LogX, LogY bool
	// Series are the data drawn in this plot.
	Series []Series
	// Panels are optional small multiples (e.g. load per server over time,
	// one panel per policy), drawn in a grid below the figure title with
	// shared axis ranges and one legend; each panel's Title labels it.
	// Panels inherit Kind, LogX, LogY, XLabel, YLabel, Categories and the
	// ranges from the parent when their own are empty/false/zero, and draw
	// the parent's HLines besides their own. The parent's own Series, if
	// any, form a first, untitled panel. Panels of panels are ignored.
	Panels []Figure
	// Categories optionally names the X positions of a bar figure: bar
	// group i at X == i is labelled Categories[i].
	Categories []string
	// XRange and YRange optionally fix an axis to {min, max} in data units
	// (for example YRange {0, 1} for a utilisation); data outside is
	// clipped. The zero value, or any range that is not finite and
	// increasing (and positive on a log axis), means automatic: the data
	// range, widened to nice ticks on the y axis. Panels use their own
	// range when set, else the parent's. XRange is ignored for bars.
	XRange, YRange [2]float64
	// Caption is an optional sentence shown under the figure in the HTML
	// report (not part of the SVG), e.g. what the shaded bands mean.
	Caption string
	// HLines are optional horizontal reference lines, e.g. a latency SLO or
	// a capacity, drawn dashed across every panel and labelled.
	HLines []HLine
}

// HLine is a horizontal reference line at Y (in the figure's y units).
type HLine struct {
	Label string
	Y     float64
}

// Series is one named sequence of points. X and Y must have the same
// length; extra values of the longer slice are ignored. Points with a NaN or
// infinite coordinate (or one beyond ±1e300) are skipped. Series with the same Name share one
// colour and one legend entry across the panels of a figure.
type Series struct {
	Name string
	X, Y []float64
	// Lo and Hi optionally bound Y at each point, e.g. a 95% confidence
	// interval over seeds: drawn as a shaded band for line and step
	// figures and as error bars for bar figures. Either may be nil; a
	// point's bound is used only when both Lo[i] and Hi[i] exist and are
	// finite (and positive on a log y axis).
	Lo, Hi []float64
	// XLo and XHi bound X at each point the same way, drawn as horizontal
	// error bars in scatter figures (ignored by the other kinds).
	XLo, XHi []float64
	// Scatter figures only: Hollow draws the markers as rings (points off a
	// frontier, say), Connect draws a line through the points and no
	// markers (the frontier itself), and Label writes the series name
	// beside its points where there is room, followed by Note.
	Hollow, Connect, Label bool
	Note                   string
	// Group, when set, stands for Name in the colours and the legend:
	// the points of one policy at several settings (hpa:target=30, ...)
	// share a colour and an entry, and a Connect series named as the
	// group is their frontier. Labels still show each Name.
	Group string
}
