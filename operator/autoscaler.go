// Package operator is Shoal's Kubernetes operator: controller-runtime
// reconcilers that run Shoal's controllers on a cluster, reading
// Prometheus (package prom) and acting through the API (package kube),
// the same controller code as in the simulator. An Autoscaler
// (shoal.io/v1alpha1) scales one workload.
package operator

//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 rbac:roleName=shoal-operator paths=. output:rbac:dir=../deploy/helm/shoal/files

import (
	"context"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/kube"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/prom"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Condition types and the values of Status.Acting.
const (
	CondReady            = "Ready"
	CondMetricsAvailable = "MetricsAvailable"

	CondPolicyLoaded = "PolicyLoaded"

	ActingPolicy   = "policy"
	ActingFallback = "fallback"
	ActingDryRun   = "dry-run"
	ActingHolding  = "holding"
)

// autoscalerController is the Autoscaler controller's name, in logs and
// metrics.
const autoscalerController = "autoscaler"

// The operator's permissions, which controller-gen turns into
// deploy/helm/shoal/files/role.yaml: what it reads and changes, no more.
//
// +kubebuilder:rbac:groups=shoal.io,resources=autoscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups=shoal.io,resources=autoscalers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=apps,resources=deployments/scale;statefulsets/scale,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get
// +kubebuilder:rbac:groups="",resources=pods/resize,verbs=patch
// +kubebuilder:rbac:groups=serving.knative.dev,resources=services,verbs=get;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// The leader election's events go through the core group's API.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// AutoscalerReconciler runs every Autoscaler's loop: each period it
// observes the target through Prometheus, lets the policy decide, and
// applies the decision (or, in dry-run, only reports it). When Prometheus
// cannot answer it holds: no action from stale data, MetricsAvailable
// false, a warning event.
type AutoscalerReconciler struct {
	Client   client.Client
	Config   *rest.Config
	Recorder events.EventRecorder
	// APIReader reads policy ConfigMaps uncached, so that the operator
	// does not watch every ConfigMap of the cluster (default Client).
	APIReader  client.Reader
	Prometheus string // the Prometheus server's URL
	// Queries are the PromQL templates (default prom.DefaultQueries).
	Queries *prom.Queries
	// MinWindow is the shortest window of the PromQL queries (see
	// prom.Observer.SetMinWindow); 0: the control period.
	MinWindow time.Duration
	// DryRun makes every Autoscaler a dry run (the operator in shadow
	// mode).
	DryRun bool
	// Now is the clock (default time.Now).
	Now func() time.Time

	loops loopSet[*loop]
}

// loop is one Autoscaler's running state, rebuilt when its spec or its
// policy file changes.
type loop struct {
	fileState
	core
	obs     *prom.Observer
	act     *kube.Actuator
	drpc    *drpc.Controller // the same as ctl, with drpc
	managed map[string]bool  // the workloads drpc scales
}

// SetupWithManager registers the reconciler.
func (r *AutoscalerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.APIReader == nil {
		r.APIReader = r.Client
	}
	// A reconcile mostly waits on Prometheus and the API server, so
	// several run at once (each Autoscaler's own are never concurrent).
	return periodic(mgr, &v1alpha1.Autoscaler{}, autoscalerController, 8, r)
}

// Reconcile runs one period of an Autoscaler's loop and asks to be run
// again a period later.
func (r *AutoscalerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var as v1alpha1.Autoscaler
	if found, err := fetchObject(ctx, r.Client, req, &as, &r.loops); !found {
		return ctrl.Result{}, err
	}
	rd := round{c: r.Client, rec: r.Recorder, controller: autoscalerController, obj: &as,
		st: statusRef{&as.Status.Conditions, &as.Status.ObservedGeneration, &as.Status.Policy, &as.Status.Acting}}
	l, err := r.loop(ctx, req.NamespacedName, &as)
	if err != nil {
		return rd.invalid(ctx, err)
	}
	var snap metrics.Snapshot
	acts, now, ok, res, err := rd.decide(ctx, &l.core, policyOf(&as), l.about, l.obs, r.Now(), &snap)
	if !ok {
		return res, err
	}
	r.report(&as, l, &snap, acts)
	decisions.WithLabelValues(autoscalerController, as.Status.Acting).Inc()
	for _, a := range acts {
		if as.Status.Acting == ActingDryRun {
			actions.WithLabelValues(autoscalerController, actionName(a), "dry-run").Inc()
			r.Recorder.Eventf(&as, nil, corev1.EventTypeNormal, "WouldAct", "DryRun", "would apply %+v", a)
			continue
		}
		if err := l.act.Apply(now, a); err != nil {
			// Counted and skipped: the other actions, and the next
			// period, go on.
			actions.WithLabelValues(autoscalerController, actionName(a), "failed").Inc()
			r.Recorder.Eventf(&as, nil, corev1.EventTypeWarning, "ActionFailed", "Apply", "%+v: %v; skipped", a, err)
			continue
		}
		actions.WithLabelValues(autoscalerController, actionName(a), "applied").Inc()
		if t := l.obs.Sampled(); !t.IsZero() {
			actionLatency.WithLabelValues(autoscalerController).Observe(r.Now().Sub(t).Seconds())
		}
		r.Recorder.Eventf(&as, nil, corev1.EventTypeNormal, "Acted", "Apply", "applied %+v", a)
	}
	t := metav1.NewTime(r.Now())
	as.Status.LastDecision = &t
	return ctrl.Result{RequeueAfter: l.period}, writeStatus(ctx, r.Client, &as)
}

// report writes what the loop saw and decided into as's status.
func (r *AutoscalerReconciler) report(as *v1alpha1.Autoscaler, l *loop, snap *metrics.Snapshot, acts []control.Action) {
	desired := func(name string, replicas int) int32 {
		for _, a := range acts {
			if sr, ok := a.(control.SetReplicas); ok && sr.Service == name {
				return int32(sr.Replicas)
			}
		}
		return int32(replicas)
	}
	as.Status.Acting = ActingPolicy
	as.Status.Workloads = as.Status.Workloads[:0]
	for _, s := range snap.Services {
		if l.drpc == nil {
			as.Status.Replicas, as.Status.DesiredReplicas = int32(s.Replicas), desired(s.Name, s.Replicas)
			continue
		}
		if !l.managed[s.Name] {
			continue
		}
		w := v1alpha1.WorkloadStatus{Name: s.Name, Replicas: int32(s.Replicas), DesiredReplicas: desired(s.Name, s.Replicas), Fallback: l.drpc.Fallback(s.Name)}
		if w.Fallback {
			as.Status.Acting = ActingFallback
			w.Reason = l.drpc.OutOfRange(s.Name)
		}
		as.Status.Workloads = append(as.Status.Workloads, w)
	}
	if as.Spec.DryRun || r.DryRun {
		as.Status.Acting = ActingDryRun
	}
}

func policyOf(as *v1alpha1.Autoscaler) string {
	if as.Spec.Policy == "" {
		return "hpa"
	}
	return as.Spec.Policy
}
