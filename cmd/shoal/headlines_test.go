package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The headlines (README.md's verdict per system, the results index and the
// decision guide) take their figures from the verdict tables that open the
// results pages: one source for every headline.

var (
	figure     = regexp.MustCompile(`\d+(?:[.,]\d+)*`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	linkTarget = regexp.MustCompile(`\]\([^)]*\)`)
	resultPage = regexp.MustCompile(`(?:results/|\]\()([a-z-]+)\.md`)
)

// statedFigures are the numbers a text states, outside code spans and link
// targets, without thousands separators or signs; digits glued to letters
// ("p99", "TD3") are names, not figures.
func statedFigures(text string) []string {
	text = linkTarget.ReplaceAllString(codeSpan.ReplaceAllString(text, ""), "]")
	var out []string
	for _, loc := range figure.FindAllStringIndex(text, -1) {
		before, after := ' ', ' '
		if loc[0] > 0 {
			before = rune(text[loc[0]-1])
		}
		if loc[1] < len(text) {
			after = rune(text[loc[1]])
		}
		if unicode.IsLetter(before) || unicode.IsLetter(after) {
			continue
		}
		out = append(out, strings.ReplaceAll(strings.TrimRight(text[loc[0]:loc[1]], ".,"), ",", ""))
	}
	return out
}

// verdict is the text of a results page's verdict: from its "## Verdict"
// heading to the next heading of that level.
func verdict(page string) string {
	_, rest, ok := strings.Cut(page, "\n## Verdict\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// headline is a piece of text that quotes one results page.
type headline struct {
	where, page, text string
}

// headlines splits a file into the pieces that quote a results page (one
// of known): the table rows and list items that link to one, and the "## "
// sections that do (the decision guide's).
func headlines(name, text string, known map[string]string) []headline {
	var out []headline
	add := func(where, piece string) {
		pages := map[string]bool{}
		for _, m := range resultPage.FindAllStringSubmatch(piece, -1) {
			if _, ok := known[m[1]]; ok {
				pages[m[1]] = true
			}
		}
		if len(pages) == 1 {
			for p := range pages {
				out = append(out, headline{where, p, piece})
			}
		}
	}
	if strings.Contains(text, "\n## ") && strings.HasSuffix(name, "choose.md") {
		for i, sec := range strings.Split(text, "\n## ")[1:] {
			add(fmt.Sprintf("%s, section %d", name, i+1), sec)
		}
		return out
	}
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "|") || strings.HasPrefix(line, "- ") {
			add(fmt.Sprintf("%s:%d", name, i+1), line)
		}
	}
	return out
}

// headlineMismatches lists every figure of a headline that its results
// page's verdict does not state; pages maps a page's name (distr-lb) to
// its text.
func headlineMismatches(files map[string]string, pages map[string]string) []string {
	var bad []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		for _, h := range headlines(name, files[name], pages) {
			v := verdict(pages[h.page])
			if v == "" {
				bad = append(bad, fmt.Sprintf("%s quotes results/%s.md, which has no verdict", h.where, h.page))
				continue
			}
			stated := statedFigures(v)
			for _, f := range statedFigures(h.text) {
				if !slices.Contains(stated, f) {
					bad = append(bad, fmt.Sprintf("%s: %s is not in results/%s.md's verdict", h.where, f, h.page))
				}
			}
		}
	}
	return bad
}

// readHeadlines reads the three files that quote the verdicts, and every
// results page.
func readHeadlines(t *testing.T) (files, pages map[string]string) {
	t.Helper()
	read := func(path string) string {
		b, err := os.ReadFile(filepath.Join(repoRoot, path))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	files = map[string]string{}
	for _, f := range []string{"README.md", "docs/results/README.md", "docs/guide/choose.md"} {
		files[f] = read(f)
	}
	pages = map[string]string{}
	paths, err := filepath.Glob(filepath.Join(repoRoot, "docs", "results", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if name := strings.TrimSuffix(filepath.Base(p), ".md"); name != "README" {
			pages[name] = read(filepath.Join("docs", "results", name+".md"))
		}
	}
	return files, pages
}

// TestHeadlinesMatchVerdicts: every figure in README.md's verdict per
// system, in the results index and in the decision guide is a figure of
// the verdict table of the results page it links to, and every results
// page opens with its verdict (the first heading after the title).
func TestHeadlinesMatchVerdicts(t *testing.T) {
	files, pages := readHeadlines(t)
	for _, m := range headlineMismatches(files, pages) {
		t.Error(m)
	}
	for name, text := range pages {
		if h := mdHeading.FindAllStringSubmatch(text, 2); len(h) < 2 || h[1][1] != "Verdict" {
			t.Errorf("results/%s.md: the first heading after the title is %q, want Verdict", name, h[1][1])
		}
	}
	quoted := map[string]bool{}
	for name, text := range files {
		hs := headlines(name, text, pages)
		for _, h := range hs {
			quoted[h.page] = true
		}
		t.Logf("%s: %d headlines", name, len(hs))
	}
	for name := range pages {
		if !quoted[name] && name != "platform" {
			t.Errorf("no headline quotes results/%s.md", name)
		}
	}
}

// TestHeadlinesCatchAPlantedMismatch: a figure changed in a headline, or
// in a verdict, is reported, naming the file, the figure and the page.
func TestHeadlinesCatchAPlantedMismatch(t *testing.T) {
	files, pages := readHeadlines(t)
	if bad := headlineMismatches(files, pages); len(bad) > 0 {
		t.Skipf("the docs disagree already (TestHeadlinesMatchVerdicts says where): %v", bad[0])
	}
	planted := map[string]string{}
	for k, v := range files {
		planted[k] = v
	}
	planted["README.md"] = strings.Replace(files["README.md"], "21.0% below HAProxy's", "23.0% below HAProxy's", 1)
	if planted["README.md"] == files["README.md"] {
		t.Fatal("README.md no longer says 21.0% below HAProxy's: plant another figure")
	}
	if bad := headlineMismatches(planted, pages); len(bad) != 1 || !strings.Contains(bad[0], "README.md:") || !strings.Contains(bad[0], "23.0 is not in results/distr-lb.md's verdict") {
		t.Errorf("a planted 23.0%% in README.md: %q", bad)
	}
	changed := map[string]string{}
	for k, v := range pages {
		changed[k] = v
	}
	changed["drpc"] = strings.Replace(pages["drpc"], "it has 54-83% fewer", "it has 56-83% fewer", 1)
	if changed["drpc"] == pages["drpc"] {
		t.Fatal("drpc.md's verdict no longer says it has 54-83% fewer: plant another figure")
	}
	if bad := headlineMismatches(files, changed); len(bad) < 3 {
		t.Errorf("a verdict's 54-83%% changed to 56-83%%, which three files quote: %q", bad)
	}
}

func TestStatedFigures(t *testing.T) {
	got := statedFigures("p99 is 21.0% below (−16.0%), 1,101,342 vCPU-s, TD3, `spread:0.3`, [x](a/b2.md), 0.62-0.98 times, 2.6.")
	if want := []string{"21.0", "16.0", "1101342", "0.62", "0.98", "2.6"}; !slices.Equal(got, want) {
		t.Errorf("figures: %q, want %q", got, want)
	}
}
