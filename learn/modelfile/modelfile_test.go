package modelfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type header struct {
	Format string   `json:"format"`
	Period Duration `json:"period"`
}

func TestRoundTripAndStrictness(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHeader(&buf, header{Format: "x", Period: Duration(1500 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("WEIGHTS")
	var h header
	rest, err := ReadHeader(&buf, &h, "x")
	if err != nil {
		t.Fatal(err)
	}
	tail, _ := io.ReadAll(rest)
	if h.Format != "x" || time.Duration(h.Period) != 1500*time.Millisecond || string(tail) != "WEIGHTS" {
		t.Fatalf("header %+v, rest %q", h, tail)
	}
	for _, bad := range []string{`{"format":"x","extra":1}` + "\n", `{"period":"soon"}` + "\n", "no newline"} {
		if _, err := ReadHeader(strings.NewReader(bad), &h, "x"); err == nil || !strings.Contains(err.Error(), "header: ") {
			t.Errorf("%q: error %v", bad, err)
		}
	}
	long := `{"format":"` + strings.Repeat("a", 200<<10) + `"}` + "\n"
	if _, err := ReadHeader(strings.NewReader(long), &h, "x"); err != nil || len(h.Format) != 200<<10 {
		t.Errorf("a 200 KB header: %v", err)
	}
}

// A failed write leaves the old file whole and no temporary file behind.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy")
	if err := WriteFile(path, func(w io.Writer) error { _, err := io.WriteString(w, "old"); return err }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteFile(path, func(w io.Writer) error { io.WriteString(w, "half of the new"); return boom })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v, want boom naming the file", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("file holds %q after a failed write", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files in the directory, want 1", len(ents))
	}
}
