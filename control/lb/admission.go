package lb

import (
	"fmt"
	"time"
)

// Admission bounds what an LB point lets through, as production balancers
// do under overload, the same in the proxy (package proxy) and in the
// simulator's LB points (package cluster):
//
//   - MaxRequests caps each backend's requests in flight from this LB point
//     (HAProxy's server maxconn, nginx's max_conns; Envoy's max_requests is
//     the same cap per cluster). A backend at its cap is not up for the
//     selector, so every selector, learned ones included, picks only among
//     backends with room. Hashing selectors (Hashing) are the exception:
//     their full backends stay up (no table rebuild as backends fill and
//     free), and a request whose backend is full waits for that backend,
//     as under HAProxy's hash balancing with maxconn: the affinity holds.
//   - A request that finds every up backend at its cap waits in the LB
//     point's queue, first come first served, for at most QueueTimeout
//     (HAProxy's timeout queue); a backend's freed slot goes to the oldest
//     waiting request that can take it, picked for by the selector then.
//   - Beyond MaxPending waiting requests (Envoy's max_pending_requests), or
//     after QueueTimeout, the request is shed: the proxy answers 503 with
//     Retry-After, the simulator fails the call as shed.
//
// Zero fields take the defaults (DefaultMaxRequests, ...); a negative
// MaxPending means no queue (shed at once when every backend is full).
type Admission struct {
	// MaxRequests caps the requests in flight from this LB point at each
	// backend (default 32).
	MaxRequests int `yaml:"max_requests" json:"max_requests"`
	// MaxPending bounds the requests waiting in the LB point's queue
	// (default 64; -1: no queue).
	MaxPending int `yaml:"max_pending" json:"max_pending"`
	// QueueTimeout bounds a request's wait in the queue (default 1s).
	QueueTimeout time.Duration `yaml:"queue_timeout" json:"queue_timeout"`
}

// Defaults of Admission: a backend is kept at most 32 requests deep (a
// processor-sharing server's latency grows with the requests it holds, so
// a deep backend queue is latency nobody asked for), and the LB point holds
// at most 64 more for at most a second, enough to keep backends busy
// between completions without making the requests it serves wait long.
const (
	DefaultMaxRequests  = 32
	DefaultMaxPending   = 64
	DefaultQueueTimeout = time.Second
)

// WithDefaults returns a with zero fields set to the defaults.
func (a Admission) WithDefaults() Admission {
	if a.MaxRequests == 0 {
		a.MaxRequests = DefaultMaxRequests
	}
	if a.MaxPending == 0 {
		a.MaxPending = DefaultMaxPending
	}
	if a.MaxPending == -1 {
		a.MaxPending = 0 // no queue
	}
	if a.QueueTimeout == 0 {
		a.QueueTimeout = DefaultQueueTimeout
	}
	return a
}

// Validate reports the first bad field of a, before or after WithDefaults,
// named under path (e.g. "admission").
func (a Admission) Validate(path string) error {
	switch {
	case a.MaxRequests < 0:
		return fmt.Errorf("%s.max_requests: must be >= 1 (0: the default, %d), got %d", path, DefaultMaxRequests, a.MaxRequests)
	case a.MaxPending < -1:
		return fmt.Errorf("%s.max_pending: must be >= 0 (0: the default, %d; -1: no queue), got %d", path, DefaultMaxPending, a.MaxPending)
	case a.QueueTimeout < 0:
		return fmt.Errorf("%s.queue_timeout: must be > 0 (0: the default, %v), got %v", path, DefaultQueueTimeout, a.QueueTimeout)
	}
	return nil
}
