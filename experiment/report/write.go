package report

import (
	"errors"
	"io"
)

// Write writes r as a self-contained HTML document to w. The output is
// deterministic: the same Report yields the same bytes.
func Write(w io.Writer, r *Report) error { return errors.New("report: not implemented") }

// WriteFile writes r as HTML to the file at path, replacing it.
func WriteFile(path string, r *Report) error { return errors.New("report: not implemented") }

// SVG writes f as a standalone SVG document of width x height pixels to w.
func SVG(w io.Writer, f *Figure, width, height int) error {
	return errors.New("report: not implemented")
}
