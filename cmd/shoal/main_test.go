package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		os.WriteFile(path, got, 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n%s", name, got)
	}
}

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	return out.String(), err
}

func TestScenariosList(t *testing.T) {
	out, err := runCLI(t, "scenarios")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "scenarios.txt", []byte(out))
}

func TestSimTableGolden(t *testing.T) {
	out, err := runCLI(t, "sim", "mm1", "--seeds", "3", "--horizon", "20m")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "sim-mm1.txt", []byte(out))
}

// TestSimFilesAreByteIdentical runs the same command twice into two folders.
func TestSimFilesAreByteIdentical(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, dir := range []string{a, b} {
		if _, err := runCLI(t, "sim", "lb-moderate-75cpu", "--policy", "lsq,sed", "--seeds", "2", "--horizon", "5m", "--out", dir); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"results.json", "runs.csv", "summary.csv", "report.html"} {
		// The report records the command line, which names the folder.
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(b, f))
		x = bytes.ReplaceAll(x, []byte(a), []byte("OUT"))
		y = bytes.ReplaceAll(y, []byte(b), []byte("OUT"))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s: %d and %d bytes, not identical", f, len(x), len(y))
		}
	}
}

func TestDumpEditRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.yaml")
	if _, err := runCLI(t, "scenarios", "dump", "mm1", "-o", path); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	edited := strings.Replace(string(raw), "rate: 8", "rate: 5", 1)
	os.WriteFile(path, []byte(edited), 0o644)
	out, err := runCLI(t, "sim", path, "--seeds", "2", "--horizon", "10m", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"scenario": "mm1"`) {
		t.Fatalf("json output: %s", out)
	}
}

func TestBadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"frobnicate"}, true, `unknown command "frobnicate"`},
		{[]string{"sim"}, true, "want one scenario"},
		{[]string{"sim", "mm1", "--seeds"}, true, "flag needs an argument: --seeds"},
		{[]string{"sim", "mm1", "--seeds", "x"}, true, `invalid argument "x" for "--seeds" flag`},
		{[]string{"sim", "mm1", "--bogus"}, true, "unknown flag: --bogus"},
		{[]string{"sim", "mm1", "--seeds", "-1"}, true, "--seeds, --workers and --horizon must not be negative"},
		{[]string{"sim", "nope"}, false, `no embedded scenario "nope"`},
		{[]string{"sim", "./missing.yaml"}, false, "no such file"},
		{[]string{"sim", "mm1", "--policy", "zzz"}, true, `unknown policy "zzz"`}, // a bad flag value: exit 2
		{[]string{"sim", "mm1", "--load", "20"}, false, "load: must be in (0, 10]"},
		{[]string{"scenarios", "dump"}, true, "want one scenario name"},
		{[]string{"operator", "--prometheus", "http://127.0.0.1:9", "--namespaces", "default,Not_A_Namespace"}, true, `--namespaces: "Not_A_Namespace" is not a namespace name`},
	} {
		_, err := runCLI(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, errUsage) != tc.usage {
			t.Errorf("%v: err %v, want %q (usage %v)", tc.args, err, tc.want, tc.usage)
		}
	}
}
