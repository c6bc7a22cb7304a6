package modelfile

import (
	"bytes"
	"io"
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
