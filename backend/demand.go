package backend

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/shoal-project/shoal/control/lb"
)

// Header names of the request and response.
const (
	// HeaderDemand carries a request's demand, `cpu=0.25,io=0.01` (see
	// Demand). On a request it sets the demand instead of a draw from the
	// server's distributions, so that a load generator can give every
	// compared system the same demands (common random numbers); on the
	// response it is the demand used.
	HeaderDemand = "X-Shoal-Demand"
	// HeaderServiceTime is the response header with the seconds the request
	// spent at the server, from arrival to completion (a decimal float).
	HeaderServiceTime = lb.HeaderServiceTime
)

// Demand is the work of one request, as a cluster call's local work
// (cluster/call.go: call.cpu, call.io).
type Demand struct {
	// CPU is the CPU work in core-seconds at speed 1.
	CPU float64
	// IO is the I/O time in seconds at I/O speed 1.
	IO float64
}

// String formats d as the X-Shoal-Demand header does: `cpu=0.25,io=0.01`.
func (d Demand) String() string {
	return string(d.AppendText(make([]byte, 0, 48)))
}

// AppendText appends the header form of d to b (shortest round-trip
// decimals) and returns the extended buffer; it allocates only to grow b.
func (d Demand) AppendText(b []byte) []byte {
	b = append(b, "cpu="...)
	b = strconv.AppendFloat(b, d.CPU, 'g', -1, 64)
	b = append(b, ",io="...)
	return strconv.AppendFloat(b, d.IO, 'g', -1, 64)
}

// ParseDemand parses the X-Shoal-Demand header form: comma-separated
// key=value pairs with keys cpu (core-seconds at speed 1) and io (seconds
// at I/O speed 1), each at most once, in any order, values decimal floats in
// [0, MaxDemand]; an absent key is 0. Spaces around pairs are ignored.
// Examples: `cpu=0.25,io=0.01`, `cpu=0.1`, `io=0.002, cpu=0`. It does not
// allocate on valid input.
func ParseDemand(s string) (Demand, error) {
	var d Demand
	var seenCPU, seenIO bool
	if strings.TrimSpace(s) == "" {
		return d, errors.New("empty demand (want e.g. cpu=0.25,io=0.01)")
	}
	for rest := s; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, ",")
		pair = strings.TrimSpace(pair)
		key, val, ok := strings.Cut(pair, "=")
		if !ok {
			return Demand{}, fmt.Errorf("demand %q: pair %q is not key=value (want e.g. cpu=0.25,io=0.01)", s, pair)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		var dst *float64
		switch key {
		case "cpu":
			if seenCPU {
				return Demand{}, fmt.Errorf("demand %q: cpu given twice", s)
			}
			seenCPU, dst = true, &d.CPU
		case "io":
			if seenIO {
				return Demand{}, fmt.Errorf("demand %q: io given twice", s)
			}
			seenIO, dst = true, &d.IO
		default:
			return Demand{}, fmt.Errorf("demand %q: unknown key %q (want cpu or io)", s, key)
		}
		x, err := strconv.ParseFloat(val, 64)
		if err != nil || !(x >= 0 && x <= MaxDemand) || math.IsNaN(x) {
			return Demand{}, fmt.Errorf("demand %q: %s must be a number of seconds in [0, %g], got %q", s, key, float64(MaxDemand), val)
		}
		*dst = x
	}
	return d, nil
}
