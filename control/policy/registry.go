package policy

import "math"

var inf = math.Inf(1)

// registry is every policy Shoal runs. A new policy registers here, then
// its package builds it from a Spec (CONTRIBUTING.md, "Adding a policy").
var registry = []Policy{
	// Request selectors (control/lb). Durations are seconds.
	{Name: "ecmp", Kind: Selector, Runs: Sim | Proxy | Operator, Doc: "a uniformly random server", Source: "ECMP, RFC 2992"},
	{Name: "wcmp", Kind: Selector, Runs: Sim | Proxy | Operator, Doc: "a random server in proportion to its configured weight", Source: "WCMP (Zhou et al., EuroSys 2014)"},
	{Name: "rr", Kind: Selector, Runs: Sim | Proxy | Operator, Doc: "round robin", Source: "nginx, Envoy ROUND_ROBIN"},
	{Name: "wrr", Kind: Selector, Runs: Sim | Proxy | Operator, Doc: "smooth weighted round robin", Source: "nginx ngx_http_upstream_round_robin.c"},
	{Name: "lsq", Kind: Selector, Runs: Sim | Proxy | Operator, Doc: "the server with the fewest requests in flight from this LB point", Source: "join the shortest queue"},
	{Name: "sed", Kind: Selector, Runs: Sim | Proxy | Operator, Doc: "the smallest (requests in flight + 1) / weight", Source: "Linux IPVS, ip_vs_sed.c"},
	{Name: "p2c", Kind: Selector, Runs: Sim | Proxy | Operator, Doc: "the shorter queue of two random servers", Source: "Mitzenmacher, IEEE TPDS 2001"},
	{Name: "least-request", Kind: Selector, Runs: Sim | Proxy | Operator, Doc: "Envoy's LEAST_REQUEST: the least loaded of choice_count random servers, weighted by active requests",
		Source: "Envoy, source/common/upstream/load_balancer_impl.cc", Params: []Param{
			{Name: "choice_count", Default: "2", Min: 2, Max: inf, Integer: true, Doc: "servers drawn per request"},
			{Name: "active_request_bias", Min: 0, Max: inf, Doc: "weight / (active requests + 1)^bias; set, even to 1, it takes Envoy's weighted path with equal weights too (default: unset, bias 1)"},
		}},
	{Name: "peak-ewma", Kind: Selector, Runs: Sim | Proxy | Operator, Doc: "Linkerd's power of two choices on a peak-sensitive EWMA of response times",
		Source: "Finagle PeakEwma, linkerd2-proxy tower-load", Params: []Param{
			{Name: "default_rtt", Default: "0.03", Unit: "s", Min: 0, Above: true, Max: inf, Doc: "a server's estimate before any response"},
			{Name: "decay", Default: "10", Unit: "s", Min: 0, Above: true, Max: inf, Doc: "the EWMA's time constant"},
		}},
	{Name: "prequal", Kind: Selector, Runs: Sim | Proxy, Doc: "Google's Prequal: probes of requests in flight and latency, hot-cold lexicographic choice",
		Source: "Wydrowski et al., NSDI 2024, §3-4", Params: []Param{
			{Name: "qrif", Default: "0.8408964152537145", Min: 0, Max: 1, Doc: "the hot quantile of requests in flight (2^-0.25)"},
			{Name: "pool_size", Default: "16", Min: 1, Max: inf, Integer: true, Doc: "probes kept (m)"},
			{Name: "probe_rate", Default: "3", Min: 0, Above: true, Max: inf, Doc: "probes per query (r_probe)"},
			{Name: "remove_rate", Default: "1", Min: 0, Above: true, Max: inf, Doc: "removals per query (r_remove)"},
			{Name: "delta", Default: "1", Min: 0, Above: true, Max: inf, Doc: "reuse budget (δ)"},
			{Name: "max_age", Default: "1", Unit: "s", Min: 0, Above: true, Max: inf, Doc: "probe age limit"},
		}},
	{Name: "c3", Kind: Selector, Runs: Sim | Proxy, Doc: "C3: replica ranking by a cubic of the reported queue, with per-server rate control",
		Source: "Suresh et al., NSDI 2015; absim", Params: []Param{
			{Name: "clients", Min: 1, Max: inf, Integer: true, Doc: "the LB points sharing the servers (default: the data plane's count)"},
			{Name: "rate_interval", Default: "0.01", Unit: "s", Min: 0, Above: true, Max: inf, Doc: "the rate limiter's interval"},
			{Name: "max_tokens", Default: "50", Min: 0, Above: true, Max: inf, Doc: "the token bucket's capacity"},
			{Name: "hysteresis", Default: "2", Min: 0, Above: true, Max: inf, Doc: "rate decreases wait this many intervals"},
			{Name: "no_rate_control", Default: "0", Min: 0, Max: 1, Integer: true, Doc: "1: ranking only"},
		}},
	{Name: "probing-sed", Kind: Selector, Runs: Sim | Proxy, Doc: "SED on the load servers report, probed as Prequal probes and piggybacked on responses",
		Source: "Shoal (control/lb/hybrid.go)", Params: []Param{
			{Name: "probe_rate", Default: "3", Min: 0, Above: true, Max: inf, Doc: "probes per decision"},
			{Name: "max_age", Default: "1", Unit: "s", Min: 0, Above: true, Max: inf, Doc: "how long an answer is used"},
			{Name: "quiet", Default: "0.3", Unit: "s", Min: 0, Max: inf, Doc: "no probe while the piggybacked load is younger (0: probe every draw)"},
		}},
	{Name: "ring-hash", Kind: Selector, Runs: Sim | Proxy, Doc: "consistent hashing on a ring, for affinity",
		Source: "Envoy, source/extensions/load_balancing_policies/ring_hash", Params: []Param{
			{Name: "minimum_ring_size", Default: "1024", Min: 1, Max: inf, Integer: true, Doc: "ring entries, at least"},
			{Name: "maximum_ring_size", Default: "8388608", Min: 1, Max: inf, Integer: true, Doc: "ring entries, at most"},
		}},
	{Name: "maglev", Kind: Selector, Runs: Sim | Proxy, Doc: "Maglev consistent hashing, for affinity",
		Source: "Eisenbud et al., NSDI 2016, §3.4; Envoy maglev_lb.cc", Params: []Param{
			{Name: "table_size", Default: "65537", Min: 2, Max: inf, Integer: true, Doc: "the lookup table's size, a prime"},
		}},
	{Name: "distr-lb-general", Kind: Selector, File: OptionalFile, Runs: Sim | Proxy, Doc: "probing-sed with weights a learned network corrects; without a file, the policy Shoal ships",
		Source: "Shoal, after Distr-LB (Zhou et al.)"},
	{Name: "distr-lb", Kind: Selector, File: NeedsFile, Runs: Sim | Proxy | Operator, Doc: "Distr-LB: SAC + GRU agents set each LB point's server weights", Source: "Distr-LB paper, §4"},
	{Name: "distr-lb+probing", Kind: Selector, File: NeedsFile, Runs: Sim, Doc: "a Distr-LB policy's weights over the probing data plane", Source: "Shoal"},
	{Name: "centr-lb", Kind: Selector, File: NeedsFile, Runs: Sim, Doc: "one centralised SAC agent for every LB point", Source: "Distr-LB paper, baseline Centr-LB"},
	{Name: "qmix-lb", Kind: Selector, File: NeedsFile, Runs: Sim, Doc: "QMIX agents for the LB points", Source: "Distr-LB paper, baseline QMix-LB"},
	{Name: "oracle", Kind: Selector, Runs: Sim, Bound: true, Doc: "the server with the earliest completion, from the simulator's exact state (a bound, not deployable)",
		Source: "Distr-LB paper, Def. 1"},

	// Autoscalers (control/autoscale; the scenario's autoscaling section
	// holds their other settings).
	{Name: "static", Kind: Autoscaler, Runs: Sim, Doc: "the scenario's own replicas and limits, unchanged", Params: []Param{
		{Name: "scale", Default: "1", Min: 0, Above: true, Max: 100, Doc: "multiplies every autoscaled service's replicas (rounded up, within its bounds): the static configuration's size"},
		{Name: "resources", Default: "1", Min: 0, Above: true, Max: 100, Doc: "multiplies every autoscaled service's CPU and memory limits: its instances' size"},
	}},
	{Name: "hpa", Kind: Autoscaler, Runs: Sim | Operator, Doc: "the Kubernetes HPA v2 on CPU utilisation",
		Source: "kubernetes pkg/controller/podautoscaler", Params: []Param{
			{Name: "target", Unit: "%", Min: 1, Max: 1000, Doc: "CPU utilisation of the request (default: the scenario's, else 80)"},
			{Name: "tolerance", Default: "0.1", Min: 0, Above: true, Max: 1, Doc: "no scaling while |1 - metric/target| is within it"},
		}},
	{Name: "kpa", Kind: Autoscaler, Runs: Sim, Doc: "the Knative Pod Autoscaler on concurrency, with its panic mode",
		Source: "knative/serving pkg/autoscaler", Params: []Param{
			{Name: "concurrency", Min: 0, Above: true, Max: inf, Doc: "target requests in flight per pod (default: the scenario's, else 100)"},
			{Name: "utilization", Min: 0, Above: true, Max: 1, Doc: "share of the target aimed at (default: the scenario's, else 0.7)"},
			{Name: "scale", Default: "1", Min: 0, Above: true, Max: inf, Doc: "multiplies every service's target concurrency, the section's and the overrides'"},
		}},
	{Name: "keda", Kind: Autoscaler, Runs: Sim, Doc: "KEDA on the request rate per replica", Source: "kedacore/keda, the prometheus scaler", Params: []Param{
		{Name: "threshold", Unit: "req/s", Min: 0, Above: true, Max: inf, Doc: "requests per second per replica (default: the scenario's)"},
	}},
	{Name: "openfaas", Kind: Autoscaler, Runs: Sim, Doc: "OpenFaaS Pro's autoscaler on rps or in-flight requests", Source: "docs.openfaas.com/architecture/autoscaling", Params: []Param{
		{Name: "target", Min: 0, Above: true, Max: inf, Doc: "load per replica (default: the scenario's, else 50)"},
	}},
	{Name: "vpa", Kind: Autoscaler, Runs: Sim, Doc: "the Kubernetes VPA recommender and updater", Source: "kubernetes/autoscaler vertical-pod-autoscaler"},
	{Name: "drpc", Kind: Autoscaler, File: NeedsFile, Runs: Sim | Operator, Doc: "DRPC's per-deployment students, trained by a TD3 teacher", Source: "DRPC paper, Algorithms 1-4"},
	{Name: "firm", Kind: Autoscaler, File: NeedsFile, Runs: Sim, Doc: "a FIRM-like baseline: critical paths, a culprit classifier, DDPG", Source: "FIRM (Qiu et al., OSDI 2020)"},
	{Name: "coscal", Kind: Autoscaler, File: NeedsFile, Runs: Sim, Doc: "a CoScal-like baseline: Q-learning over utilisation and a GRU forecast", Source: "CoScal (Xu et al., TNSM 2022)"},
	{Name: "autothrottle", Kind: Autoscaler, File: NeedsFile, Runs: Sim, Doc: "an Autothrottle-like baseline: captains hold CPU throttle targets by resizing limits, a contextual bandit sets the targets",
		Source: "Autothrottle (Wang et al., NSDI 2024), from the authors' release", Params: []Param{
			{Name: "slo", Unit: "s", Min: 0, Above: true, Max: inf, Doc: "the p99 latency the tower aims at (default: the file's, the scenario's SLO)"},
			{Name: "explore", Default: "0", Min: 0, Max: 1, Doc: "the tower's chance of trying a neighbouring action (the release measured with 0, after its warm-up)"},
		}},

	// Multi-cloud routes (control/multicloud).
	{Name: "local", Kind: Route, Runs: Sim, Doc: "every call stays in its caller's cloud", Source: "multi-cloud routing paper, III-D"},
	{Name: "even", Kind: Route, Runs: Sim, Doc: "calls spread evenly over the clouds", Source: "multi-cloud routing paper, III-D"},
	{Name: "spread", Kind: Route, Short: "away", Runs: Sim, Doc: "1 - away of every cloud's calls stay home, away spreads evenly over the others",
		Source: "Shoal: Local at 0, Even at (n-1)/n", Params: []Param{
			{Name: "away", Min: 0, Max: 1, Required: true, Doc: "the share sent to other clouds (spread:0.3 is spread:away=0.3)"},
		}},
	{Name: "distribute", Kind: Route, Short: "away", Runs: Sim, Doc: "Istio locality distribute: 1 - away of every cloud's calls stay home, away goes to the nearest other cloud",
		Source: "Istio localityLbSetting.distribute", Params: []Param{
			{Name: "away", Min: 0, Max: 1, Required: true, Doc: "the share sent to the nearest other cloud (distribute:0.2 is distribute:away=0.2)"},
		}},
	{Name: "locality", Kind: Route, Runs: Sim | Operator, Doc: "Istio locality load balancing with failover", Source: "Envoy priority load, Istio localityLbSetting"},
	{Name: "bo-system", Kind: Route, Runs: Sim, Doc: "Bayesian optimisation on the system itself", Source: "multi-cloud routing paper, III-D"},
	{Name: "random", Kind: Route, Runs: Sim, Doc: "random route weights every 20 s"},
	{Name: "slate", Kind: Route, Runs: Sim | Operator, Doc: "a SLATE-like global optimum of the routes on load-to-latency models fitted from the measured series, re-solved every 20 s",
		Source: "SLATE (Lim et al., NSDI 2026), reimplemented from the paper and its release", Params: []Param{
			{Name: "egress", Unit: "s/GB", Default: "0", Min: 0, Max: inf, Doc: "seconds of request latency a GB between clouds is worth (0: egress is free)"},
		}},
	{Name: "multicloud", Kind: Route, File: NeedsFile, Runs: Sim | Operator, Doc: "BO of route weights on each service's performance model (the one of lower held-out error)",
		Source: "multi-cloud routing paper, III", Params: learnedRouteParams},
	{Name: "multicloud-nn", Kind: Route, File: NeedsFile, Runs: Sim, Doc: "the same on the neural network models", Source: "multi-cloud routing paper, III-B", Params: learnedRouteParams},
	{Name: "multicloud-svr", Kind: Route, File: NeedsFile, Runs: Sim, Doc: "the same on the SVR models", Source: "multi-cloud routing paper, III-B", Params: learnedRouteParams},

	// Serverless configurations (control/faasconf).
	{Name: "faasconf", Kind: Serverless, File: NeedsFile, Runs: Sim, Doc: "attention mean-field MADDPG with safe exploration: CPU, memory, instances and concurrency per function",
		Source: "FaaSConf paper, §4", Params: []Param{
			{Name: "qos", Default: "1", Min: 0, Above: true, Max: 10, Doc: "multiplies the policy's QoS latency: a tighter (< 1) or looser (> 1) target, the policy's frontier"},
		}},

	{Name: "jolteon", Kind: Serverless, File: NeedsFile, Runs: Sim, Doc: "a Jolteon-like configurator: per-function stochastic models, the chance-constrained cheapest configuration per level",
		Source: "Jolteon (Zhang et al., NSDI '24), reimplemented from the paper and its release"},

	// Edge schedulers (edge, control/edgesched).
	{Name: "greedy", Kind: Edge, Runs: EdgeWorld, Doc: "each task where its estimated completion is earliest", Source: "edge scheduling paper, baseline"},
	{Name: "threshold", Kind: Edge, Runs: EdgeWorld, Doc: "on the device while its backlog is under half the deadline, else the nearest edge node", Source: "edge scheduling paper, baseline"},
	{Name: "mappo", Kind: Edge, File: NeedsFile, Runs: EdgeWorld, Doc: "MA-PPO (or BC) trained in a virtual environment learned from logs", Source: "edge scheduling paper, Eqs. 7-8"},
	{Name: "task", Kind: Edge, File: NeedsFile, Runs: EdgeWorld, Doc: "a per-task rule: a network corrects softmin's score of each target; PPO in a grey-box environment learned from task logs (or BC of them)",
		Source: "beyond the edge scheduling paper (issue 51)"},
}

// learnedRouteParams are the learned routes' settings beyond the model file
// (control/multicloud.Options).
var learnedRouteParams = []Param{
	{Name: "steps", Default: "10", Min: 2, Max: 1000, Doc: "BO steps per service and rebalance (the paper's 10)"},
	{Name: "egress", Unit: "s/GB", Default: "0", Min: 0, Max: inf, Doc: "seconds of response time a GB between clouds is worth in BO's objective (0: egress is free)"},
	{Name: "trigger", Default: "0", Min: 0, Max: 10, Doc: "a location's measured utilisation of a service above which a rebalance starts at once, between checks (0: none)"},
	{Name: "uncertainty", Default: "0", Min: 0, Max: 100, Doc: "BO adds this many times the disagreement of a service's two models (network and SVR) to its prediction (0: none)"},
}
