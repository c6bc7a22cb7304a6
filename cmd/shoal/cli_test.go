package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// mainCLI runs a command line as main does and returns its exit code,
// standard output and standard error.
func mainCLI(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = exitCode(run(context.Background(), args, &out, &errOut), &errOut)
	return code, out.String(), errOut.String()
}

// commandPaths lists every command of the tree, as the words after "shoal".
func commandPaths(c *cobra.Command, prefix []string) [][]string {
	paths := [][]string{prefix}
	for _, sub := range c.Commands() {
		if sub.Hidden || sub.Name() == "help" {
			continue
		}
		paths = append(paths, commandPaths(sub, append(append([]string(nil), prefix...), sub.Name()))...)
	}
	return paths
}

// TestEveryCommandHasHelp: every command answers -h, --help, a trailing
// help and 'shoal help CMD' on stdout with exit 0, and its usage names
// every flag it takes.
func TestEveryCommandHasHelp(t *testing.T) {
	root := (&cli{}).root()
	root.InitDefaultCompletionCmd()
	paths := commandPaths(root, nil)
	for _, want := range []string{"sim", "train", "train distr-lb", "experiment", "experiment distr-lb", "scenarios",
		"scenarios dump", "load", "proxy", "backend", "version", "completion bash"} {
		found := false
		for _, p := range paths {
			found = found || strings.Join(p, " ") == want
		}
		if !found {
			t.Errorf("no command %q in %v", want, paths)
		}
	}
	for _, p := range paths {
		c, _, err := root.Find(p)
		if err != nil {
			t.Fatal(err)
		}
		c.InitDefaultHelpFlag()
		forms := [][]string{append(p[:len(p):len(p)], "--help"), append(p[:len(p):len(p)], "-h"), append([]string{"help"}, p...)}
		if len(p) > 0 {
			forms = append(forms, append(p[:len(p):len(p)], "help"))
		}
		for _, args := range forms {
			code, out, errOut := mainCLI(args...)
			if code != 0 || errOut != "" {
				t.Errorf("shoal %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
				continue
			}
			synopsis := c.CommandPath() + " [command]"
			if c.Runnable() {
				synopsis = c.UseLine()
			}
			if !strings.Contains(out, "Usage:\n  "+synopsis) {
				t.Errorf("shoal %s: no synopsis %q:\n%s", strings.Join(args, " "), synopsis, out)
			}
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if !strings.Contains(out, "--"+f.Name+" ") || (f.Shorthand != "" && !strings.Contains(out, "-"+f.Shorthand+", --"+f.Name)) {
					t.Errorf("shoal %s: flag --%s not in the usage:\n%s", strings.Join(args, " "), f.Name, out)
				}
			})
		}
		if len(p) > 0 && p[0] != "completion" && c.Example == "" {
			t.Errorf("shoal %s has no example", strings.Join(p, " "))
		}
	}
}

// TestUsageErrorsExit2: an unknown flag, a bad value or a missing argument
// exits 2 with one line naming the problem and one pointing at the
// command's help; a run that fails exits 1.
func TestUsageErrorsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string // first line of stderr
		help string // the command whose --help the second line points at
	}{
		{[]string{"sim", "mm1", "--bogus"}, 2, "shoal: unknown flag: --bogus", "shoal sim"},
		{[]string{"sim", "mm1", "--seeds", "many"}, 2, `shoal: invalid argument "many" for "--seeds" flag`, "shoal sim"},
		{[]string{"train", "distr-lb", "mm1", "--episodes"}, 2, "shoal: flag needs an argument: --episodes", "shoal train distr-lb"},
		{[]string{"train", "distr-lb", "mm1"}, 2, "shoal: -o FILE is required", "shoal train distr-lb"},
		{[]string{"train", "magic", "mm1", "-o", "x"}, 2, `shoal: unknown learner "magic"`, "shoal train"},
		{[]string{"experiment", "distr-lb", "tables"}, 2, `shoal: unknown distr-lb experiment "tables"`, "shoal experiment distr-lb"},
		{[]string{"experiment", "faas"}, 2, `shoal: unknown paper "faas"`, "shoal experiment"},
		{[]string{"scenarios", "dump"}, 2, "shoal: want one scenario name", "shoal scenarios dump"},
		{[]string{"load", "--rate", "x"}, 2, `shoal: invalid argument "x" for "--rate" flag`, "shoal load"},
		{[]string{"proxy", "--config"}, 2, "shoal: flag needs an argument: --config", "shoal proxy"},
		{[]string{"proxy", "-x"}, 2, "shoal: unknown shorthand flag: 'x' in -x", "shoal proxy"},
		{[]string{"backend", "--cores", "0"}, 2, "shoal: --cores must be > 0, got 0", "shoal backend"},
		{[]string{"version", "--short"}, 2, "shoal: unknown flag: --short", "shoal version"},
		{[]string{"frobnicate"}, 2, `shoal: unknown command "frobnicate" for "shoal"`, "shoal"},
		{[]string{"sim", "no-such-scenario"}, 1, `shoal: no embedded scenario "no-such-scenario"`, ""},
	} {
		code, _, errOut := mainCLI(tc.args...)
		lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
		if code != tc.code || !strings.HasPrefix(lines[0], tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
			continue
		}
		if tc.code == 2 && lines[len(lines)-1] != "run '"+tc.help+" --help' for usage" {
			t.Errorf("%v: last line %q, want a pointer to '%s --help'", tc.args, lines[len(lines)-1], tc.help)
		}
	}
}

// TestNoArgumentsShowsOverview: plain 'shoal' and 'shoal help' print the
// overview with every command.
func TestNoArgumentsShowsOverview(t *testing.T) {
	for _, args := range [][]string{nil, {"help"}, {"--help"}} {
		code, out, _ := mainCLI(args...)
		if code != 0 {
			t.Errorf("%v: exit %d", args, code)
		}
		for _, cmd := range []string{"sim", "train", "experiment", "scenarios", "load", "proxy", "backend", "version", "completion"} {
			if !strings.Contains(out, "\n  "+cmd+" ") {
				t.Errorf("%v: the overview lacks %s:\n%s", args, cmd, out)
			}
		}
	}
}

// TestVersion: 'shoal version' and 'shoal --version' agree, and a binary
// built in a git checkout reports the checkout's revision and whether it
// has changes, as `git` sees them.
func TestVersion(t *testing.T) {
	_, a, _ := mainCLI("version")
	_, b, _ := mainCLI("--version")
	if a != b || !strings.HasPrefix(a, "shoal ") || !strings.Contains(a, "go1.") {
		t.Fatalf("version %q, --version %q", a, b)
	}
	bin := buildShoal(t)
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil || !built.vcs {
		if !strings.Contains(string(out), "revision unknown") {
			t.Fatalf("built without VCS information, but the binary says %q", out)
		}
		return
	}
	status, err := exec.Command("git", "status", "--porcelain").Output()
	if err != nil {
		t.Fatal(err)
	}
	// Go stamps a pseudo-version from the commit, +dirty when modified.
	want := " revision " + strings.TrimSpace(string(rev)) + " of "
	version := "-" + strings.TrimSpace(string(rev))[:12]
	if len(status) > 0 {
		want = " revision " + strings.TrimSpace(string(rev)) + " (modified) of "
		version += "+dirty"
	}
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), version+" revision") {
		t.Fatalf("built binary says %q, want %q and a version ending in %q", out, want, version)
	}
}

// TestCompletion: the shell completion scripts are generated, and the
// scenario argument completes to the embedded scenarios.
func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if code, out, _ := mainCLI("completion", sh); code != 0 || !strings.Contains(out, "shoal") {
			t.Errorf("completion %s: exit %d, %d bytes", sh, code, len(out))
		}
	}
	code, out, _ := mainCLI("__complete", "sim", "lb-mod")
	if code != 0 || !strings.Contains(out, "lb-moderate-cpu\t") {
		t.Errorf("sim completion: exit %d\n%s", code, out)
	}
	if _, err := runCLI(t, "sim"); !errors.Is(err, errUsage) {
		t.Errorf("sim without a scenario: %v, want a usage error", err)
	}
}
