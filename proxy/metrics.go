package proxy

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/shoal-project/shoal/buildinfo"
)

// metrics are the proxy's Prometheus metrics, in their own registry.
type metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec   // backend, code (class: 2xx ... 5xx)
	errors     *prometheus.CounterVec   // backend, kind
	retries    *prometheus.CounterVec   // backend (the one that failed)
	probes     *prometheus.CounterVec   // backend, result
	ejections  *prometheus.CounterVec   // backend
	duration   *prometheus.HistogramVec // backend: until the response is complete
	headers    *prometheus.HistogramVec // backend: until the response headers (task duration)
	decisions  prometheus.Counter
	decideTime prometheus.Histogram
	learnTime  prometheus.Histogram // online training only
	reward     prometheus.Gauge
	updates    prometheus.Gauge
	// Admission (lb.Admission).
	queued      prometheus.Counter
	queueWait   prometheus.Histogram
	shedFull    prometheus.Counter
	shedTimeout prometheus.Counter
}

// Error kinds of shoal_proxy_errors_total.
const (
	kindConnect    = "connect"    // dialling the backend failed
	kindTimeout    = "timeout"    // no response headers in time
	kindTransport  = "transport"  // the connection broke
	kindNoBackend  = "no_backend" // nothing to send the request to
	kindClientGone = "client_gone"
)

// latencyBuckets span 100 µs to about 100 s.
var latencyBuckets = prometheus.ExponentialBuckets(1e-4, 2, 21)

func newMetrics(p *Proxy) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shoal_proxy_requests_total",
		Help: "Requests answered by a backend, by backend and status class."}, []string{"backend", "code"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shoal_proxy_errors_total",
		Help: "Attempts that got no answer, by backend and kind (connect, timeout, transport, no_backend, client_gone)."}, []string{"backend", "kind"})
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shoal_proxy_retries_total",
		Help: "Requests retried on another backend after a connection failure at this one."}, []string{"backend"})
	m.probes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shoal_proxy_probes_total",
		Help: "Load probes (policy prequal), by backend and result (answered, failed, dropped: the probe queue was full)."}, []string{"backend", "result"})
	m.ejections = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shoal_proxy_ejections_total",
		Help: "Times a backend was ejected after consecutive failures."}, []string{"backend"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shoal_proxy_request_duration_seconds",
		Help: "Time from sending a request to a backend until its response was complete.", Buckets: latencyBuckets}, []string{"backend"})
	m.headers = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shoal_proxy_response_header_seconds",
		Help: "Time from sending a request to a backend until its response headers (the task duration the agent sees).", Buckets: latencyBuckets}, []string{"backend"})
	m.decisions = prometheus.NewCounter(prometheus.CounterOpts{Name: "shoal_proxy_agent_decisions_total",
		Help: "Decisions of the Distr-LB agent (new weights)."})
	m.decideTime = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "shoal_proxy_agent_decision_seconds",
		Help: "Time the agent took to decide.", Buckets: prometheus.ExponentialBuckets(1e-6, 2, 20)})
	m.learnTime = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "shoal_proxy_agent_learn_seconds",
		Help: "Time the online learner took per period (storing the transition and its updates).", Buckets: prometheus.ExponentialBuckets(1e-5, 2, 20)})
	m.reward = prometheus.NewGauge(prometheus.GaugeOpts{Name: "shoal_proxy_agent_reward",
		Help: "The online learner's reward for the last period (unscaled)."})
	m.updates = prometheus.NewGauge(prometheus.GaugeOpts{Name: "shoal_proxy_agent_updates",
		Help: "Gradient updates of the online learner so far."})
	m.queued = prometheus.NewCounter(prometheus.CounterOpts{Name: "shoal_proxy_queued_total",
		Help: "Requests that found every backend at admission.max_requests and waited in the queue."})
	m.queueWait = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "shoal_proxy_queue_wait_seconds",
		Help: "Time queued requests waited, until a backend, the queue timeout or their client's leaving.", Buckets: latencyBuckets})
	shed := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shoal_proxy_shed_total",
		Help: "Requests answered 503 with Retry-After by admission, by reason: queue_full (every backend full and admission.max_pending waiting) or queue_timeout (waited admission.queue_timeout)."},
		[]string{"reason"})
	m.shedFull, m.shedTimeout = shed.WithLabelValues("queue_full"), shed.WithLabelValues("queue_timeout")
	bi := buildinfo.Read()
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "shoal_build_info",
		Help: "Always 1; the labels say which build of shoal is running (as 'shoal version').",
		ConstLabels: prometheus.Labels{"version": bi.Version, "revision": bi.Revision,
			"modified": strconv.FormatBool(bi.Dirty), "goversion": bi.Go}})
	build.Set(1)
	m.reg.MustRegister(build, m.requests, m.errors, m.retries, m.probes, m.ejections, m.duration, m.headers, m.decisions, m.decideTime,
		m.learnTime, m.reward, m.updates, m.queued, m.queueWait, shed,
		&stateCollector{p: p}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// forget drops the series of a backend that a reload removed.
func (m *metrics) forget(name string) {
	m.requests.DeletePartialMatch(prometheus.Labels{"backend": name})
	m.errors.DeletePartialMatch(prometheus.Labels{"backend": name})
	m.retries.DeleteLabelValues(name)
	m.probes.DeletePartialMatch(prometheus.Labels{"backend": name})
	m.ejections.DeleteLabelValues(name)
	m.duration.DeleteLabelValues(name)
	m.headers.DeleteLabelValues(name)
}

// backendMetrics are one backend's series, resolved once so the request
// path does no label lookups.
type backendMetrics struct {
	codes             [6]prometheus.Counter // index status/100; 0 for anything else
	duration, headers prometheus.Observer
	connect, timeout  prometheus.Counter
	transport, gone   prometheus.Counter
	retries           prometheus.Counter
	ejections         prometheus.Counter
	probes            prometheus.Counter // load probes answered
	probeFailed       prometheus.Counter // load probes without an answer
	probeDropped      prometheus.Counter // load probes not sent: the queue was full
}

func (m *metrics) forBackend(name string) *backendMetrics {
	b := &backendMetrics{duration: m.duration.WithLabelValues(name), headers: m.headers.WithLabelValues(name),
		connect: m.errors.WithLabelValues(name, kindConnect), timeout: m.errors.WithLabelValues(name, kindTimeout),
		transport: m.errors.WithLabelValues(name, kindTransport), gone: m.errors.WithLabelValues(name, kindClientGone),
		retries: m.retries.WithLabelValues(name), ejections: m.ejections.WithLabelValues(name),
		probes: m.probes.WithLabelValues(name, "answered"), probeFailed: m.probes.WithLabelValues(name, "failed"),
		probeDropped: m.probes.WithLabelValues(name, "dropped")}
	for c := range b.codes {
		class := "other"
		if c > 0 {
			class = string(rune('0'+c)) + "xx"
		}
		b.codes[c] = m.requests.WithLabelValues(name, class)
	}
	return b
}

func (b *backendMetrics) answered(code int, headers, total time.Duration) {
	c := code / 100
	if c < 1 || c > 5 {
		c = 0
	}
	b.headers.Observe(headers.Seconds())
	b.duration.Observe(total.Seconds())
	b.codes[c].Inc() // last: a counted request has its durations recorded
}

// stateCollector reports gauges read from the current generation at scrape
// time: weights, health and requests in flight per backend.
type stateCollector struct{ p *Proxy }

var (
	descWeight = prometheus.NewDesc("shoal_proxy_backend_weight",
		"The weight the selector uses now (learned by the agent, or configured).", []string{"backend"}, nil)
	descConfigured = prometheus.NewDesc("shoal_proxy_backend_configured_weight",
		"The weight in the configuration file.", []string{"backend"}, nil)
	descUp = prometheus.NewDesc("shoal_proxy_backend_up",
		"1 if the backend may receive requests (not ejected, active check passing).", []string{"backend"}, nil)
	descInFlight = prometheus.NewDesc("shoal_proxy_in_flight",
		"Requests of this proxy in progress at the backend.", []string{"backend"}, nil)
	descQueue = prometheus.NewDesc("shoal_proxy_queue_length",
		"Requests waiting in the queue for a backend with room (admission).", nil, nil)
	descClients = prometheus.NewDesc("shoal_proxy_client_connections",
		"Client connections open (at most max_connections).", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descWeight
	ch <- descConfigured
	ch <- descUp
	ch <- descInFlight
	ch <- descQueue
	ch <- descClients
}

// Collect implements prometheus.Collector.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	g := c.p.gen.Load()
	if g == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(g.pool.queued()))
	ch <- prometheus.MustNewConstMetric(descClients, prometheus.GaugeValue, float64(c.p.clients.Load()))
	for _, s := range g.pool.state(time.Now()) {
		up := 0.0
		if s.Healthy {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(descWeight, prometheus.GaugeValue, s.Weight, s.URL)
		ch <- prometheus.MustNewConstMetric(descConfigured, prometheus.GaugeValue, s.Configured, s.URL)
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up, s.URL)
		ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(s.InFlight), s.URL)
	}
}
