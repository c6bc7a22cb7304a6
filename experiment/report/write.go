package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"os"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pageView is the data the HTML template renders.
type pageView struct {
	Title    string
	Subtitle string
	Meta     []KV
	Notes    []string
	Summary  []figureView
	Tables   []tableView
	Figures  []figureView
	Font     template.CSS
	Contents bool // list the figures at the top
}

// tableView is a Table with resolved highlighting and alignment.
type tableView struct {
	ID        string
	Caption   string
	Columns   []cellView
	Rows      [][]cellView
	Collapsed bool
}

// cellView is one table cell.
type cellView struct {
	Text  string
	Bold  bool
	Num   bool // right-aligned, tabular figures
	Label bool // the row's name (first column): kept on one line unless long
	Long  bool // a label too long for one line, which may break anywhere
}

// maxLabel is the longest row name, in runes, kept on one line.
const maxLabel = 32

// figureView is one rendered figure.
type figureView struct {
	ID      string
	Title   string
	SVG     template.HTML // produced by render, which escapes all text itself
	Caption string
}

// pageTemplate is the report page. It loads nothing from outside and
// needs no JavaScript.
var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="shoal experiment/report">
<title>{{.Title}}</title>
<style>
:root { color-scheme: light; }
body { font-family: {{.Font}}; color: #1a1a1a; background: #fff; margin: 0; line-height: 1.45; }
main { max-width: 1060px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 1.6rem; margin: 0 0 4px; }
h2 { font-size: 1.15rem; margin: 28px 0 10px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.subtitle { color: #555; margin: 0 0 12px; }
.notes { background: #fff6e0; border: 1px solid #e6b84c; border-left: 5px solid #d59100; padding: 8px 14px; margin: 16px 0; }
.notes h2 { border: 0; margin: 4px 0; font-size: 1rem; }
.notes ul { margin: 4px 0; padding-left: 20px; }
table { border-collapse: collapse; margin: 8px 0 20px; font-size: 0.9rem; }
table.data { display: block; max-width: 100%; overflow-x: auto; font-size: 0.85rem; }
td.label { white-space: nowrap; }
td.label.long { white-space: normal; overflow-wrap: anywhere; min-width: 12em; }
details.table { margin: 4px 0 8px; }
details.table > summary { cursor: pointer; font-weight: 600; padding: 4px 0; }
section.summary figure { margin-top: 4px; }
section.summary figcaption { font-size: 1rem; color: #1a1a1a; }
caption { text-align: left; font-weight: 600; padding: 4px 0 6px; white-space: nowrap; }
th, td { padding: 4px 8px; border-bottom: 1px solid #e4e4e4; text-align: left; vertical-align: top; }
thead th { border-bottom: 2px solid #888; background: #f6f6f6; }
tbody tr:nth-child(even) { background: #fafafa; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td strong { font-weight: 700; }
table.meta th { font-weight: 600; color: #444; background: none; white-space: nowrap; }
table.meta td { font-family: ui-monospace, 'DejaVu Sans Mono', 'Liberation Mono', Menlo, Consolas, monospace; font-size: 0.85rem; overflow-wrap: anywhere; }
figure { margin: 12px 0 24px; }
figure svg { max-width: 100%; height: auto; display: block; }
figcaption { color: #444; font-size: 0.9rem; margin: 4px 10px 0; }
nav.contents ol { columns: 2; margin: 8px 0; padding-left: 24px; font-size: 0.9rem; }
nav.contents a { color: #0b5394; text-decoration: none; }
nav.contents a:hover { text-decoration: underline; }
footer { color: #777; font-size: 0.8rem; margin-top: 32px; }
@media print {
  main { max-width: none; padding: 0; }
  nav.contents { display: none; }
  figure, table, .notes { break-inside: avoid; }
  details.table > summary { display: none; }
  h2 { break-after: avoid; }
}
</style>
</head>
<body>
<main>
<header>
<h1>{{.Title}}</h1>
{{- with .Subtitle}}
<p class="subtitle">{{.}}</p>
{{- end}}
</header>
{{- if .Notes}}
<section class="notes" role="note">
<h2>Notes</h2>
<ul>
{{- range .Notes}}
<li>{{.}}</li>
{{- end}}
</ul>
</section>
{{- end}}
{{- if .Summary}}
<section class="summary">
<h2>Summary</h2>
{{- range .Summary}}
{{template "figure" .}}
{{- end}}
</section>
{{- end}}
{{- if .Contents}}
<nav class="contents">
<ol>
{{- range .Figures}}
<li><a href="#{{.ID}}">{{with .Title}}{{.}}{{else}}untitled figure{{end}}</a></li>
{{- end}}
</ol>
</nav>
{{- end}}
{{- if .Meta}}
<section>
<h2>Run</h2>
<table class="meta">
<tbody>
{{- range .Meta}}
<tr><th scope="row">{{.Key}}</th><td>{{.Value}}</td></tr>
{{- end}}
</tbody>
</table>
</section>
{{- end}}
{{- if .Tables}}
<section>
<h2>Results</h2>
{{- range .Tables}}
{{- if .Collapsed}}
<details class="table">
<summary>{{.Caption}}</summary>
{{- end}}
<table class="data" id="{{.ID}}">
{{- if and .Caption (not .Collapsed)}}
<caption>{{.Caption}}</caption>
{{- end}}
<thead><tr>{{range .Columns}}<th scope="col"{{if .Num}} class="num"{{end}}>{{.Text}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr>{{range .}}<td{{if .Num}} class="num"{{else if .Long}} class="label long"{{else if .Label}} class="label"{{end}}>{{if .Bold}}<strong>{{.Text}}</strong>{{else}}{{.Text}}{{end}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
{{- if .Collapsed}}
</details>
{{- end}}
{{- end}}
</section>
{{- end}}
{{- if .Figures}}
<section>
<h2>Figures</h2>
{{- range .Figures}}
{{template "figure" .}}
{{- end}}
</section>
{{- end}}
<footer>Generated by Shoal. Self-contained: no scripts, no external resources.</footer>
</main>
</body>
</html>
{{- define "figure"}}<figure id="{{.ID}}">
{{.SVG}}
{{- with .Caption}}<figcaption>{{.}}</figcaption>
{{end -}}
</figure>
{{- end}}
`))

// minContents is the number of figures from which the report lists them
// at the top.
const minContents = 4

// Write writes r as a self-contained HTML document to w: metadata, notes,
// tables and inline SVG figures, without JavaScript or external resources.
// The output is deterministic: the same Report yields the same bytes.
func Write(w io.Writer, r *Report) error {
	if r == nil {
		return fmt.Errorf("writing report: nil report")
	}
	v := pageView{
		Title:    r.Title,
		Subtitle: r.Subtitle,
		Meta:     r.Meta,
		Notes:    r.Notes,
		Font:     template.CSS(fontStack),
		Contents: len(r.Figures) >= minContents,
	}
	shared := sharedStyles(append(slices.Clip(r.Summary), r.Figures...))
	figure := func(f *Figure, id string) (figureView, error) {
		if err := checkKinds(f); err != nil {
			return figureView{}, fmt.Errorf("writing report %q: %s: %w", r.Title, strings.Replace(id, "-", " ", 1), err)
		}
		width, height := DefaultSize(f)
		var b bytes.Buffer
		render(&b, f, float64(width), float64(height), shared, id+"-")
		return figureView{ID: id, SVG: template.HTML(b.String()), Caption: f.Caption, Title: f.Title}, nil
	}
	for i := range r.Summary {
		fv, err := figure(&r.Summary[i], fmt.Sprintf("summary-%d", i+1))
		if err != nil {
			return err
		}
		v.Summary = append(v.Summary, fv)
	}
	if v.Title == "" {
		v.Title = "Shoal report"
	}
	for i := range r.Tables {
		v.Tables = append(v.Tables, viewTable(&r.Tables[i], fmt.Sprintf("table-%d", i+1)))
	}
	for i := range r.Figures {
		fv, err := figure(&r.Figures[i], fmt.Sprintf("figure-%d", i+1))
		if err != nil {
			return err
		}
		v.Figures = append(v.Figures, fv)
	}
	var out bytes.Buffer
	if err := pageTemplate.Execute(&out, v); err != nil {
		return fmt.Errorf("rendering report %q: %w", r.Title, err)
	}
	if _, err := w.Write(out.Bytes()); err != nil {
		return fmt.Errorf("writing report %q: %w", r.Title, err)
	}
	return nil
}

// sharedStyles gives every series name that occurs in more than one
// figure a style of its own, in order of first appearance, so that e.g. a
// policy has the same colour in every figure of a report. Names used in one
// figure only are styled per figure.
func sharedStyles(figs []Figure) map[string]int {
	var order []string
	count := map[string]int{}
	for i := range figs {
		seen := map[string]bool{}
		note := func(ss []Series) {
			for _, s := range ss {
				if s.Name != "" && !seen[s.Name] {
					seen[s.Name] = true
					if count[s.Name] == 0 {
						order = append(order, s.Name)
					}
					count[s.Name]++
				}
			}
		}
		note(figs[i].Series)
		for j := range figs[i].Panels {
			note(figs[i].Panels[j].Series)
		}
	}
	shared := map[string]int{}
	for _, name := range order {
		if count[name] > 1 {
			shared[name] = len(shared)
		}
	}
	return shared
}

// WriteFile writes r as HTML to the file at path, creating or truncating
// it with mode 0644.
func WriteFile(path string, r *Report) error {
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing report file: %w", err)
	}
	return nil
}

// viewTable pads rows to the column count, marks highlighted cells and
// right-aligns columns whose cells all look numeric.
func viewTable(t *Table, id string) tableView {
	width := len(t.Columns)
	for _, row := range t.Rows {
		width = max(width, len(row))
	}
	numeric := make([]bool, width)
	for c := range width {
		seen := false
		numeric[c] = true
		for _, row := range t.Rows {
			if c >= len(row) || strings.TrimSpace(row[c]) == "" {
				continue
			}
			seen = true
			if !looksNumeric(row[c]) {
				numeric[c] = false
				break
			}
		}
		numeric[c] = numeric[c] && seen
	}
	tv := tableView{ID: id, Caption: t.Caption, Collapsed: t.Collapsed}
	for c := range width {
		name := ""
		if c < len(t.Columns) {
			name = t.Columns[c]
		}
		tv.Columns = append(tv.Columns, cellView{Text: name, Num: numeric[c]})
	}
	for ri, row := range t.Rows {
		cells := make([]cellView, width)
		for c := range width {
			if c < len(row) {
				cells[c].Text = row[c]
			}
			cells[c].Num = numeric[c]
			cells[c].Label = c == 0 && !numeric[c]
			cells[c].Long = cells[c].Label && utf8.RuneCountInString(cells[c].Text) > maxLabel
			cells[c].Bold = c < len(t.Highlight) && t.Highlight[c] == ri
		}
		tv.Rows = append(tv.Rows, cells)
	}
	return tv
}

// looksNumeric reports whether a preformatted cell starts like a number
// ("1.2 ± 0.1", "−3", "4.5%", "NaN", "∞"), so its column is right-aligned.
func looksNumeric(s string) bool {
	s = strings.TrimSpace(s)
	s = strings.TrimLeft(s, "+-−~≈<>")
	switch {
	case s == "":
		return false
	case strings.HasPrefix(s, "NaN"), strings.HasPrefix(s, "Inf"), strings.HasPrefix(s, "∞"):
		return true
	}
	r := []rune(s)[0]
	return unicode.IsDigit(r) || r == '.' && len(s) > 1 && unicode.IsDigit([]rune(s)[1])
}
