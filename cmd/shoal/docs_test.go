package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
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
	seen := map[string]int{}
	for _, m := range mdHeading.FindAllStringSubmatch(text, -1) {
		a := anchor(m[1])
		if n := seen[a]; n > 0 { // GitHub numbers a repeated heading: a, a-1, a-2
			set[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			set[a] = true
		}
		seen[a]++
	}
	return set
}

// docFiles are the Markdown files a reader browses: README.md and every
// page under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(repoRoot, "README.md")}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("want README.md and the pages under docs/, found %v", files)
	}
	return files
}

// TestDocLinksResolve: every relative link (and image) of README.md and the
// pages under docs/ names a file of the repository, and every #fragment a
// heading of that file.
func TestDocLinksResolve(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docFiles(t) {
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
				if abs, _ := filepath.Abs(path); !strings.HasPrefix(abs, root+string(filepath.Separator)) {
					t.Errorf("%s: link %q leaves the repository", doc, target)
					continue
				}
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

// TestReferenceToursEveryCommand: the command table of docs/reference has a
// row for every top-level command, with an example whose flags that
// command takes.
func TestReferenceToursEveryCommand(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs", "reference", "README.md"))
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
			t.Errorf("the reference's command table has no row with an example for %q", c.Name())
			continue
		}
		found, rest, err := (&cli{}).root().Find(strings.Fields(row[1])[1:])
		if err == nil {
			err = found.ParseFlags(rest)
		}
		if err != nil || !strings.HasPrefix(found.CommandPath()+" ", "shoal "+c.Name()+" ") {
			t.Errorf("the reference's example %q is not a good %s command line: %v", row[1], c.Name(), err)
		}
	}
}

var (
	shellFence = regexp.MustCompile("(?ms)^```(?:sh|bash|console|)\\n(.*?)^```")
	inlineCode = regexp.MustCompile("`(shoal [^`]+)`")
)

// TestDocCommandsParse: every shoal command line in README.md and the
// pages under docs/ (but the generated CLI reference) is one the CLI takes:
// the command exists and takes those flags and, in shell blocks, those
// arguments; every script a shell block runs and every file kubectl applies
// exists, and every package go test names.
func TestDocCommandsParse(t *testing.T) {
	checked := 0
	for _, doc := range docFiles(t) {
		if strings.Contains(doc, filepath.Join("reference", "cli")) {
			continue // generated from the commands themselves
		}
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		for _, block := range shellFence.FindAllStringSubmatch(text, -1) {
			for _, line := range shellLines(block[1]) {
				for _, words := range shellCommands(line) {
					if err := checkCommand(words, true); err != nil {
						t.Errorf("%s: %q: %v", doc, line, err)
					}
					checked++
				}
			}
		}
		for _, m := range inlineCode.FindAllStringSubmatch(mdFence.ReplaceAllString(text, ""), -1) {
			for _, words := range shellCommands(m[1]) {
				if err := checkCommand(words, false); err != nil {
					t.Errorf("%s: `%s`: %v", doc, m[1], err)
				}
				checked++
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked only %d command lines", checked)
	}
}

// shellLines joins a shell block's continued lines and drops comments and
// prompts.
func shellLines(block string) []string {
	var lines []string
	cont := ""
	for _, l := range strings.Split(block, "\n") {
		l = strings.TrimPrefix(strings.TrimSpace(l), "$ ")
		if strings.HasSuffix(l, "\\") {
			cont += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		l = cont + l
		cont = ""
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// shellCommands splits a command line into its commands (at ;, &&, ||, |
// and &, outside quotes) and each into words, quotes removed; a comment
// ends it.
func shellCommands(line string) [][]string {
	var cmds [][]string
	var words []string
	var word strings.Builder
	inWord := false
	quote := rune(0)
	flush := func() {
		if inWord {
			words = append(words, word.String())
		}
		word.Reset()
		inWord = false
	}
	end := func() {
		flush()
		for len(words) > 0 && (words[0] == "do" || words[0] == "then" || words[0] == "time") {
			words = words[1:]
		}
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '#' && !inWord:
			end()
			return cmds
		case r == ';' || r == '&' || r == '|' && !inWord:
			end()
		case r == ' ' || r == '\t' || r == '\n':
			flush()
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	end()
	return cmds
}

// checkCommand checks one documented command: a shoal command line (also
// as go run ./cmd/shoal), a script run with bash, a file kubectl applies,
// the packages go test names. full also checks a shoal command's
// arguments, which inline mentions of a command ("`shoal sim` prints")
// leave out.
func checkCommand(words []string, full bool) error {
	exists := func(path string) error {
		if _, err := os.Stat(filepath.Join(repoRoot, path)); err != nil {
			return fmt.Errorf("no such file in the repository: %s", path)
		}
		return nil
	}
	switch {
	case len(words) > 2 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/shoal":
		return checkShoal(words[3:], full)
	case words[0] == "shoal":
		return checkShoal(words[1:], full)
	case words[0] == "bash" && len(words) > 1 && words[1] == "scripts/image.sh":
		for i := 2; i < len(words); i++ {
			switch words[i] {
			case "-o", "-t":
				i++
			case "-h", "--help":
			default:
				return fmt.Errorf("scripts/image.sh takes -o ARCHIVE and -t NAME, not %q", words[i])
			}
		}
	case words[0] == "bash" && len(words) > 1:
		return exists(words[1])
	case words[0] == "helm":
		return checkHelm(words[1:], exists)
	case words[0] == "kubectl":
		for i, w := range words {
			if i > 0 && words[i-1] == "-f" && strings.HasPrefix(w, "deploy/") {
				if err := exists(w); err != nil {
					return err
				}
			}
		}
	case len(words) > 1 && words[0] == "go" && words[1] == "test":
		for _, w := range words[2:] {
			if strings.HasPrefix(w, "./") {
				if err := exists(strings.TrimSuffix(strings.TrimSuffix(w, "..."), "/")); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkHelm checks a helm command line: a chart under deploy/ exists, and
// every --set names a value the chart has (values.yaml).
func checkHelm(words []string, exists func(string) error) error {
	var chart string
	for _, w := range words {
		if strings.HasPrefix(w, "deploy/") {
			chart = w
			if err := exists(w); err != nil {
				return err
			}
		}
	}
	if chart == "" {
		if len(words) > 0 && slices.Contains([]string{"uninstall", "list", "status", "rollback", "history"}, words[0]) {
			return nil // a release's command, no chart
		}
		return fmt.Errorf("no chart under deploy/")
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot, chart, "values.yaml"))
	if err != nil {
		return err
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		return fmt.Errorf("%s/values.yaml: %v", chart, err)
	}
	for i, w := range words {
		if w != "--set" || i+1 == len(words) {
			continue
		}
		key, _, _ := strings.Cut(words[i+1], "=")
		var v any = values
		for _, part := range strings.Split(key, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return fmt.Errorf("--set %s: %s has no value %s", key, chart, part)
			}
			if v, ok = m[part]; !ok {
				return fmt.Errorf("--set %s: %s has no value %s", key, chart, part)
			}
		}
	}
	return nil
}

// placeholder is a word that stands for a value the reader supplies:
// FILE, CMD, L, N_SEEDS.
var placeholder = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// checkShoal checks a shoal command line: the command exists, takes those
// flags and, with full, those arguments. A word a|b (an alternation in
// prose) stands for its first choice; a placeholder command (shoal CMD
// --help) or flag value (--load L) stands for any.
func checkShoal(args []string, full bool) error {
	for i, a := range args {
		if !strings.HasPrefix(a, "-") && strings.Contains(a, "|") && !strings.Contains(a, "{") {
			args[i], _, _ = strings.Cut(a, "|")
		}
	}
	root := (&cli{}).root()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	if len(args) > 0 && placeholder.MatchString(args[0]) {
		return nil
	}
	found, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if found == root && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("no command %q", args[0])
	}
	for i, a := range rest {
		name, value, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "--") {
			continue
		}
		f := found.Flags().Lookup(name)
		if f == nil || f.Value.Type() == "string" || f.Value.Type() == "bool" {
			continue
		}
		switch {
		case inline && placeholder.MatchString(value):
			rest[i] = "--" + name + "=" + sample(f)
		case !inline && i+1 < len(rest) && placeholder.MatchString(rest[i+1]):
			rest[i+1] = sample(f)
		}
	}
	switch err := found.ParseFlags(rest); {
	case errors.Is(err, pflag.ErrHelp):
		return nil
	case err != nil && !full && strings.Contains(err.Error(), "flag needs an argument"):
		// A flag named in prose, `shoal runs compare --report`.
	case err != nil:
		return fmt.Errorf("%s: %w", found.CommandPath(), err)
	}
	if full {
		if err := found.ValidateArgs(found.Flags().Args()); err != nil {
			return fmt.Errorf("%s: %w", found.CommandPath(), err)
		}
	}
	return nil
}

// includeMark precedes a fenced block that shows a repository file whole:
// <!-- include: PATH -->.
var includeMark = regexp.MustCompile("(?m)^<!-- include: (\\S+) -->\n```[a-z]*\n")

// TestDocIncludesAreTheFiles: a block marked as a file's copy is that
// file, byte for byte, so that a guide never shows a file other than the
// one it names.
func TestDocIncludesAreTheFiles(t *testing.T) {
	n := 0
	for _, path := range docFiles(t) {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		for _, m := range includeMark.FindAllStringSubmatchIndex(text, -1) {
			n++
			name := text[m[2]:m[3]]
			body, _, ok := strings.Cut(text[m[1]:], "```")
			want, err := os.ReadFile(filepath.Join(repoRoot, name))
			if err != nil || !ok {
				t.Errorf("%s: includes %s: %v", path, name, err)
				continue
			}
			if body != string(want) {
				t.Errorf("%s shows a %s that is not the file's content (copy the file into the block)", path, name)
			}
		}
	}
	if n == 0 {
		t.Error("no include marks: the sweeps guide shows bench/sweeps/distr-lb.yaml")
	}
}

// sample is a value flag f parses, standing for a placeholder: its
// default, a slice's without the brackets pflag prints ("[0.000000]"), an
// empty slice's a zero.
func sample(f *pflag.Flag) string {
	v := f.DefValue
	if strings.HasSuffix(f.Value.Type(), "Slice") {
		if v = strings.Trim(v, "[]"); v == "" {
			v = "0"
		}
	}
	return v
}
