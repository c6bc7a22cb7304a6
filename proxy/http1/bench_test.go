package http1

import (
	"bufio"
	"bytes"
	"testing"
)

// A browser-like request and nginx's response to it: the heads the proxy
// parses per request.
var (
	benchRequest = []byte("GET /api/v1/items?id=42 HTTP/1.1\r\nHost: shop.example.com\r\n" +
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n" +
		"Accept: application/json\r\nAccept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate, br\r\n" +
		"Connection: keep-alive\r\nCookie: session=0123456789abcdef\r\n\r\n")
	benchResponse = []byte("HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Tue, 24 Nov 2026 00:00:00 GMT\r\n" +
		"Content-Type: application/json\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\n")
)

func benchHead(b *testing.B, msg []byte, read func(*Head, *bufio.Reader) error) {
	r := bytes.NewReader(msg)
	br := bufio.NewReaderSize(r, 4096)
	var h Head
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(msg)
		br.Reset(r)
		if err := read(&h, br); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadRequest(b *testing.B) {
	benchHead(b, benchRequest, func(h *Head, br *bufio.Reader) error { return h.ReadRequest(br, 64<<10) })
}

func BenchmarkReadResponse(b *testing.B) {
	benchHead(b, benchResponse, func(h *Head, br *bufio.Reader) error { return h.ReadResponse(br, 64<<10) })
}
