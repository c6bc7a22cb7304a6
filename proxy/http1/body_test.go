package http1

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCopy(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		framing Framing
		chunked bool
		want    string // written bytes
		rest    string // left in the reader
		err     bool
	}{
		{name: "length", in: "hello world", framing: Framing{Length: 5}, want: "hello", rest: " world"},
		{name: "length rechunked", in: "hello", framing: Framing{Length: 5}, chunked: true, want: "5\r\nhello\r\n0\r\n\r\n"},
		{name: "until close", in: "abc", framing: Framing{UntilClose: true}, want: "abc"},
		{name: "until close rechunked", in: "abc", framing: Framing{UntilClose: true}, chunked: true, want: "3\r\nabc\r\n0\r\n\r\n"},
		{name: "empty rechunked", framing: Framing{}, chunked: true, want: "0\r\n\r\n"},
		{name: "chunked with extension and trailer", in: "3;x=y\r\nabc\r\nA\r\n0123456789\r\n0\r\nT: v\r\n\r\nNEXT", framing: Framing{Chunked: true}, chunked: true,
			want: "3\r\nabc\r\na\r\n0123456789\r\n0\r\nT: v\r\n\r\n", rest: "NEXT"},
		{name: "short length", in: "hel", framing: Framing{Length: 5}, err: true},
		{name: "short chunk", in: "5\r\nhel", framing: Framing{Chunked: true}, chunked: true, err: true},
		{name: "chunk longer than size", in: "2\r\nabc\r\n0\r\n\r\n", framing: Framing{Chunked: true}, chunked: true, err: true},
		{name: "bad size", in: "zz\r\n", framing: Framing{Chunked: true}, chunked: true, err: true},
		{name: "huge size", in: "fffffffffffffffff\r\n", framing: Framing{Chunked: true}, chunked: true, err: true},
		{name: "bad trailer", in: "0\r\nno colon\r\n\r\n", framing: Framing{Chunked: true}, chunked: true, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bufio.NewReaderSize(strings.NewReader(tt.in), 16)
			var out bytes.Buffer
			w := bufio.NewWriter(&out)
			_, err := Copy(w, r, tt.framing, tt.chunked, true)
			w.Flush()
			if tt.err {
				if err == nil {
					t.Fatalf("no error, wrote %q", out.String())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rest := new(bytes.Buffer)
			rest.ReadFrom(r)
			if out.String() != tt.want || rest.String() != tt.rest {
				t.Errorf("wrote %q, left %q; want %q, %q", out.String(), rest.String(), tt.want, tt.rest)
			}
		})
	}
}

// TestCopyFlushesStreams: with flush, what the source has produced reaches
// the destination before the source blocks for more, whether the body has
// a length or is chunked (where the source may block for the next chunk).
func TestCopyFlushesStreams(t *testing.T) {
	for _, tt := range []struct {
		name          string
		in            Framing
		first, second string // what the source sends, in two parts
		flushed, want string // what reaches the destination after the first part, and in all
	}{
		{"length", Framing{Length: 6}, "abc", "def", "abc", "abcdef"},
		{"chunked", Framing{Chunked: true}, "3\r\nabc\r\n", "3\r\ndef\r\n0\r\n\r\n", "3\r\nabc\r\n", "3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			var out syncBuffer
			w := bufio.NewWriter(&out)
			done := make(chan error, 1)
			go func() {
				_, err := Copy(w, bufio.NewReader(pr), tt.in, tt.in.Chunked, true)
				done <- err
			}()
			pw.Write([]byte(tt.first))
			for deadline := time.Now().Add(30 * time.Second); out.Len() < len(tt.flushed); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("first part not flushed while the source waits: %q", out.String())
				}
			}
			if out.String() != tt.flushed {
				t.Fatalf("flushed %q, want %q", out.String(), tt.flushed)
			}
			pw.Write([]byte(tt.second))
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			w.Flush()
			if out.String() != tt.want {
				t.Errorf("got %q, want %q", out.String(), tt.want)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) Len() int       { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Len() }
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
