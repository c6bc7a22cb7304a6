// Package http1 reads and relays HTTP/1.1 messages (RFC 9112) without
// allocating per message: a Head holds a request or response head in one
// reusable buffer, fields are slices of it, and Copy moves a body from one
// connection's buffer to another's, re-framing it if needed. It is the wire
// layer of Shoal's proxy, which adds the forwarding rules (RFC 9110 section
// 7.6) on top.
//
// The usage loop of a server connection:
//
//	var h http1.Head
//	for {
//		if err := h.ReadRequest(br, 64<<10); err != nil { ... answer err.(*http1.Error).Status, close }
//		in := h.RequestFraming()
//		... write a head, then http1.Copy(bw, br, in, chunked, true)
//	}
//
// Parsing is strict where leniency lets two parsers disagree about where a
// message ends (request smuggling): a request with both Transfer-Encoding
// and Content-Length, differing Content-Lengths, obs-fold, whitespace
// before a field's colon, bare CR, and control characters in values are
// refused, as net/http refuses them.
package http1

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// Error is a message that cannot be processed; Status is the response a
// server gives (400, 417, 431, 501 or 505).
type Error struct {
	Status int
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("%d: %s", e.Status, e.Reason) }

func bad(reason string) error { return &Error{Status: 400, Reason: reason} }

// Field is one header field line, trimmed of surrounding whitespace.
type Field struct{ Name, Value []byte }

// Head is a parsed request or response head. Its slices point into its own
// buffer and stay valid until the next Read; reusing a Head allocates
// nothing once its buffers have grown.
type Head struct {
	// Request line (requests only).
	Method, Target []byte
	// Status line (responses only).
	Status int
	Reason []byte
	// Minor is the protocol's minor version: HTTP/1.<Minor>.
	Minor int
	// Fields are the header fields in order.
	Fields []Field

	// Derived from the fields.
	ContentLength int64 // -1 if absent
	Chunked       bool  // Transfer-Encoding ends in chunked
	OtherCoding   bool  // Transfer-Encoding without final chunked (responses only)
	Close         bool  // the connection closes after this message
	KeepAlive     bool  // Connection: keep-alive (matters for HTTP/1.0)
	Upgrade       bool  // Connection: upgrade and an Upgrade field
	Expect100     bool  // Expect: 100-continue
	Hosts         int   // number of Host fields
	Host          []byte

	buf        []byte
	spans      [][2]int
	connTokens [][2]int // field names listed in Connection, as spans of buf
}

// ReadRequest reads a request head from r, at most max bytes of it.
// io.EOF means the connection closed cleanly before a request began.
func (h *Head) ReadRequest(r *bufio.Reader, max int) error {
	if err := h.read(r, max, true); err != nil {
		return err
	}
	if err := h.parseRequestLine(h.line(0)); err != nil {
		return err
	}
	if err := h.parseFields(); err != nil {
		return err
	}
	return h.checkRequest()
}

// ReadResponse reads a response head from r, at most max bytes of it.
func (h *Head) ReadResponse(r *bufio.Reader, max int) error {
	if err := h.read(r, max, false); err != nil {
		return err
	}
	if err := h.parseStatusLine(h.line(0)); err != nil {
		return err
	}
	if err := h.parseFields(); err != nil {
		return err
	}
	if h.Chunked && h.ContentLength >= 0 {
		h.ContentLength = -1 // Transfer-Encoding overrides (RFC 9112 section 6.3, item 3)
	}
	if h.Minor == 0 && (h.Chunked || h.OtherCoding) {
		// Transfer-Encoding in HTTP/1.0 means faulty framing (RFC 9112
		// section 6.1): read until the close, as net/http does.
		h.Chunked, h.OtherCoding, h.Close = false, true, true
	}
	return nil
}

// IsConnectionOption reports whether name was listed in the Connection
// field, which makes it hop-by-hop (RFC 9110 section 7.6.1).
func (h *Head) IsConnectionOption(name []byte) bool {
	for _, s := range h.connTokens {
		if bytes.EqualFold(h.buf[s[0]:s[1]], name) {
			return true
		}
	}
	return false
}

func (h *Head) reset() {
	*h = Head{buf: h.buf[:0], spans: h.spans[:0], Fields: h.Fields[:0], connTokens: h.connTokens[:0], ContentLength: -1}
}

func (h *Head) line(i int) []byte { return h.buf[h.spans[i][0]:h.spans[i][1]] }

// errTooLarge is the Error for a head longer than the limit.
var errTooLarge = &Error{Status: 431, Reason: "head too large"}

// read copies the head's lines into h.buf and records their spans without
// the line ends. Empty lines before a request line are skipped (RFC 9112
// section 2.2).
func (h *Head) read(r *bufio.Reader, max int, request bool) error {
	h.reset()
	if r.Buffered() == 0 {
		if _, err := r.Peek(1); err != nil {
			return err // what the loop below returns for a read failing first
		}
	}
	if h.readBuffered(r, max) {
		return nil
	}
	for skipped := 0; ; {
		start := len(h.buf)
		for {
			frag, err := r.ReadSlice('\n')
			if len(h.buf)+len(frag) > max {
				return errTooLarge
			}
			h.buf = append(h.buf, frag...)
			if err == nil {
				break
			}
			if err != bufio.ErrBufferFull {
				if err == io.EOF && len(h.buf) > 0 {
					err = io.ErrUnexpectedEOF
				}
				return err
			}
		}
		end := len(h.buf) - 1 // drop LF; a CR before it too (a lone LF is accepted, RFC 9112 section 2.2)
		if end > start && h.buf[end-1] == '\r' {
			end--
		}
		if bytes.IndexByte(h.buf[start:end], '\r') >= 0 {
			return bad("bare CR")
		}
		if end == start {
			if len(h.spans) == 0 && request && skipped < 4 {
				skipped++
				h.buf = h.buf[:0] // a stray CRLF between requests
				continue
			}
			if len(h.spans) == 0 {
				return bad("empty start line")
			}
			return nil
		}
		h.spans = append(h.spans, [2]int{start, end})
	}
}

// readBuffered is read for a head that is all in r's buffer, the common
// case: its lines are found in place and copied at once. If the head is
// not all there, or is not plain (an empty line first, a bare CR, longer
// than max), it reports false having consumed nothing, and read's loop
// takes the head line by line as it would have anyway.
func (h *Head) readBuffered(r *bufio.Reader, max int) bool {
	b, _ := r.Peek(r.Buffered())
	if len(b) == 0 || b[0] == '\r' || b[0] == '\n' {
		return false
	}
	for start := 0; ; {
		nl := bytes.IndexByte(b[start:], '\n')
		next := start + nl + 1
		if nl < 0 || next > max {
			h.spans = h.spans[:0]
			return false
		}
		end := next - 1
		if end > start && b[end-1] == '\r' {
			end--
		}
		if bytes.IndexByte(b[start:end], '\r') >= 0 {
			h.spans = h.spans[:0]
			return false
		}
		if end == start { // the empty line that ends the head
			h.buf = append(h.buf[:0], b[:next]...)
			r.Discard(next)
			return true
		}
		h.spans = append(h.spans, [2]int{start, end})
		start = next
	}
}

// parseRequestLine: method SP request-target SP HTTP-version (RFC 9112 section 3).
func (h *Head) parseRequestLine(l []byte) error {
	sp1 := bytes.IndexByte(l, ' ')
	if sp1 <= 0 {
		return bad("malformed request line")
	}
	rest := l[sp1+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if sp2 <= 0 {
		return bad("malformed request line")
	}
	h.Method, h.Target = l[:sp1], rest[:sp2]
	if !isToken(h.Method) {
		return bad("invalid method")
	}
	if !validTarget(h.Target) {
		return bad("invalid request target")
	}
	var err error
	h.Minor, err = parseVersion(rest[sp2+1:])
	return err
}

// validTarget accepts the origin-form, the absolute-form with an http or
// https URI, and the asterisk-form (RFC 9112 section 3.2); the
// authority-form is only for CONNECT, which a gateway does not serve.
func validTarget(t []byte) bool {
	for _, c := range t {
		if c <= ' ' || c == 0x7f {
			return false
		}
	}
	switch {
	case len(t) > 0 && t[0] == '/':
		return true
	case string(t) == "*":
		return true
	}
	i := bytes.Index(t, []byte("://"))
	if i < 0 || i+3 == len(t) || t[i+3] == '/' {
		return false
	}
	scheme := t[:i]
	return bytes.EqualFold(scheme, []byte("http")) || bytes.EqualFold(scheme, []byte("https"))
}

// parseStatusLine: HTTP-version SP status-code SP [reason-phrase] (RFC 9112 section 4).
func (h *Head) parseStatusLine(l []byte) error {
	if len(l) < 12 || l[8] != ' ' {
		return bad("malformed status line")
	}
	var err error
	if h.Minor, err = parseVersion(l[:8]); err != nil {
		return err
	}
	c := l[9:12]
	if c[0] < '1' || c[0] > '5' || c[1] < '0' || c[1] > '9' || c[2] < '0' || c[2] > '9' {
		return bad("malformed status code")
	}
	h.Status = int(c[0]-'0')*100 + int(c[1]-'0')*10 + int(c[2]-'0')
	switch {
	case len(l) == 12:
	case l[12] == ' ':
		h.Reason = l[13:]
	default:
		return bad("malformed status line")
	}
	return nil
}

// parseVersion accepts HTTP/1.0 and HTTP/1.1; other 1.x as 1.1; other
// majors get 505.
func parseVersion(v []byte) (int, error) {
	if len(v) != 8 || string(v[:5]) != "HTTP/" || v[6] != '.' || !isDigit(v[5]) || !isDigit(v[7]) {
		return 0, bad("malformed HTTP version")
	}
	if v[5] != '1' {
		return 0, &Error{Status: 505, Reason: "HTTP version not supported"}
	}
	if v[7] == '0' {
		return 0, nil
	}
	return 1, nil
}

// parseFields parses the field lines (RFC 9112 section 5) and derives
// framing and connection options from them.
func (h *Head) parseFields() error {
	var cls []byte
	for i := 1; i < len(h.spans); i++ {
		l := h.line(i)
		if l[0] == ' ' || l[0] == '\t' {
			return bad("obsolete line folding")
		}
		colon := bytes.IndexByte(l, ':')
		if colon <= 0 || !isToken(l[:colon]) {
			return bad("malformed header field")
		}
		vs := colon + 1
		for vs < len(l) && (l[vs] == ' ' || l[vs] == '\t') {
			vs++
		}
		name, value := l[:colon], trimOWS(l[vs:])
		if !validValue(value) {
			return bad("invalid character in field value")
		}
		h.Fields = append(h.Fields, Field{Name: name, Value: value})
		switch n := len(name); {
		case n != 4 && n != 6 && n != 10 && n != 14 && n != 17:
			// None of the fields below: most fields are decided by
			// their length alone.
		case bytes.EqualFold(name, hdrContentLength):
			if cls != nil && !bytes.Equal(cls, value) {
				return bad("conflicting Content-Length")
			}
			cls = value
		case bytes.EqualFold(name, hdrTransferEncoding):
			if h.Chunked || h.OtherCoding {
				return bad("repeated Transfer-Encoding")
			}
			if last := lastListItem(value); bytes.EqualFold(last, []byte("chunked")) {
				h.Chunked = true
			} else {
				h.OtherCoding = true
			}
			if h.Chunked && !bytes.EqualFold(value, []byte("chunked")) {
				h.OtherCoding = true // a coding under chunked: only a response may carry it
			}
		case bytes.EqualFold(name, hdrConnection):
			h.parseConnection(h.spans[i][0]+vs, value)
		case bytes.EqualFold(name, hdrHost):
			h.Hosts++
			h.Host = value
		case bytes.EqualFold(name, hdrExpect):
			if !bytes.EqualFold(value, []byte("100-continue")) {
				return &Error{Status: 417, Reason: "unsupported expectation"}
			}
			h.Expect100 = true
		}
	}
	if cls != nil {
		n, ok := parseLength(cls)
		if !ok {
			return bad("invalid Content-Length")
		}
		h.ContentLength = n
	}
	if h.Upgrade && !h.hasField(hdrUpgrade) {
		h.Upgrade = false
	}
	if h.Minor == 0 && !h.KeepAlive {
		h.Close = true
	}
	return nil
}

// parseConnection records the options of a Connection field whose value
// starts at buf offset base.
func (h *Head) parseConnection(base int, value []byte) {
	for i := 0; i < len(value); {
		j := i
		for j < len(value) && value[j] != ',' {
			j++
		}
		a, b := i, j
		for a < b && (value[a] == ' ' || value[a] == '\t') {
			a++
		}
		for b > a && (value[b-1] == ' ' || value[b-1] == '\t') {
			b--
		}
		if b > a {
			tok := value[a:b]
			switch {
			case bytes.EqualFold(tok, []byte("close")):
				h.Close = true
			case bytes.EqualFold(tok, []byte("keep-alive")):
				h.KeepAlive = true
			case bytes.EqualFold(tok, hdrUpgrade):
				h.Upgrade = true
			}
			h.connTokens = append(h.connTokens, [2]int{base + a, base + b})
		}
		i = j + 1
	}
}

// checkRequest applies the request-only rules: framing (RFC 9112 sections
// 6.1 and 6.3) and Host (RFC 9112 section 3.2).
func (h *Head) checkRequest() error {
	if h.Chunked || h.OtherCoding {
		switch {
		case h.Minor == 0:
			return bad("Transfer-Encoding in an HTTP/1.0 request")
		case h.ContentLength >= 0:
			return bad("both Transfer-Encoding and Content-Length")
		case h.OtherCoding:
			return &Error{Status: 501, Reason: "unsupported transfer coding"}
		}
	}
	if h.Minor == 1 && h.Hosts != 1 || h.Hosts > 1 {
		return bad("a request needs exactly one Host field")
	}
	return nil
}

func (h *Head) hasField(name []byte) bool {
	for _, f := range h.Fields {
		if bytes.EqualFold(f.Name, name) {
			return true
		}
	}
	return false
}

var (
	hdrContentLength    = []byte("Content-Length")
	hdrTransferEncoding = []byte("Transfer-Encoding")
	hdrConnection       = []byte("Connection")
	hdrHost             = []byte("Host")
	hdrExpect           = []byte("Expect")
	hdrUpgrade          = []byte("Upgrade")
)

// parseLength parses a Content-Length: decimal digits only, below 2^62.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func lastListItem(v []byte) []byte {
	if i := bytes.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	return trimOWS(v)
}

func trimOWS(v []byte) []byte {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}

// validValue reports whether a field value has no control character but
// HTAB (RFC 9110 section 5.5), eight bytes at a time while none is near.
func validValue(v []byte) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for len(v) >= 8 {
		x := binary.LittleEndian.Uint64(v)
		below := (x - lo*0x20) &^ x // high bit set where a byte is below 0x20 (exact as a whole)
		y := x ^ (lo * 0x7f)
		del := (y - lo) &^ y // ... where a byte is 0x7f
		if (below|del)&hi != 0 {
			break // HTAB, or not valid: byte by byte
		}
		v = v[8:]
	}
	for _, c := range v {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isToken reports whether s is a token (RFC 9110 section 5.6.2).
func isToken(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	for _, c := range s {
		if !tchar[c] {
			return false
		}
	}
	return true
}

var tchar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()
