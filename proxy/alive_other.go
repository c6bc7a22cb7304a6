//go:build !unix

package proxy

// alive cannot peek without blocking here: the request goes out and a
// closed connection shows as a transport error.
func alive(*upstreamConn) bool { return true }

// gone cannot peek here either: a client that went away is found when
// its response is written.
func (c *clientConn) gone() bool { return false }
