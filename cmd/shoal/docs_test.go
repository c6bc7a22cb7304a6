package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the repository's top folder, seen from this package.
const repoRoot = "../.."

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile("(?m)^#{1,6} (.+)$")
	mdFence   = regexp.MustCompile("(?ms)^```.*?^```")
)

// anchor is the fragment GitHub gives a heading: lower case, punctuation
// other than '-' and '_' dropped, spaces to '-'.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := mdFence.ReplaceAllString(string(raw), "")
	set := map[string]bool{}
	for _, m := range mdHeading.FindAllStringSubmatch(text, -1) {
		set[anchor(m[1])] = true
	}
	return set
}

// TestDocLinksResolve: every relative link of README.md and docs/*.md names
// a file of the repository, and every #fragment a heading of that file.
func TestDocLinksResolve(t *testing.T) {
	docs, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	docs = append(docs, filepath.Join(repoRoot, "README.md"))
	if len(docs) < 3 {
		t.Fatalf("want README.md, docs/DESIGN.md and docs/PAPERS.md, found %v", docs)
	}
	for _, doc := range docs {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := mdFence.ReplaceAllString(string(raw), "")
		if strings.Contains(text, "../shared") {
			t.Errorf("%s points outside the repository (../shared)", doc)
		}
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %q: %v", doc, target, err)
					continue
				}
			}
			if frag != "" && !anchors(t, path)[frag] {
				t.Errorf("%s: link %q: no heading with anchor #%s in %s", doc, target, frag, path)
			}
		}
	}
}

// TestReadmeToursEveryCommand: the README's command table has a row for
// every top-level command, with an example whose flags that command takes.
func TestReadmeToursEveryCommand(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const cell = `(?:[^|\\]|\\.)*` // a table cell, with \| escapes
	root := (&cli{}).root()
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		row := regexp.MustCompile("(?m)^\\| `shoal " + c.Name() + cell + "\\|" + cell + "\\| `(shoal [^`]+)` \\|$").FindStringSubmatch(string(raw))
		if row == nil {
			t.Errorf("README's command table has no row with an example for %q", c.Name())
			continue
		}
		found, rest, err := (&cli{}).root().Find(strings.Fields(row[1])[1:])
		if err == nil {
			err = found.ParseFlags(rest)
		}
		if err != nil || !strings.HasPrefix(found.CommandPath()+" ", "shoal "+c.Name()+" ") {
			t.Errorf("README example %q is not a good %s command line: %v", row[1], c.Name(), err)
		}
	}
}
