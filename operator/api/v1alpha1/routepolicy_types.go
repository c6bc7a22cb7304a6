package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RoutePolicy routes a namespace's services between locations (clouds,
// clusters, regions) with a Shoal policy, read from Prometheus every
// period and written as Istio VirtualService route weights: one
// VirtualService, shoal-SERVICE, per service, with one route per caller
// location to the DestinationRule subsets named after the locations (the
// user's DestinationRule defines them by LocalityLabel).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.spec.policy`
// +kubebuilder:printcolumn:name="Acting",type=string,JSONPath=`.status.acting`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Last",type=date,JSONPath=`.status.lastDecision`
type RoutePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RoutePolicySpec   `json:"spec"`
	Status RoutePolicyStatus `json:"status,omitempty"`
}

// RoutePolicySpec is what to route, between which locations, and how.
//
// +kubebuilder:validation:XValidation:rule="self.policy != 'multicloud' || has(self.policyFrom)",message="policyFrom is required by the multicloud policy"
type RoutePolicySpec struct {
	// Services are the routed services, in the RoutePolicy's namespace.
	//
	// +kubebuilder:validation:MinItems=1
	// +listType=map
	// +listMapKey=name
	Services []RouteService `json:"services"`
	// Locations are where the services run, in the order a multicloud
	// model file lists them.
	//
	// +kubebuilder:validation:MinItems=2
	// +listType=map
	// +listMapKey=name
	Locations []RouteLocation `json:"locations"`
	// LocalityLabel is the pod label whose value is a workload's
	// location: callers are matched by it (sourceLabels), and the
	// DestinationRule's subsets select by it. Istio gives every workload
	// topology.istio.io/cluster, its cluster's ID, which its metrics
	// carry as source_cluster and destination_cluster; the operator's
	// Prometheus queries read those (prom.DefaultRouteQueries).
	//
	// +kubebuilder:default="topology.istio.io/cluster"
	LocalityLabel string `json:"localityLabel,omitempty"`
	// Policy decides:
	//   - locality: Istio's locality load balancing with failover, as
	//     Envoy's priority load computes it from each location's ready
	//     and total replicas (control/multicloud's locality baseline),
	//     made explicit: every caller keeps its calls at home while its
	//     location is healthy, and spills over in proportion to the
	//     other locations' ready replicas as it is not.
	//   - multicloud: the learned router of control/multicloud: on a
	//     change of the environment (replicas, RTTs, users' calls per
	//     location) it searches each service's request shift by Bayesian
	//     optimisation on its performance model (PolicyFrom, written by
	//     'shoal train multicloud'), layer by layer down the call graph.
	//   - slate: a SLATE-like global optimiser (control/slate, reimplemented
	//     from the SLATE paper, NSDI 2026): every period it fits each
	//     service's load-to-latency model per location from the same
	//     series and solves the routes of every service at once for the
	//     least mean latency plus the egress price (EgressSecondsPerGB),
	//     each location kept under 0.7 of what its replicas serve. It needs
	//     no model file.
	//
	// +kubebuilder:validation:Enum=locality;multicloud;slate
	// +kubebuilder:default=locality
	Policy string `json:"policy,omitempty"`
	// PolicyFrom is where the multicloud model file is.
	PolicyFrom *PolicySource `json:"policyFrom,omitempty"`
	// Model is which of the file's performance models decides: chosen
	// (each service's, picked on the held-out split when the file was
	// trained), nn (the paper's network) or svr.
	//
	// +kubebuilder:validation:Enum=chosen;nn;svr
	// +kubebuilder:default=chosen
	Model string `json:"model,omitempty"`
	// Objective is what the multicloud policy's optimisation minimises:
	// headroom (the predicted mean response time with every location's
	// predicted utilisation kept under 0.7), mean (the paper's) or p95
	// (the predicted 95th percentile; files trained with p95 models).
	//
	// +kubebuilder:validation:Enum=headroom;mean;p95
	// +kubebuilder:default=headroom
	Objective string `json:"objective,omitempty"`
	// MaxEgressGBPerHour is a budget of the bytes calls send between
	// locations, GB per hour, as Istio's request and response byte metrics
	// count them (unset: none). Each routed service may send away what the
	// others leave of it.
	MaxEgressGBPerHour *resource.Quantity `json:"maxEgressGBPerHour,omitempty"`
	// EgressSecondsPerGB prices egress for the slate and multicloud
	// policies: the seconds of request latency a GB sent between locations
	// is worth, so that they trade latency against the bill (unset: egress
	// is free).
	EgressSecondsPerGB *resource.Quantity `json:"egressSecondsPerGB,omitempty"`
	// Period is the control period (and the PromQL windows').
	//
	// +kubebuilder:default="10s"
	Period metav1.Duration `json:"period,omitempty"`
	// DryRun decides and reports (status, events) without writing a
	// VirtualService.
	DryRun bool `json:"dryRun,omitempty"`
}

// RouteService is a routed service.
type RouteService struct {
	// Name is the Kubernetes Service's name (Istio's
	// destination_service_name) and the service's name in Shoal.
	//
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Workload is the Deployment that serves it in every location
	// (default: Name): kube-state-metrics' deployment, and Istio's
	// source_workload of its own calls.
	Workload string `json:"workload,omitempty"`
	// Host is its host in the mesh (default
	// NAME.NAMESPACE.svc.cluster.local).
	Host string `json:"host,omitempty"`
}

// RouteLocation is a location.
type RouteLocation struct {
	// Name is the location's: the locality label's value of its
	// workloads, and the name of its DestinationRule subset.
	//
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// RoutePolicyStatus is what the operator last saw and did.
type RoutePolicyStatus struct {
	// Conditions: Ready (the loop runs), MetricsAvailable (Prometheus
	// answered this period), PolicyLoaded (multicloud: the model file in
	// force, or why the last one was rejected).
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the spec generation the loop runs.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Acting is policy, dry-run, or holding (no data: nothing done).
	Acting string `json:"acting,omitempty"`
	// Policy identifies the model file in force (multicloud): the
	// ConfigMap's resource version or the URL, and its provenance.
	Policy string `json:"policy,omitempty"`
	// Routes are the weights last decided for each service and caller
	// location, as written to the VirtualService (whole percentages).
	Routes []RouteStatus `json:"routes,omitempty"`
	// LastDecision is when the policy last decided.
	LastDecision *metav1.Time `json:"lastDecision,omitempty"`
}

// RouteStatus is the route of one service's calls from one location.
type RouteStatus struct {
	// Service is the service whose calls are routed.
	Service string `json:"service"`
	// From is the callers' location.
	From string `json:"from"`
	// Weights are the percentages by location.
	Weights map[string]int32 `json:"weights"`
	// DryRun is set when they were decided in a dry run, and not
	// written.
	DryRun bool `json:"dryRun,omitempty"`
	// Changed is when they were decided.
	Changed metav1.Time `json:"changed"`
}

// RoutePolicyList is a list of RoutePolicies.
//
// +kubebuilder:object:root=true
type RoutePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RoutePolicy `json:"items"`
}
