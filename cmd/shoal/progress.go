package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressBar draws a progress bar on a terminal, at most every 100 ms,
// with an estimate of the time left and a label; lines printed through it
// scroll above the bar.
type progressBar struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	last  time.Time
	frac  float64
	label string
}

func newProgressBar(w io.Writer) *progressBar {
	return &progressBar{w: w, start: time.Now()}
}

// update redraws the bar at done (0 to 1).
func (b *progressBar) update(done float64) { b.show(done, b.label, false) }

// show redraws the bar at done with the label; force skips the rate limit.
func (b *progressBar) show(done float64, label string, force bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.frac, b.label = done, label
	now := time.Now()
	if !force && now.Sub(b.last) < 100*time.Millisecond && done < 1 {
		return
	}
	b.last = now
	b.draw(now)
}

func (b *progressBar) draw(now time.Time) {
	const width = 30
	done := min(max(b.frac, 0), 1)
	n := int(done * width)
	eta := ""
	if el := now.Sub(b.start); done > 0.02 && done < 1 {
		eta = fmt.Sprintf(" eta %s", (time.Duration(float64(el)/done) - el).Round(time.Second))
	}
	label := ""
	if b.label != "" {
		label = "  " + b.label
	}
	fmt.Fprintf(b.w, "\r\033[K[%s%s] %3.0f%%%s%s", strings.Repeat("#", n), strings.Repeat(" ", width-n), 100*done, eta, label)
}

// println prints a line above the bar.
func (b *progressBar) println(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(b.w, "\r\033[K%s\n", line)
	b.last = time.Now()
	b.draw(b.last)
}

func (b *progressBar) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.last.IsZero() {
		fmt.Fprint(b.w, "\r\033[K")
	}
}
