package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/control/policy"
)

// Config is a proxy's configuration file (YAML, decoded strictly). Zero
// values take the defaults that Decode applies (see DefaultConfig).
//
//	listen: 127.0.0.1:8080
//	admin: 127.0.0.1:9090
//	name: lb0
//	policy: distr-lb
//	agent: {file: policy.slb}
//	backends:
//	  - {url: http://127.0.0.1:8081, weight: 1}
//	  - {url: http://127.0.0.1:8082, weight: 2}
//	admission: {max_requests: 16, max_pending: 64, queue_timeout: 1s}
type Config struct {
	// Listen is the address the proxy serves on (host:port).
	Listen string `yaml:"listen"`
	// Admin is the address of the admin listener (/metrics, /healthz,
	// /readyz, /status); empty: none.
	Admin string `yaml:"admin"`
	// Name is this proxy's LB point name: the policy network it runs by
	// default, and its name on the status page.
	Name string `yaml:"name"`
	// Policy names the selector, with its settings if any (prequal:
	// qrif=0.9, as 'shoal policies selector' lists them, which join
	// Params): a classical one (rr, wrr, wcmp, lsq, sed,
	// p2c, ecmp, least-request, peak-ewma) using the configured weights and
	// this proxy's own in-flight counts (peak-ewma: and its response
	// times); prequal, which probes the backends' lb.ProbePath; ring-hash
	// or maglev, which hash HashHeader; distr-lb: sed with the weights
	// a Distr-LB agent learns (Agent); or distr-lb-general: probing-sed
	// corrected by the general policy Shoal ships, or by the one in
	// Agent.File.
	Policy string `yaml:"policy"`
	// Params are the selector's parameters (e.g. prequal's qrif; 'shoal
	// policies selector' lists each one's, with its range).
	Params lb.Params `yaml:"params"`
	// Seed seeds the selector's random choices (ties, sampling).
	Seed uint64 `yaml:"seed"`
	// Agent configures the Distr-LB agent (policy distr-lb), or names a
	// general policy's file (policy distr-lb-general; without it, the
	// shipped one runs).
	Agent *AgentConfig `yaml:"agent"`
	// Backends are the servers behind the proxy, in the order a policy
	// file's networks expect.
	Backends []BackendConfig `yaml:"backends"`
	// HashHeader names the request header whose value is the affinity key
	// of the hashing policies (ring-hash, maglev); without it, or when a
	// request lacks it, the client's address is the key.
	HashHeader string `yaml:"hash_header"`
	// Retries is how many other backends a request may be retried on after
	// a connection failure (see Proxy for which requests are retried).
	Retries *int `yaml:"retries"`
	// Timeouts bound each phase of a request.
	Timeouts Timeouts `yaml:"timeouts"`
	// Health configures passive ejection and active checks.
	Health Health `yaml:"health"`
	// Admission bounds the requests in flight per backend and the queue in
	// the proxy beyond them (lb.Admission; on by default): a request that
	// finds every backend full waits at most queue_timeout, and is answered
	// 503 with Retry-After when the queue is full or its wait runs out.
	Admission lb.Admission `yaml:"admission"`
	// MaxConnections caps the client connections open at once (default
	// 4096, as nginx's worker_connections and HAProxy's maxconn cap
	// theirs): beyond it the proxy accepts no more until one closes, so
	// its memory is bounded whatever the clients do. It cannot change on
	// reload.
	MaxConnections int `yaml:"max_connections"`
}

// AgentConfig configures a Distr-LB agent.
type AgentConfig struct {
	// File is a policy file written by 'shoal train distr-lb'.
	File string `yaml:"file"`
	// LB names the policy's network to run (default: the proxy's name).
	LB string `yaml:"lb"`
	// Period is how often the agent decides (default: the policy's
	// training period, which it should be).
	Period time.Duration `yaml:"period"`
	// Train, if set, continues training the policy online from the
	// proxy's own traffic (lb.OnlineLearner).
	Train *OnlineTraining `yaml:"train"`
}

// OnlineTraining configures online training. Zero fields take the
// defaults of lb.OnlineConfig.
type OnlineTraining struct {
	// Save is where the trained policy is written, every SaveEvery and
	// when the agent stops (a reload or shutdown); empty: not saved.
	Save string `yaml:"save"`
	// SaveEvery is the interval of saves (default 1m).
	SaveEvery time.Duration `yaml:"save_every"`
	// LearningRate is the learners' step size (default 1e-4).
	LearningRate float64 `yaml:"learning_rate"`
	// CriticWarmup is the number of critic-only updates before the actor
	// learns (default 2000).
	CriticWarmup int `yaml:"critic_warmup"`
	// LearningStarts is the number of periods observed before learning
	// (default 400).
	LearningStarts int `yaml:"learning_starts"`
	// Deterministic acts with the policy's mean action instead of
	// sampling it (SAC's exploration).
	Deterministic bool `yaml:"deterministic"`
}

// BackendConfig is one backend server.
type BackendConfig struct {
	// URL is the backend's address, http://host:port; requests keep their
	// path and query.
	URL string `yaml:"url"`
	// Weight is the configured relative processing speed (default 1).
	Weight float64 `yaml:"weight"`
}

// Timeouts of the proxy. Zero takes the default; a negative value is an
// error.
type Timeouts struct {
	// Connect bounds dialling a backend (default 2s).
	Connect time.Duration `yaml:"connect"`
	// ResponseHeader bounds the wait for a backend's response headers after
	// the request was written (default 60s).
	ResponseHeader time.Duration `yaml:"response_header"`
	// Idle closes idle keep-alive connections, to clients and to backends
	// (default 90s).
	Idle time.Duration `yaml:"idle"`
	// ReadHeader bounds reading a client's request headers, which cuts off
	// slow clients (slowloris) (default 10s).
	ReadHeader time.Duration `yaml:"read_header"`
	// Shutdown bounds the drain of in-flight requests on SIGTERM (default 30s).
	Shutdown time.Duration `yaml:"shutdown"`
	// Probe bounds a load probe (policy prequal) (default 250ms).
	Probe time.Duration `yaml:"probe"`
}

// Health configures health tracking.
type Health struct {
	// Failures is the number of consecutive connection failures that
	// eject a backend (default 3; passive health checking).
	Failures int `yaml:"failures"`
	// Backoff is how long a first ejection lasts (default 1s); each
	// further ejection without a success in between doubles it, up to
	// MaxBackoff (default 30s).
	Backoff    time.Duration `yaml:"backoff"`
	MaxBackoff time.Duration `yaml:"max_backoff"`
	// Check, if set, polls every backend (active health checking).
	Check *HealthCheck `yaml:"check"`
}

// HealthCheck is an active health check: GET Path on every backend every
// Interval; a backend is down after Fall failed checks in a row and up
// again after Rise successful ones.
type HealthCheck struct {
	Path     string        `yaml:"path"`     // default /healthz
	Interval time.Duration `yaml:"interval"` // default 2s
	Timeout  time.Duration `yaml:"timeout"`  // default 1s
	Fall     int           `yaml:"fall"`     // default 2
	Rise     int           `yaml:"rise"`     // default 1
}

// Defaults of Config.
const (
	DefaultListen         = "127.0.0.1:8080"
	DefaultPolicy         = "sed"
	DefaultName           = "lb0"
	DefaultRetries        = 2
	DefaultConnect        = 2 * time.Second
	DefaultResponseHeader = 60 * time.Second
	DefaultIdle           = 90 * time.Second
	DefaultReadHeader     = 10 * time.Second
	DefaultShutdown       = 30 * time.Second
	DefaultProbe          = 250 * time.Millisecond
	DefaultFailures       = 3
	DefaultBackoff        = time.Second
	DefaultMaxBackoff     = 30 * time.Second
	DefaultMaxConnections = 4096
)

// PolicyDistrLB is the policy name of the Distr-LB agent.
const PolicyDistrLB = "distr-lb"

// PolicyDistrLBGeneral is the policy name of a general Distr-LB policy
// (lb.GeneralPolicy, 'shoal train distr-lb --family'): probing-sed with
// the weight corrections of the shipped policy, or of the one in
// Agent.File, decided inside the selector, so Agent's other fields do not
// apply.
const PolicyDistrLBGeneral = lb.GeneralName

// Decode reads a configuration strictly from r (unknown fields are errors),
// applies the defaults and validates it; name is the file name in errors.
// Policy names are checked against known, the classical selector names.
func Decode(r io.Reader, name string, known []string) (*Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read proxy config %s: %w", name, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("proxy config %s: empty file", name)
		}
		return nil, fmt.Errorf("proxy config %s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("proxy config %s: more than one YAML document", name)
	}
	// The name's settings first, so that the defaults see the agent file
	// a name gives.
	if err := c.settingsFromName(); err != nil {
		return nil, fmt.Errorf("proxy config %s: %w", name, err)
	}
	c.ApplyDefaults()
	if err := c.Validate(known); err != nil {
		return nil, fmt.Errorf("proxy config %s: %w", name, err)
	}
	return &c, nil
}

// settingsFromName moves the settings in the policy's name (policy:
// prequal:qrif=0.9, read by the policy registry) into Params, and a file
// (distr-lb-general:FILE) into the agent section, leaving the name alone.
func (c *Config) settingsFromName() error {
	s, err := policy.Parse(c.Policy)
	if err != nil || (len(s.Values) == 0 && s.File == "") {
		return nil // a plain name; Validate checks it
	}
	if s.Kind() != policy.Selector {
		return fmt.Errorf("policy: %s is a %s, not a request selector", s.Name(), s.Kind())
	}
	c.Policy = s.Name()
	for _, v := range s.Values {
		if _, set := c.Params[v.Name]; set {
			return fmt.Errorf("params.%s: also set in the policy's name (%s); set it in one place", v.Name, s)
		}
		if c.Params == nil {
			c.Params = lb.Params{}
		}
		c.Params[v.Name] = v.Num
	}
	if s.File != "" {
		if c.Agent != nil && c.Agent.File != "" {
			return fmt.Errorf("agent.file: also given in the policy's name; give it in one place")
		}
		if c.Agent == nil {
			c.Agent = &AgentConfig{}
		}
		c.Agent.File = s.File
	}
	return nil
}

// LoadConfig reads and validates a configuration file.
func LoadConfig(path string, known []string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open proxy config: %w", err)
	}
	defer f.Close()
	return Decode(f, path, known)
}

// ApplyDefaults fills in zero values.
func (c *Config) ApplyDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Policy == "" {
		c.Policy = DefaultPolicy
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.Retries == nil {
		r := DefaultRetries
		c.Retries = &r
	}
	for i := range c.Backends {
		if c.Backends[i].Weight == 0 {
			c.Backends[i].Weight = 1
		}
	}
	t := &c.Timeouts
	def(&t.Connect, DefaultConnect)
	def(&t.ResponseHeader, DefaultResponseHeader)
	def(&t.Idle, DefaultIdle)
	def(&t.ReadHeader, DefaultReadHeader)
	def(&t.Shutdown, DefaultShutdown)
	def(&t.Probe, DefaultProbe)
	h := &c.Health
	if h.Failures == 0 {
		h.Failures = DefaultFailures
	}
	def(&h.Backoff, DefaultBackoff)
	def(&h.MaxBackoff, DefaultMaxBackoff)
	if k := h.Check; k != nil {
		if k.Path == "" {
			k.Path = "/healthz"
		}
		def(&k.Interval, 2*time.Second)
		def(&k.Timeout, time.Second)
		if k.Fall == 0 {
			k.Fall = 2
		}
		if k.Rise == 0 {
			k.Rise = 1
		}
	}
	c.Admission = c.Admission.WithDefaults()
	if c.Agent != nil && c.Agent.LB == "" && c.Policy == PolicyDistrLB {
		c.Agent.LB = c.Name
	}
	if c.Agent != nil && c.Agent.Train != nil {
		def(&c.Agent.Train.SaveEvery, time.Minute)
	}
}

// Validate checks a configuration with defaults applied; every error names
// its field path, e.g. "backends[2].weight: must be > 0, got -1".
func (c *Config) Validate(known []string) error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	checkAddr := func(path, addr string) {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			bad(path, "want host:port, got %q", addr)
		}
	}
	checkAddr("listen", c.Listen)
	if c.Admin != "" {
		checkAddr("admin", c.Admin)
		if c.Admin == c.Listen {
			bad("admin", "must differ from listen (%s)", c.Listen)
		}
	}
	switch {
	case c.Policy == PolicyDistrLB:
		if c.Agent == nil || c.Agent.File == "" {
			bad("agent.file", "policy distr-lb needs a policy file")
		}
	case c.Policy == PolicyDistrLBGeneral:
		switch a := c.Agent; {
		case a == nil:
			// the shipped policy
		case a.File == "":
			bad("agent.file", "policy %s with an agent section needs a policy file (leave the section out for the shipped policy)", c.Policy)
		case a.LB != "" || a.Period != 0 || a.Train != nil:
			bad("agent", "policy %s reads only agent.file (its network serves every LB point, at the period in the file, without online training)", c.Policy)
		}
	case slices.Contains(known, c.Policy):
		if c.Agent != nil {
			bad("agent", "only used by policies distr-lb and distr-lb-general, not %s", c.Policy)
		}
	default:
		all := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(known), PolicyDistrLB, PolicyDistrLBGeneral))))
		if _, err := policy.Parse(c.Policy); err != nil && strings.Contains(c.Policy, ":") {
			bad("policy", "%v", err) // a setting out of range, say
		} else {
			bad("policy", "unknown policy %q (known: %s)", c.Policy, strings.Join(all, ", "))
		}
	}
	if a := c.Agent; a != nil && a.Period < 0 {
		bad("agent.period", "must be >= 0, got %v", a.Period)
	}
	if a := c.Agent; a != nil && a.Train != nil {
		t := a.Train
		switch {
		case t.SaveEvery < 0:
			bad("agent.train.save_every", "must be > 0, got %v", t.SaveEvery)
		case t.LearningRate < 0 || math.IsNaN(t.LearningRate):
			bad("agent.train.learning_rate", "must be > 0, got %v", t.LearningRate)
		case t.CriticWarmup < 0:
			bad("agent.train.critic_warmup", "must be >= 0, got %d", t.CriticWarmup)
		case t.LearningStarts < 0:
			bad("agent.train.learning_starts", "must be >= 0, got %d", t.LearningStarts)
		}
	}
	if len(c.Backends) == 0 {
		bad("backends", "need at least one backend")
	}
	seen := map[string]int{}
	for i, b := range c.Backends {
		path := fmt.Sprintf("backends[%d]", i)
		u, err := url.Parse(b.URL)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "http"):
			bad(path+".url", "want http://host:port, got %q", b.URL)
		case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
			bad(path+".url", "must be only scheme, host and port, got %q", b.URL)
		}
		if j, dup := seen[b.URL]; dup {
			bad(path+".url", "same as backends[%d]", j)
		}
		seen[b.URL] = i
		if !(b.Weight > 0) || math.IsInf(b.Weight, 0) {
			bad(path+".weight", "must be > 0, got %g", b.Weight)
		}
	}
	if c.MaxConnections < 0 {
		bad("max_connections", "must be >= 1, got %d", c.MaxConnections)
	}
	if *c.Retries < 0 {
		bad("retries", "must be >= 0, got %d", *c.Retries)
	}
	for _, d := range []struct {
		path string
		v    time.Duration
	}{
		{"timeouts.connect", c.Timeouts.Connect}, {"timeouts.response_header", c.Timeouts.ResponseHeader},
		{"timeouts.idle", c.Timeouts.Idle}, {"timeouts.read_header", c.Timeouts.ReadHeader},
		{"timeouts.shutdown", c.Timeouts.Shutdown}, {"timeouts.probe", c.Timeouts.Probe}, {"health.backoff", c.Health.Backoff},
		{"health.max_backoff", c.Health.MaxBackoff},
	} {
		if d.v < 0 {
			bad(d.path, "must be > 0, got %v", d.v)
		}
	}
	if err := c.Admission.Validate("admission"); err != nil {
		errs = append(errs, err)
	}
	h := c.Health
	if h.Failures < 0 {
		bad("health.failures", "must be >= 1, got %d", h.Failures)
	}
	if h.MaxBackoff < h.Backoff {
		bad("health.max_backoff", "must be >= health.backoff (%v), got %v", h.Backoff, h.MaxBackoff)
	}
	if k := h.Check; k != nil {
		if !strings.HasPrefix(k.Path, "/") {
			bad("health.check.path", "must start with /, got %q", k.Path)
		}
		if k.Interval < 0 {
			bad("health.check.interval", "must be > 0, got %v", k.Interval)
		}
		if k.Timeout < 0 {
			bad("health.check.timeout", "must be > 0, got %v", k.Timeout)
		}
		if k.Fall < 0 {
			bad("health.check.fall", "must be >= 1, got %d", k.Fall)
		}
		if k.Rise < 0 {
			bad("health.check.rise", "must be >= 1, got %d", k.Rise)
		}
	}
	return errors.Join(errs...)
}
