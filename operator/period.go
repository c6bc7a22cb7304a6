package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// observer reads a loop's snapshot from Prometheus (prom.Observer,
// prom.RouteObserver).
type observer interface {
	Observe(ctx context.Context, now time.Time, snap *metrics.Snapshot) error
}

// core is what every policy loop runs each period: it observes, then its
// controller decides on the controllers' clock, which counts periods as
// the simulator's does.
type core struct {
	period time.Duration
	step   int64 // periods decided
	ctl    control.Controller
}

// statusRef points at the status fields a period writes, which the
// Autoscaler's and the RoutePolicy's statuses share.
type statusRef struct {
	conds    *[]metav1.Condition
	observed *int64
	policy   *string
	acting   *string
}

// round is one reconcile of a policy loop's object: the steps an
// Autoscaler and a RoutePolicy share, around what each does with the
// actions.
type round struct {
	c          client.Client
	rec        events.EventRecorder
	controller string // the metrics' controller label
	obj        client.Object
	st         statusRef
}

// fetchObject reads the object of req into obj; gone, its loop is forgotten
// and found is false.
func fetchObject[L any](ctx context.Context, c client.Client, req ctrl.Request, obj client.Object, loops *loopSet[L]) (found bool, err error) {
	if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			loops.forget(req.NamespacedName)
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// invalid reports a spec the loop could not be built from, and tries
// again in a minute.
func (r round) invalid(ctx context.Context, err error) (ctrl.Result, error) {
	r.rec.Eventf(r.obj, nil, corev1.EventTypeWarning, "InvalidSpec", "Configure", "%v", err)
	setCondition(r.st.conds, r.obj.GetGeneration(), CondReady, false, "InvalidSpec", err.Error())
	return ctrl.Result{RequeueAfter: time.Minute}, writeStatus(ctx, r.c, r.obj)
}

// decide marks the loop running (the policy and its file in force),
// observes and, when Prometheus answers, has the controller decide. With
// no answer it holds: no action, MetricsAvailable false, the status
// written; decided is then false and res, err are the reconcile's answer.
func (r round) decide(ctx context.Context, l *core, name, about string, obs observer, now time.Time, snap *metrics.Snapshot) (acts []control.Action, at time.Duration, decided bool, res ctrl.Result, err error) {
	gen := r.obj.GetGeneration()
	setCondition(r.st.conds, gen, CondReady, true, "Running", fmt.Sprintf("%s policy every %v", name, l.period))
	*r.st.observed, *r.st.policy = gen, about
	if err := obs.Observe(ctx, now, snap); err != nil {
		*r.st.acting = ActingHolding
		setCondition(r.st.conds, gen, CondMetricsAvailable, false, "PrometheusError", err.Error())
		r.rec.Eventf(r.obj, nil, corev1.EventTypeWarning, "MetricsUnavailable", "Observe", "holding, no action: %v", err)
		decisions.WithLabelValues(r.controller, ActingHolding).Inc()
		return nil, 0, false, ctrl.Result{RequeueAfter: l.period}, writeStatus(ctx, r.c, r.obj)
	}
	setCondition(r.st.conds, gen, CondMetricsAvailable, true, "Observed", "Prometheus answered")
	l.step++
	at = time.Duration(l.step) * l.period
	return l.ctl.Decide(at, snap), at, true, ctrl.Result{}, nil
}
