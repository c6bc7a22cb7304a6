// Package operator is Shoal's Kubernetes operator: controller-runtime
// reconcilers that run Shoal's controllers on a cluster, reading
// Prometheus (package prom) and acting through the API (package kube),
// the same controller code as in the simulator. An Autoscaler
// (shoal.io/v1alpha1) scales one workload.
package operator

//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 rbac:roleName=shoal-operator paths=. output:rbac:dir=../deploy/rbac

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/autoscale"
	"github.com/shoal-project/shoal/kube"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/prom"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Condition types and the values of Status.Acting.
const (
	CondReady            = "Ready"
	CondMetricsAvailable = "MetricsAvailable"

	ActingPolicy  = "policy"
	ActingDryRun  = "dry-run"
	ActingHolding = "holding"
)

// The operator's permissions, which controller-gen turns into
// deploy/rbac/role.yaml: what it reads and changes, no more.
//
// +kubebuilder:rbac:groups=shoal.io,resources=autoscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups=shoal.io,resources=autoscalers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=apps,resources=deployments/scale;statefulsets/scale,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/resize,verbs=patch
// +kubebuilder:rbac:groups=serving.knative.dev,resources=services,verbs=get;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// AutoscalerReconciler runs every Autoscaler's loop: each period it
// observes the target through Prometheus, lets the policy decide, and
// applies the decision (or, in dry-run, only reports it). When Prometheus
// cannot answer it holds: no action from stale data, MetricsAvailable
// false, a warning event.
type AutoscalerReconciler struct {
	Client     client.Client
	Config     *rest.Config
	Recorder   events.EventRecorder
	Prometheus string // the Prometheus server's URL
	// Queries are the PromQL templates (default prom.DefaultQueries).
	Queries *prom.Queries
	// DryRun makes every Autoscaler a dry run (the operator in shadow
	// mode).
	DryRun bool
	// Now is the clock (default time.Now).
	Now func() time.Time

	mu    sync.Mutex
	kube  *kube.Client // connected at the first Autoscaler, shared by all
	loops map[types.NamespacedName]*loop
}

// loop is one Autoscaler's running state, rebuilt when its spec changes.
type loop struct {
	generation int64
	started    time.Time
	obs        *prom.Observer
	act        *kube.Actuator
	ctl        control.Controller
}

// SetupWithManager registers the reconciler.
func (r *AutoscalerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	r.loops = map[types.NamespacedName]*loop{}
	// One controller per manager; a process may run successive managers
	// (an operator restarted in process, as the tests do). A reconcile
	// mostly waits on Prometheus and the API server, so several run at
	// once (each Autoscaler's own are never concurrent).
	skip := true
	// Only spec changes start a reconcile: the loop's own status updates
	// must not, or every Autoscaler would run twice a period.
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.Autoscaler{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).Named("autoscaler").
		WithOptions(controller.Options{SkipNameValidation: &skip, MaxConcurrentReconciles: 8}).Complete(r)
}

// Reconcile runs one period of an Autoscaler's loop and asks to be run
// again a period later.
func (r *AutoscalerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var as v1alpha1.Autoscaler
	if err := r.Client.Get(ctx, req.NamespacedName, &as); err != nil {
		if apierrors.IsNotFound(err) {
			r.mu.Lock()
			delete(r.loops, req.NamespacedName)
			r.mu.Unlock()
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	period := as.Spec.Period.Duration
	if period <= 0 {
		period = 15 * time.Second
	}
	l, err := r.loop(req.NamespacedName, &as, period)
	if err != nil {
		r.Recorder.Eventf(&as, nil, corev1.EventTypeWarning, "InvalidSpec", "Configure", "%v", err)
		r.setCondition(&as, CondReady, false, "InvalidSpec", err.Error())
		return ctrl.Result{}, r.writeStatus(ctx, &as)
	}
	r.setCondition(&as, CondReady, true, "Running", fmt.Sprintf("%s policy every %v", policyOf(&as), period))
	as.Status.ObservedGeneration = as.Generation

	now := r.Now()
	var snap metrics.Snapshot
	if err := l.obs.Observe(ctx, now, &snap); err != nil {
		as.Status.Acting = ActingHolding
		r.setCondition(&as, CondMetricsAvailable, false, "PrometheusError", err.Error())
		r.Recorder.Eventf(&as, nil, corev1.EventTypeWarning, "MetricsUnavailable", "Observe", "holding, no action: %v", err)
		return ctrl.Result{RequeueAfter: period}, r.writeStatus(ctx, &as)
	}
	r.setCondition(&as, CondMetricsAvailable, true, "Observed", "Prometheus answered")
	s := snap.Services[0]
	as.Status.Replicas, as.Status.DesiredReplicas = int32(s.Replicas), int32(s.Replicas)
	dry := as.Spec.DryRun || r.DryRun
	as.Status.Acting = ActingPolicy
	if dry {
		as.Status.Acting = ActingDryRun
	}
	for _, a := range l.ctl.Decide(now.Sub(l.started), &snap) {
		if sr, ok := a.(control.SetReplicas); ok {
			as.Status.DesiredReplicas = int32(sr.Replicas)
		}
		if dry {
			r.Recorder.Eventf(&as, nil, corev1.EventTypeNormal, "WouldAct", "DryRun", "would apply %+v", a)
			continue
		}
		if err := l.act.Apply(now.Sub(l.started), a); err != nil {
			r.Recorder.Eventf(&as, nil, corev1.EventTypeWarning, "ActionFailed", "Apply", "%+v: %v", a, err)
			return ctrl.Result{RequeueAfter: period}, err
		}
		r.Recorder.Eventf(&as, nil, corev1.EventTypeNormal, "Acted", "Apply", "applied %+v", a)
	}
	t := metav1.NewTime(now)
	as.Status.LastDecision = &t
	return ctrl.Result{RequeueAfter: period}, r.writeStatus(ctx, &as)
}

// writeStatus writes as's status onto the latest version of the object,
// again on a conflict (another client changed it since it was read):
// the status is the loop's own, so the latest object takes it whole.
func (r *AutoscalerReconciler) writeStatus(ctx context.Context, as *v1alpha1.Autoscaler) error {
	status := as.Status
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		err := r.Client.Status().Update(ctx, as)
		if apierrors.IsConflict(err) {
			if gerr := r.Client.Get(ctx, client.ObjectKeyFromObject(as), as); gerr != nil {
				return gerr
			}
			as.Status = status
		}
		return err
	})
}

func policyOf(as *v1alpha1.Autoscaler) string {
	if as.Spec.Policy == "" {
		return "hpa"
	}
	return as.Spec.Policy
}

// loop returns the Autoscaler's loop, building it when its spec is new.
func (r *AutoscalerReconciler) loop(key types.NamespacedName, as *v1alpha1.Autoscaler, period time.Duration) (*loop, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.loops[key]; l != nil && l.generation == as.Generation {
		return l, nil
	}
	spec := &as.Spec
	kind := spec.Target.Kind
	if kind == "" {
		kind = kube.Deployment
	}
	service := spec.Target.Name
	if r.kube == nil {
		c, err := kube.Connect(r.Config, "")
		if err != nil {
			return nil, err
		}
		r.kube = c
	}
	act, err := r.kube.Actuator([]kube.Target{{Service: service, Namespace: as.Namespace, Kind: kind, Name: spec.Target.Name, Container: spec.Target.Container}})
	if err != nil {
		return nil, err
	}
	q := prom.DefaultQueries()
	if r.Queries != nil {
		q = *r.Queries
	}
	obs, err := prom.New(r.Prometheus, period, []prom.Workload{{Service: service, Namespace: as.Namespace, Name: spec.Target.Name, Container: spec.Target.Container}}, q)
	if err != nil {
		return nil, err
	}
	var ctl control.Controller
	switch policyOf(as) {
	case "hpa":
		target := float64(spec.TargetCPUUtilization)
		if target <= 0 {
			target = 80
		}
		ctl, err = autoscale.NewHPA(autoscale.HPAConfig{Service: service, MinReplicas: int(spec.MinReplicas), MaxReplicas: int(spec.MaxReplicas),
			Metrics: []autoscale.HPAMetric{{Kind: autoscale.MetricCPU, Target: target}}, SyncPeriod: period})
	default:
		err = fmt.Errorf("policy %q: want hpa", spec.Policy)
	}
	if err != nil {
		return nil, err
	}
	l := &loop{generation: as.Generation, started: r.Now().Add(-period), obs: obs, act: act, ctl: ctl}
	r.loops[key] = l
	return l, nil
}

func (r *AutoscalerReconciler) setCondition(as *v1alpha1.Autoscaler, typ string, ok bool, reason, msg string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&as.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: as.Generation})
}
