package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Balancer is the configuration of a shoal proxy in front of a Service's
// pods: the operator keeps it in a ConfigMap, the backends following the
// Service's ready endpoints, for 'shoal proxy --watch' to read.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Service",type=string,JSONPath=`.spec.service`
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.spec.policy`
// +kubebuilder:printcolumn:name="Backends",type=integer,JSONPath=`.status.backends`
type Balancer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BalancerSpec   `json:"spec"`
	Status BalancerStatus `json:"status,omitempty"`
}

// BalancerSpec is what the proxy balances and how.
//
// +kubebuilder:validation:XValidation:rule="self.policy != 'distr-lb' || has(self.agentFrom)",message="agentFrom is required by the distr-lb policy"
type BalancerSpec struct {
	// Service names the Service, in the Balancer's namespace, whose ready
	// endpoints are the backends.
	//
	// +kubebuilder:validation:MinLength=1
	Service string `json:"service"`
	// Port is the backends' port (default: the endpoints' first).
	//
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
	// Policy is the proxy's selector: rr, wrr, wcmp, lsq, sed, p2c, ecmp,
	// least-request (Envoy's), peak-ewma (Linkerd's), or distr-lb (a
	// Distr-LB agent's learned weights).
	//
	// +kubebuilder:validation:Enum=rr;wrr;wcmp;lsq;sed;p2c;ecmp;least-request;peak-ewma;distr-lb
	// +kubebuilder:default=lsq
	Policy string `json:"policy,omitempty"`
	// AgentFrom is the Distr-LB policy file (distr-lb): a ConfigMap key,
	// which the proxy's pod mounts at AgentPath.
	AgentFrom *ConfigMapKey `json:"agentFrom,omitempty"`
	// AgentPath is where the proxy reads the agent's file.
	//
	// +kubebuilder:default="/etc/shoal/agent/policy"
	AgentPath string `json:"agentPath,omitempty"`
	// Listen is the proxy's data-plane address (host:port).
	//
	// +kubebuilder:default=":8080"
	Listen string `json:"listen,omitempty"`
	// Admin is the proxy's admin address (host:port): metrics, health and
	// status.
	//
	// +kubebuilder:default=":9090"
	Admin string `json:"admin,omitempty"`
	// Admission bounds the requests the proxy lets through (its
	// admission section; unset fields take the proxy's defaults: 32 in
	// flight per backend, 64 waiting for at most 1s, the rest answered
	// 503 with Retry-After).
	Admission *Admission `json:"admission,omitempty"`
}

// Admission is the proxy's admission limits (lb.Admission).
type Admission struct {
	// MaxRequests caps each backend's requests in flight from the proxy.
	//
	// +kubebuilder:validation:Minimum=1
	MaxRequests int32 `json:"maxRequests,omitempty"`
	// MaxPending bounds the requests waiting when every backend is full;
	// -1: none wait.
	//
	// +kubebuilder:validation:Minimum=-1
	MaxPending int32 `json:"maxPending,omitempty"`
	// QueueTimeout is the longest a request waits for a backend.
	QueueTimeout *metav1.Duration `json:"queueTimeout,omitempty"`
}

// BalancerStatus is the configuration last written.
type BalancerStatus struct {
	// Conditions: Ready (the configuration is written and valid).
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the spec generation the configuration was
	// written from.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ConfigMap holds the configuration, under the key proxy.yaml.
	ConfigMap string `json:"configMap,omitempty"`
	// Backends is how many ready endpoints it lists.
	Backends int32 `json:"backends,omitempty"`
}

// BalancerList is a list of Balancers.
//
// +kubebuilder:object:root=true
type BalancerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Balancer `json:"items"`
}
