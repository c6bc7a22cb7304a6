// Package v1alpha1 is the shoal.io/v1alpha1 API of Shoal's operator.
//
// +kubebuilder:object:generate=true
// +groupName=shoal.io
package v1alpha1

// The deep copies and deploy/helm/shoal/crds are generated from this file:
//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 object crd paths=. output:crd:dir=../../../deploy/helm/shoal/crds

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API's group and version.
var GroupVersion = schema.GroupVersion{Group: "shoal.io", Version: "v1alpha1"}

// AddToScheme adds the API's kinds to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Autoscaler{}, &AutoscalerList{}, &RoutePolicy{}, &RoutePolicyList{}, &Balancer{}, &BalancerList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Autoscaler scales one workload with a Shoal policy, read from
// Prometheus every period.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.name`
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.spec.policy`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredReplicas`
// +kubebuilder:printcolumn:name="Acting",type=string,JSONPath=`.status.acting`
type Autoscaler struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AutoscalerSpec   `json:"spec"`
	Status AutoscalerStatus `json:"status,omitempty"`
}

// AutoscalerSpec is what to scale and how.
//
// +kubebuilder:validation:XValidation:rule="self.policy != 'hpa' || has(self.target)",message="target is required by the hpa policy"
// +kubebuilder:validation:XValidation:rule="self.policy != 'hpa' || has(self.maxReplicas)",message="maxReplicas is required by the hpa policy"
// +kubebuilder:validation:XValidation:rule="self.policy != 'drpc' || has(self.policyFrom)",message="policyFrom is required by the drpc policy"
type AutoscalerSpec struct {
	// Target is the workload, in the Autoscaler's namespace (hpa).
	Target *Target `json:"target,omitempty"`
	// Policy decides:
	//   - hpa: Kubernetes' HPA semantics (Shoal's port) on Target.
	//   - drpc: a DRPC policy file (PolicyFrom, written by 'shoal train
	//     drpc'). It scales replicas, CPU and memory of the Deployments it
	//     names (those of the same names in this namespace) and browns
	//     out the optional ones, every period of its own (Period is
	//     ignored). A Deployment whose inputs leave the range the policy
	//     was trained on falls back to the hpa policy (its bounds from
	//     the policy file, TargetCPUUtilization from here).
	//
	// +kubebuilder:validation:Enum=hpa;drpc
	// +kubebuilder:default=hpa
	Policy string `json:"policy,omitempty"`
	// PolicyFrom is where the policy file is (drpc).
	PolicyFrom *PolicySource `json:"policyFrom,omitempty"`
	// OnMismatch is what to do with a drpc policy that does not fit the
	// cluster when it is loaded: a Deployment it names is missing, it may
	// brown out one not annotated shoal.io/optional: "true", or a
	// Deployment's CPU or memory limits lie outside the policy's rails.
	// Refuse rejects the policy, naming every mismatch (PolicyRejected);
	// Drop runs it without what does not fit (no brownout there; a
	// Deployment outside the rails left to the hpa fallback) and says so
	// in a PolicyAdjusted event. A missing Deployment is always refused.
	//
	// +kubebuilder:validation:Enum=Refuse;Drop
	// +kubebuilder:default=Refuse
	OnMismatch string `json:"onMismatch,omitempty"`
	// MinReplicas and MaxReplicas bound the replicas (hpa).
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=1
	MinReplicas int32 `json:"minReplicas,omitempty"`
	// MaxReplicas is the most replicas the hpa policy sets (required by
	// hpa; drpc takes its bounds from the policy file).
	//
	// +kubebuilder:validation:Minimum=1
	MaxReplicas int32 `json:"maxReplicas,omitempty"`
	// TargetCPUUtilization is the HPA's target, percent of the CPU limit
	// (hpa, and drpc's fallback).
	//
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=80
	TargetCPUUtilization int32 `json:"targetCPUUtilization,omitempty"`
	// Period is the control period (and the PromQL windows') of hpa.
	//
	// +kubebuilder:default="15s"
	Period metav1.Duration `json:"period,omitempty"`
	// DryRun decides and reports (status, events) without acting: a
	// shadow of the policy beside whatever scales the workload now.
	DryRun bool `json:"dryRun,omitempty"`
}

// PolicySource is a policy file: a key of a ConfigMap in the
// Autoscaler's namespace (in binaryData or data; read again whenever the
// ConfigMap changes), or an http(s) URL (read when the spec changes). A
// file that does not load is rejected with a PolicyRejected event, and the
// policy in force, if any, stays.
type PolicySource struct {
	// ConfigMapKeyRef is a key of a ConfigMap in the Autoscaler's
	// namespace that holds the file.
	ConfigMapKeyRef *ConfigMapKey `json:"configMapKeyRef,omitempty"`
	// URL is an http(s) URL of the file.
	//
	// +kubebuilder:validation:Pattern=`^https?://`
	URL string `json:"url,omitempty"`
}

// ConfigMapKey names a key of a ConfigMap.
type ConfigMapKey struct {
	// Name is the ConfigMap's name.
	//
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key is the key, in binaryData or data, whose value is the file.
	//
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
}

// Target is a workload.
type Target struct {
	// Kind is Deployment or StatefulSet.
	//
	// +kubebuilder:validation:Enum=Deployment;StatefulSet
	// +kubebuilder:default=Deployment
	Kind string `json:"kind,omitempty"`
	// Name is the workload's name.
	Name string `json:"name"`
	// Container is the serving container (default: the first).
	Container string `json:"container,omitempty"`
}

// AutoscalerStatus is what the operator last saw and did.
type AutoscalerStatus struct {
	// Conditions: Ready (the loop runs), MetricsAvailable (Prometheus
	// answered with the target's data this period).
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the spec generation the loop runs.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas are the target's replicas as last observed, and
	// DesiredReplicas the policy's last decision.
	Replicas int32 `json:"replicas,omitempty"`
	// DesiredReplicas is the policy's last decision on Replicas.
	DesiredReplicas int32 `json:"desiredReplicas,omitempty"`
	// Acting is policy, fallback (some workload's inputs are outside
	// the policy's trained range: the hpa policy acts for it), dry-run,
	// or holding (no data: nothing done).
	Acting string `json:"acting,omitempty"`
	// Policy identifies the policy file in force (drpc): the ConfigMap's
	// resource version or the URL, and the file's training provenance.
	Policy string `json:"policy,omitempty"`
	// Workloads are the drpc policy's Deployments as last observed.
	Workloads []WorkloadStatus `json:"workloads,omitempty"`
	// LastDecision is when the policy last decided.
	LastDecision *metav1.Time `json:"lastDecision,omitempty"`
}

// WorkloadStatus is one managed workload's state.
type WorkloadStatus struct {
	// Name is the Deployment's name.
	Name string `json:"name"`
	// Replicas as observed, and as decided this period.
	Replicas int32 `json:"replicas"`
	// DesiredReplicas is the replicas decided this period.
	DesiredReplicas int32 `json:"desiredReplicas"`
	// Fallback is whether the hpa policy acted for it this period, and
	// Reason why (which input was outside the trained range).
	Fallback bool `json:"fallback,omitempty"`
	// Reason is why the hpa policy acted: the first input outside the
	// trained range, e.g. "memory_limit 2.05 outside [-0.0217, 0.659]".
	Reason string `json:"reason,omitempty"`
}

// AutoscalerList is a list of Autoscalers.
//
// +kubebuilder:object:root=true
type AutoscalerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Autoscaler `json:"items"`
}
