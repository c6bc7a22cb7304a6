package cluster

import (
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/workload"
)

// Config describes a simulated system. It is also the body of a scenario
// file (package scenario decodes it strictly and calls Validate), so fields
// carry their YAML names. Zero values mean "default" or "off" as documented.
type Config struct {
	// Locations are data centres, clouds or edge sites; the RTT between them
	// is added to calls that cross them. Empty means one location, "local".
	Locations []Location `yaml:"locations"`
	// Nodes bound where instances fit. Empty means unlimited capacity.
	Nodes []Node `yaml:"nodes"`
	// Services are the deployable units (microservices, functions, servers).
	Services []Service `yaml:"services"`
	// Classes are request types, each with the call graph it executes.
	Classes []Class `yaml:"classes"`
	// LBs are explicit load-balancing points in front of a service, each
	// with its own selector and only its own view (the Distr-LB setting).
	// Every service also has an implicit LB point for calls from other
	// services and from sources without an LB.
	LBs []LBPoint `yaml:"lbs"`
	// SelectorParams are selectors' parameters by policy name (e.g.
	// prequal: {qrif: 0.9}), wherever the policy runs.
	SelectorParams map[string]lb.Params `yaml:"selector_params"`
	// Sources are open-loop arrival streams of one class.
	Sources []Source `yaml:"sources"`
	// Prices value allocated resources.
	Prices Prices `yaml:"prices"`
	// SLO is the response-time target of every class without its own: a
	// request that fails or takes longer violates it (0 = none).
	SLO time.Duration `yaml:"slo"`
	// Changes alter the system while it runs, as the world outside a
	// controller does: a cloud's latency moves, other tenants load its
	// nodes, replicas come and go.
	Changes []Change `yaml:"changes"`
	// RandomChanges adds changes drawn at random, the same in every run.
	RandomChanges *RandomChanges `yaml:"random_changes"`
}

// RandomChanges draws changes as the multi-cloud routing paper's online test
// settings do (III-A: "latency and replica are set to change randomly as
// time goes by ... the sequence is identical in every evaluation"): every
// Every, a new RTT between each pair of locations, new replicas of each
// named service in each of its locations, and a new background load of
// each location, each uniform in its range. Unset ranges do not change.
type RandomChanges struct {
	// Every is the time between two draws.
	Every time.Duration `yaml:"every"`
	// Seed seeds the draws, independently of the run's seed.
	Seed uint64 `yaml:"seed"`
	// RTT is the [min, max] round-trip time between two locations.
	RTT []time.Duration `yaml:"rtt"`
	// Services are the placed services whose replicas per location change,
	// within Replicas [min, max].
	Services []string `yaml:"services"`
	Replicas []int    `yaml:"replicas"`
	// Background is the [min, max] share of a location's CPU other tenants take.
	Background []float64 `yaml:"background"`
	// Drift lists services whose initial instances' speeds drift: each
	// becomes its configured speed times a factor drawn in Speed [min, max].
	Drift []string  `yaml:"drift"`
	Speed []float64 `yaml:"speed"`
}

// Change is something that happens to the system at a point in time. It
// names a location (whose RTTs or background load change) or a service
// (whose replicas, or one instance's speed, change), or both.
type Change struct {
	// At is when the change happens, from the start of the run.
	At time.Duration `yaml:"at"`
	// Location is the location whose RTT and Background change.
	Location string `yaml:"location"`
	// RTT sets the round-trip time from Location to other locations.
	RTT map[string]time.Duration `yaml:"rtt"`
	// Background, when set, is the share of Location's CPU other tenants
	// take from now on (see Location.Background).
	Background *float64 `yaml:"background"`
	// Service is the service whose replicas change: NAME, or
	// NAME@LOCATION for one location of a placed service.
	Service string `yaml:"service"`
	// Replicas, when set, is Service's new number of replicas.
	Replicas *int `yaml:"replicas"`
	// Instance, with Service, is one of its initial instances (by its
	// order, from 0) whose CPU speed factor becomes Speed from now on: a
	// server slowed by an antagonist, or back to normal.
	Instance *int     `yaml:"instance"`
	Speed    *float64 `yaml:"speed"`
}

// Location is a site with round-trip times to the others.
type Location struct {
	// Name names the location in services, nodes, LB points and sources.
	Name string `yaml:"name"`
	// RTT is the round-trip time to other locations, by name; symmetric
	// entries need only be given once.
	RTT map[string]time.Duration `yaml:"rtt"`
	// Background is the share of the location's CPU that other tenants
	// use, in [0, 1): every instance there works at (1 - Background) of its
	// speed (a noisy neighbour on shared cores; default 0).
	Background float64 `yaml:"background"`
}

// Node is a machine (or Count identical machines) that instances are placed on.
type Node struct {
	// Name names the node (or the group of Count nodes).
	Name string `yaml:"name"`
	// Location is where the node is (default: the first location).
	Location string  `yaml:"location"`
	CPU      float64 `yaml:"cpu"`       // cores
	MemoryMB float64 `yaml:"memory_mb"` // MB; 0 = unlimited
	Count    int     `yaml:"count"`     // identical machines (default 1)
}

// Service is a set of instances running the same code.
type Service struct {
	// Name names the service in calls, routes, telemetry and actions.
	Name     string `yaml:"name"`
	Location string `yaml:"location"` // where its instances run (default: the first location)
	// Placement deploys the service in several locations, replicas per
	// location name, instead of Location and Replicas (as an Istio
	// multi-cluster mesh runs one Deployment per cluster). Each location's
	// part is a service of its own named NAME@LOCATION in telemetry and
	// actions; a call to NAME goes to the location the route weights of the
	// caller's location pick (control.SetRouteWeights), by default in
	// proportion to the ready instances in each (Istio's default: every
	// endpoint of every cluster alike).
	Placement map[string]int `yaml:"placement"`
	// RequestKB and ResponseKB are the sizes of a call and its answer,
	// which a call that crosses locations pays as egress (default 1 and 4).
	RequestKB  float64 `yaml:"request_kb"`
	ResponseKB float64 `yaml:"response_kb"`
	// Replicas is the initial number of identical instances (default 1),
	// ignored when Instances lists them one by one.
	Replicas    int `yaml:"replicas"`
	MinReplicas int `yaml:"min_replicas"` // lower bound for actions (default 0)
	MaxReplicas int `yaml:"max_replicas"` // upper bound for actions (0 = none)
	// Instances lists heterogeneous instances explicitly; their zero fields
	// take the service's values.
	Instances []InstanceSpec `yaml:"instances"`

	CPU     float64 `yaml:"cpu"`      // CPU limit per instance, cores (default 1)
	Speed   float64 `yaml:"speed"`    // CPU speed factor: work per core-second (default 1)
	IOSpeed float64 `yaml:"io_speed"` // I/O speed factor (default 1)
	// IOParallelism is how many I/O phases an instance serves at full speed
	// before they share it (processor sharing). 0 makes I/O a pure delay.
	IOParallelism int `yaml:"io_parallelism"`
	// Weight is the weight operators configure for WCMP/SED/WRR (default:
	// the CPU limit, i.e. provisioned resources, which can be wrong).
	Weight float64 `yaml:"weight"`

	MemoryMB        float64       `yaml:"memory_mb"`          // memory limit per instance, MB (0 = none)
	MemoryBaseMB    float64       `yaml:"memory_base_mb"`     // idle memory use, MB
	MemoryPerCallMB float64       `yaml:"memory_per_call_mb"` // memory per admitted call, MB
	OOMRestart      time.Duration `yaml:"oom_restart"`        // restart delay after an OOM kill (default 5s)

	// Concurrency is the per-instance limit on admitted calls (0 = none).
	Concurrency int `yaml:"concurrency"`
	// Queue bounds the calls waiting for a slot: 0 rejects at the limit with
	// 429 (OpenFaaS max_inflight), -1 is unbounded.
	Queue int `yaml:"queue"`
	// ColdStart is the delay before a new instance serves (default 0).
	ColdStart time.Duration `yaml:"cold_start"`
	// ProbeCPU is the CPU work of answering one load probe (Prequal), in
	// core-seconds at speed 1 (default 0.0001: 100 µs).
	ProbeCPU float64 `yaml:"probe_cpu"`
	// Activator, if set, holds the calls that find no ready instance, as
	// Knative's activator does for a revision scaled to zero, instead of
	// refusing them.
	Activator *Activator `yaml:"activator"`
	// Selector picks instances for calls through the implicit LB point
	// (default "rr", as Kubernetes Services and Envoy do by default).
	Selector string `yaml:"selector"`

	// Optional marks a service that brownout can deactivate (CoScal, DRPC
	// Alg. 2): control.SetBrownout then skips every call to it, and the
	// requests that miss it count as degraded, not failed. Every call to an
	// optional service must be an optional call.
	Optional bool `yaml:"optional"`

	// Route is how callers reach the service, as a service mesh sets it.
	Route `yaml:",inline"`
}

// Route is the timeout and retry policy of the calls to a service, as an
// Istio VirtualService's HTTP route to that destination sets them
// (networking.istio.io/v1 HTTPRoute.timeout and HTTPRoute.retries: HTTPRetry
// attempts, perTryTimeout and retryOn), carried out by the caller's Envoy.
//
// A caller waits at most PerTryTimeout for an attempt. When it gives up, the
// attempt counts a Timeout failure at the service and its work goes on and
// is discarded. A failed or timed-out attempt whose kind is in RetryOn is
// sent again, while retries remain, after Envoy's jittered exponential
// back-off, to a fresh pick of the LB point, with the same demand and call
// tree. Timeout bounds all the attempts together. Zero values mean none.
type Route struct {
	// Timeout bounds the time from the first attempt to the answer
	// (HTTPRoute.timeout; 0 = none, Istio's default).
	Timeout time.Duration `yaml:"timeout"`
	// Retries is how many times a failed attempt is sent again
	// (HTTPRetry.attempts; 0 = none).
	Retries int `yaml:"retries"`
	// PerTryTimeout bounds each attempt (HTTPRetry.perTryTimeout; 0 = only
	// Timeout bounds it).
	PerTryTimeout time.Duration `yaml:"per_try_timeout"`
	// RetryOn lists the failures that are retried: timeout, 429, oom,
	// no_capacity, shed. Default: no_capacity and shed, the failures
	// Istio's default retryOn covers ("connect-failure,refused-stream,
	// unavailable,cancelled,retriable-status-codes" with 503): a refused
	// connection, no ready instance, or a 503 from an LB point's admission.
	// Envoy's 5xx, gateway-error and reset cover a per-try timeout
	// (timeout) and an instance killed mid-call (oom); 429 needs
	// retriable-status-codes with 429.
	RetryOn []string `yaml:"retry_on"`
}

// Activator is Knative Serving's activator in front of a service whose
// target burst capacity is 0 (target-burst-capacity: 0, the activator in
// the path only when no pod is ready). A call that finds no ready instance
// waits in its FIFO until one is ready (pkg/activator/handler's
// throttler.Try), then goes to a fresh pick of the LB point; it is answered
// 503 (no_capacity) when Capacity calls wait already (ErrRequestQueueFull)
// or when it has waited Timeout (context.DeadlineExceeded). The caller's
// per-try and route timeouts run while it waits.
type Activator struct {
	// Capacity bounds the calls waiting (default 10000:
	// pkg/activator/net/throttler.go breakerQueueDepth).
	Capacity int `yaml:"capacity"`
	// Timeout bounds a call's wait (default 5m: the revision timeout,
	// pkg/apis/config/defaults.go DefaultRevisionTimeoutSeconds).
	Timeout time.Duration `yaml:"timeout"`
}

// InstanceSpec overrides a service's per-instance values for one instance.
type InstanceSpec struct {
	CPU     float64 `yaml:"cpu"`      // the instance's CPU limit, cores
	Speed   float64 `yaml:"speed"`    // its CPU speed factor
	IOSpeed float64 `yaml:"io_speed"` // its I/O speed factor
	Weight  float64 `yaml:"weight"`   // its configured weight for WCMP, SED and WRR
}

// Resolve fills the zero fields of spec with the service's values (the CPU
// limit cpu in force, speed and I/O speed 1, weight = the CPU limit).
func (c *Service) Resolve(spec InstanceSpec, cpu float64) InstanceSpec {
	spec.CPU = or(spec.CPU, cpu)
	spec.Speed = or(spec.Speed, or(c.Speed, 1))
	spec.IOSpeed = or(spec.IOSpeed, or(c.IOSpeed, 1))
	spec.Weight = or(spec.Weight, or(c.Weight, spec.CPU))
	return spec
}

// InitialInstances are the instances the service starts with, resolved.
func (c *Service) InitialInstances() []InstanceSpec {
	specs := c.Instances
	if len(specs) == 0 {
		specs = make([]InstanceSpec, max(c.Replicas, 1))
	}
	out := make([]InstanceSpec, len(specs))
	for i, sp := range specs {
		out[i] = c.Resolve(sp, or(c.CPU, 1))
	}
	return out
}

// Class is a request type: how a request of this class moves through services.
type Class struct {
	// Name names the class in sources, tables and per-class results.
	Name    string        `yaml:"name"`
	Timeout time.Duration `yaml:"timeout"` // client timeout (0 = none)
	SLO     time.Duration `yaml:"slo"`     // response-time target (default: the config's SLO)
	Call    Call          `yaml:"call"`    // the root call
}

// Call is one call to a service: local work, then stages of downstream calls.
type Call struct {
	// Service is the service the call goes to.
	Service string `yaml:"service"`
	// LB is the explicit LB point the call goes through (one in front of
	// Service); default: the service's implicit one.
	LB string `yaml:"lb"`
	// CPU is the CPU work of the call in core-seconds at speed 1.
	CPU workload.DistSpec `yaml:"cpu"`
	// IO is the I/O time of the call in seconds at I/O speed 1.
	IO workload.DistSpec `yaml:"io"`
	// Phases splits the work into that many alternating CPU and I/O phases
	// (default 1: all CPU, then all I/O).
	Phases int `yaml:"phases"`
	// Prob is the probability the call is made (default 1). In a Choice
	// stage, the relative weight of this alternative.
	Prob float64 `yaml:"prob"`
	// Optional calls do not fail their caller when they fail, nor when
	// they are skipped because the service is browned out: the request is
	// then degraded. Every call to an optional service is optional.
	Optional bool `yaml:"optional"`
	// Route, when set, replaces the service's route for this call (as an
	// Istio VirtualService that matches the caller by sourceLabels).
	Route *Route `yaml:"route"`
	// Stages run after the local work, in order; the calls of one stage run
	// in parallel (fan-out).
	Stages []Stage `yaml:"stages"`
}

// Stage is a set of downstream calls made in parallel.
type Stage struct {
	// Choice makes exactly one call, picked with probability proportional to
	// Prob (a branch), instead of each call independently with its Prob.
	Choice bool `yaml:"choice"`
	// Calls are the stage's downstream calls.
	Calls []Call `yaml:"calls"`
}

// LBPoint is an explicit load balancer in front of a service.
type LBPoint struct {
	// Name names the LB point, for sources and calls (lb:) and for the
	// policy network of a learned balancer.
	Name string `yaml:"name"`
	// Service is the service whose instances it chooses between.
	Service  string `yaml:"service"`
	Location string `yaml:"location"` // where clients reach it (default: the first location)
	// Admission, when set, bounds what the LB point lets through, as shoal
	// proxy's admission does under overload (the same lb.Admission): a
	// backend with max_requests of this LB point's calls in flight is not
	// up for the selector, so every selector picks among backends with
	// room; a call that finds every ready backend at its cap waits in the
	// LB point's FIFO queue, if fewer than max_pending wait, for at most
	// queue_timeout (the caller's per-try and route timeouts run
	// meanwhile), and gets the first freed slot, picked for by the
	// selector then; otherwise it is shed, a 503 (failure kind shed).
	// Under ring-hash and maglev a full backend stays up, so their tables
	// are not rebuilt as backends fill and free: a call whose key's backend
	// is full waits in the queue for that backend (or is shed), as under
	// HAProxy's hash balancing with maxconn, and a freed slot goes to the
	// oldest call waiting for it, so affinity holds. A call that finds no
	// backend ready at all fails or waits at the service's activator as
	// without admission. A queued request whose client times out leaves
	// the queue. Zero fields take the defaults (32, 64 and 1s); max_pending
	// -1 is no queue. Default: none, no bound.
	Admission *lb.Admission `yaml:"admission"`
}

// Source is where requests come from: an open-loop arrival process of one
// class, or closed-loop users.
type Source struct {
	// Name names the source.
	Name string `yaml:"name"`
	// Class is the class of the requests (of a closed-loop source: the
	// visit [class]).
	Class string `yaml:"class"`
	// LB is the explicit LB point the requests enter through; empty means
	// the implicit LB point of the class's root service.
	LB string `yaml:"lb"`
	// Location is where clients are (default: the LB's, else the first location).
	Location string `yaml:"location"`
	// Share is this source's fraction of the scenario's total rate when a
	// load level sets the rate (default 1/number of sources).
	Share float64 `yaml:"share"`
	// Arrivals is the arrival process of an open-loop source.
	Arrivals workload.ProcessSpec `yaml:"arrivals"`
	// Sessions is how many sessions an open-loop source's requests belong
	// to, drawn uniformly: a request's affinity key, which the hashing
	// selectors (ring-hash, maglev) route on, is its session's (0: every
	// request its own). A closed-loop user is one session.
	Sessions int `yaml:"sessions"`

	// Users makes the source closed-loop, as Locust drives a system (DRPC,
	// IV-A): each user sends a request, waits for its outcome (success,
	// failure, or its class's timeout), thinks, and sends the next. A user
	// starts with a think time.
	Users Users `yaml:"users"`
	// Think is a user's think time in seconds (Locust's wait_time), with a
	// mean > 0.
	Think workload.DistSpec `yaml:"think"`
	// Visit lists the classes a user requests in turn, over and over
	// (Locust's SequentialTaskSet); instead of class.
	Visit []string `yaml:"visit"`
}

// Users is the number of closed-loop users: a count (users: 50), or a count
// over time given as a rate series or trace replay whose rate is read as
// the number of users (users: {kind: series, step: 5m, rates: [50, 120]}),
// rounded. Users beyond the count finish their request and wait until the
// count includes them again.
type Users struct {
	Count int
	Over  *workload.ProcessSpec
}

// IsSet reports whether the source is closed-loop.
func (u Users) IsSet() bool { return u.Count != 0 || u.Over != nil }

// UnmarshalYAML reads a count or a process spec (the yaml package's
// function-style Unmarshaler, so that decoding stays strict).
func (u *Users) UnmarshalYAML(unmarshal func(any) error) error {
	*u = Users{}
	if err := unmarshal(&u.Count); err == nil {
		return nil
	}
	var spec workload.ProcessSpec
	if err := unmarshal(&spec); err != nil {
		return err
	}
	u.Over = &spec
	return nil
}

// Prices value allocated resources per second.
type Prices struct {
	// VCPUSecond is the price of one allocated vCPU for one second.
	VCPUSecond float64 `yaml:"vcpu_second"`
	// GBSecond is the price of one allocated GB of memory for one second.
	GBSecond float64 `yaml:"gb_second"`
	// EgressGB is the price of one GB sent from one location to another.
	EgressGB float64 `yaml:"egress_gb"`
}

// DefaultPrices are Azure Functions Premium plan prices as FaaSConf uses them
// in its cost model y(C) (problem formulation, "Optimal Configuration Tuning
// On Hybrid Resources"): $0.173 per vCPU-hour and $0.0123 per GB-hour. Egress
// between locations is $0.09 per GB: traffic between clouds leaves one
// provider for the internet, and $0.09 is the first tier of AWS's data
// transfer out to the internet (Azure's is $0.087, GCP premium tier $0.12).
func DefaultPrices() Prices {
	return Prices{VCPUSecond: 0.173 / 3600, GBSecond: 0.0123 / 3600, EgressGB: 0.09}
}
