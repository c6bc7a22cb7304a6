package http1

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// FuzzBufferedHeadAsLineByLine checks the fast path for a head that is all
// in the buffer (readBuffered) against the line-by-line loop, which a
// reader giving one byte at a time forces: the same head, error and bytes
// consumed, for requests and responses.
func FuzzBufferedHeadAsLineByLine(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\nHost: x\n\nGET /2 HTTP/1.1\r\n\r\n",
		"\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\rY: z\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX: a\tb\x7f\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nConnection: close, upgrade\r\nUpgrade: h2c\r\n\r\nbody",
		"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Tue, 24 Nov 2026 00:00:00 GMT\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nok\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"HTTP/1.0 200 OK\n\n",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, in []byte, kind uint8) {
		read := func(h *Head, r *bufio.Reader) error {
			if kind&1 == 0 {
				return h.ReadRequest(r, 512)
			}
			return h.ReadResponse(r, 512)
		}
		var fast, slow Head
		fr := bufio.NewReaderSize(bytes.NewReader(in), 4096)
		sr := bufio.NewReaderSize(iotest.OneByteReader(bytes.NewReader(in)), 4096)
		ferr, serr := read(&fast, fr), read(&slow, sr)
		if fmt.Sprint(ferr) != fmt.Sprint(serr) {
			t.Fatalf("buffered: %v, line by line: %v\n%q", ferr, serr, in)
		}
		if ferr != nil {
			return
		}
		if f, s := headString(&fast), headString(&slow); f != s {
			t.Fatalf("buffered:\n%s\nline by line:\n%s\n%q", f, s, in)
		}
		f, _ := io.ReadAll(fr)
		s, _ := io.ReadAll(sr)
		if !bytes.Equal(f, s) {
			t.Fatalf("left unread: buffered %q, line by line %q", f, s)
		}
	})
}

// headString is what a Head says, for comparisons.
func headString(h *Head) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%q %q %d %q 1.%d len %d chunked %v other %v close %v ka %v up %v e100 %v hosts %d %q\n",
		h.Method, h.Target, h.Status, h.Reason, h.Minor, h.ContentLength, h.Chunked, h.OtherCoding, h.Close,
		h.KeepAlive, h.Upgrade, h.Expect100, h.Hosts, h.Host)
	for _, f := range h.Fields {
		fmt.Fprintf(&b, "%q: %q connection-option %v\n", f.Name, f.Value, h.IsConnectionOption(f.Name))
	}
	return b.String()
}

func TestValidValue(t *testing.T) {
	naive := func(v []byte) bool {
		for _, c := range v {
			if (c < ' ' && c != '\t') || c == 0x7f {
				return false
			}
		}
		return true
	}
	v := []byte("0123456789abcdefghijklmnopqrstuv")
	for n := 0; n <= len(v); n++ {
		for i := 0; i < n; i++ {
			for c := 0; c < 256; c++ {
				w := append([]byte(nil), v[:n]...)
				w[i] = byte(c)
				if got, want := validValue(w), naive(w); got != want {
					t.Fatalf("validValue(%q) = %v, want %v", w, got, want)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for k := 0; k < 100000; k++ {
		w := make([]byte, r.IntN(40))
		for i := range w {
			w[i] = byte(0x20 + r.IntN(0x60)) // printable, and sometimes anything
			if r.IntN(20) == 0 {
				w[i] = byte(r.IntN(256))
			}
		}
		if got, want := validValue(w), naive(w); got != want {
			t.Fatalf("validValue(%q) = %v, want %v", w, got, want)
		}
	}
}
