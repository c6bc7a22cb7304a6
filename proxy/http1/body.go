package http1

import (
	"bufio"
	"errors"
	"io"
	"strconv"
)

// Framing says how a message body is delimited (RFC 9112 section 6.3).
// The zero value is a message without a body.
type Framing struct {
	Length     int64 // bytes of an identity body
	Chunked    bool  // chunked transfer coding
	UntilClose bool  // the body ends when the connection closes (responses only)
}

// HasBody reports whether the message has a body (possibly empty when chunked).
func (f Framing) HasBody() bool { return f.Length > 0 || f.Chunked || f.UntilClose }

// RequestFraming is the framing of a request read by ReadRequest: chunked,
// a Content-Length, or no body.
func (h *Head) RequestFraming() Framing {
	if h.Chunked {
		return Framing{Chunked: true}
	}
	return Framing{Length: max(h.ContentLength, 0)}
}

// ResponseFraming is the framing of a response read by ReadResponse to a
// request with the given method: none for HEAD, 1xx, 204 and 304; then
// chunked, then Content-Length, else until the connection closes.
func (h *Head) ResponseFraming(method []byte) Framing {
	switch {
	case string(method) == "HEAD", h.Status < 200, h.Status == 204, h.Status == 304:
		return Framing{}
	case h.Chunked && !h.OtherCoding:
		return Framing{Chunked: true}
	case h.Chunked || h.OtherCoding:
		return Framing{UntilClose: true}
	case h.ContentLength >= 0:
		return Framing{Length: h.ContentLength}
	}
	return Framing{UntilClose: true}
}

// ErrShortBody: the connection ended inside a body.
var ErrShortBody = errors.New("connection closed inside a message body")

// Copy relays a body framed as in from r to w. If chunked is true the body
// is written in the chunked coding (with the trailer fields it had, if it
// was chunked); otherwise as it came, which for a chunked input means the
// caller wrote a Content-Length it knew, so chunked must be true whenever
// in.Chunked is. If flush is true, w is flushed whenever r has nothing
// buffered, so a streamed body reaches the peer as it is produced.
// It returns the payload bytes copied.
func Copy(w *bufio.Writer, r *bufio.Reader, in Framing, chunked, flush bool) (int64, error) {
	switch {
	case in.Chunked:
		return copyChunked(w, r, flush)
	case in.UntilClose:
		n, err := copyIdentity(w, r, -1, chunked, flush)
		if err == io.EOF {
			err = nil
		}
		if err == nil && chunked {
			_, err = w.WriteString("0\r\n\r\n")
		}
		return n, err
	case in.Length > 0:
		n, err := copyIdentity(w, r, in.Length, chunked, flush)
		if err == io.EOF {
			err = ErrShortBody
		}
		if err == nil && chunked {
			_, err = w.WriteString("0\r\n\r\n")
		}
		return n, err
	}
	if chunked {
		_, err := w.WriteString("0\r\n\r\n")
		return 0, err
	}
	return 0, nil
}

// copyIdentity copies n bytes (all until EOF if n < 0) from r's buffer to
// w, as chunks if chunked. It returns io.EOF if r ended.
func copyIdentity(w *bufio.Writer, r *bufio.Reader, n int64, chunked, flush bool) (int64, error) {
	var done int64
	for n < 0 || done < n {
		if r.Buffered() == 0 {
			if flush && w.Buffered() > 0 {
				if err := w.Flush(); err != nil {
					return done, err
				}
			}
			if _, err := r.Peek(1); err != nil {
				return done, err
			}
		}
		k := r.Buffered()
		if n >= 0 && int64(k) > n-done {
			k = int(n - done)
		}
		p, _ := r.Peek(k)
		if chunked {
			if err := writeChunkSize(w, k); err != nil {
				return done, err
			}
		}
		if _, err := w.Write(p); err != nil {
			return done, err
		}
		if chunked {
			if _, err := w.WriteString("\r\n"); err != nil {
				return done, err
			}
		}
		r.Discard(k)
		done += int64(k)
	}
	return done, nil
}

func writeChunkSize(w *bufio.Writer, k int) error {
	var b [18]byte
	s := strconv.AppendInt(b[:0], int64(k), 16)
	s = append(s, '\r', '\n')
	_, err := w.Write(s)
	return err
}

// maxChunkLine bounds a chunk-size line with its extensions, and
// maxTrailer the trailer section.
const (
	maxChunkLine = 4 << 10
	maxTrailer   = 16 << 10
)

// copyChunked decodes a chunked body (RFC 9112 section 7.1) and writes it
// re-chunked with the same chunk boundaries; extensions are dropped (a
// proxy may ignore them), trailer fields pass through if well-formed.
func copyChunked(w *bufio.Writer, r *bufio.Reader, flush bool) (int64, error) {
	var done int64
	for {
		if err := flushIdle(w, r, flush); err != nil {
			return done, err
		}
		line, err := readLine(r, maxChunkLine)
		if err != nil {
			return done, err
		}
		size, err := parseChunkSize(line)
		if err != nil {
			return done, err
		}
		if size == 0 {
			break
		}
		if err := writeChunkSize(w, int(size)); err != nil {
			return done, err
		}
		n, err := copyIdentity(w, r, size, false, flush)
		done += n
		if err == io.EOF {
			return done, ErrShortBody
		}
		if err != nil {
			return done, err
		}
		if err := flushIdle(w, r, flush); err != nil {
			return done, err
		}
		if end, err := readLine(r, 2); err != nil || len(end) != 0 {
			if err == nil {
				err = bad("chunk data longer than its size")
			}
			return done, err
		}
		if _, err := w.WriteString("\r\n"); err != nil {
			return done, err
		}
	}
	if _, err := w.WriteString("0\r\n"); err != nil {
		return done, err
	}
	for total := 0; ; {
		if err := flushIdle(w, r, flush); err != nil {
			return done, err
		}
		line, err := readLine(r, maxTrailer-total)
		if err != nil {
			return done, err
		}
		total += len(line) + 2
		if len(line) == 0 {
			break
		}
		if !validTrailer(line) {
			return done, bad("malformed trailer field")
		}
		w.Write(line)
		w.WriteString("\r\n")
	}
	_, err := w.WriteString("\r\n")
	return done, err
}

// flushIdle flushes w, if flush is true, when r has nothing buffered: the
// next read waits for the peer, and what w holds must not wait with it.
func flushIdle(w *bufio.Writer, r *bufio.Reader, flush bool) error {
	if flush && r.Buffered() == 0 && w.Buffered() > 0 {
		return w.Flush()
	}
	return nil
}

// readLine reads one line of chunked framing without its CRLF, at most
// max bytes; the slice is valid until r is read again. A bare LF is
// refused here (unlike in heads): lenient chunk parsing is a known way to
// smuggle requests past a proxy, and net/http refuses it too.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == bufio.ErrBufferFull || len(line) > max+2 {
		return nil, bad("line too long")
	}
	if err == io.EOF {
		return nil, ErrShortBody
	}
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, bad("chunked line ends with a bare LF")
	}
	return line[:len(line)-2], nil
}

// parseChunkSize parses chunk-size [ chunk-ext ] (hexadecimal, below 2^56).
func parseChunkSize(line []byte) (int64, error) {
	var n int64
	i := 0
	for ; i < len(line); i++ {
		c := line[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			goto ext
		}
		if i >= 14 {
			return 0, bad("chunk too large")
		}
		n = n<<4 | int64(d)
	}
ext:
	if i == 0 {
		return 0, bad("malformed chunk size")
	}
	rest := trimOWS(line[i:])
	if len(rest) > 0 && rest[0] != ';' {
		return 0, bad("malformed chunk size")
	}
	for _, c := range rest {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return 0, bad("malformed chunk extension")
		}
	}
	return n, nil
}

func validTrailer(l []byte) bool {
	for i, c := range l {
		if c == ':' {
			if !isToken(l[:i]) {
				return false
			}
			for _, c := range l[i+1:] {
				if (c < ' ' && c != '\t') || c == 0x7f {
					return false
				}
			}
			return true
		}
	}
	return false
}
