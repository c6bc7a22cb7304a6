package backend

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// decodeConfig decodes a Config strictly (unknown fields are errors).
func decodeConfig(data []byte) (Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(&c)
	return c, err
}

// TestBackendBadConfigsNameTheField: every file in testdata/bad fails to
// decode or to make a server, with errors containing each of its "# want: "
// lines.
func TestBackendBadConfigsNameTheField(t *testing.T) {
	files, _ := filepath.Glob("testdata/bad/*.yaml")
	if len(files) < 10 {
		t.Fatalf("only %d bad files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var wants []string
			for line := range strings.Lines(string(data)) {
				if w, ok := strings.CutPrefix(strings.TrimSpace(line), "# want: "); ok {
					wants = append(wants, w)
				}
			}
			if len(wants) == 0 {
				t.Fatal("no # want: line")
			}
			c, err := decodeConfig(data)
			if err == nil {
				_, err = New(c)
			}
			if err == nil {
				t.Fatalf("no error, want %q", wants)
			}
			for _, w := range wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestBackendGoodConfigs: the files in testdata/good make servers, and defaults
// fill the zero fields.
func TestBackendGoodConfigs(t *testing.T) {
	files, _ := filepath.Glob("testdata/good/*.yaml")
	if len(files) < 3 {
		t.Fatalf("only %d good files", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := decodeConfig(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		s, err := New(c)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if got := s.Config(); got.Cores <= 0 || got.Speed <= 0 || got.IOSpeed <= 0 || got.Phases < 1 || got.Seed == 0 {
			t.Errorf("%s: defaults not filled: %+v", f, got)
		}
	}
	d := DefaultConfig()
	if d.Cores != 1 || d.Speed != 1 || d.IOSpeed != 1 || d.Phases != 1 || d.Seed != 1 ||
		d.IOParallelism != 0 || d.Concurrency != 0 || d.Queue != 0 || d.CPU.Dist != "" || d.IO.Dist != "" {
		t.Errorf("DefaultConfig %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("DefaultConfig: %v", err)
	}
}
