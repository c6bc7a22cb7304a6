package operator

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/control/policy"
	"github.com/shoal-project/shoal/control/slate"
	"github.com/shoal-project/shoal/kube"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/prom"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The RoutePolicy reconciler's permissions (deploy/helm/shoal/files/role.yaml).
//
// +kubebuilder:rbac:groups=shoal.io,resources=routepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=shoal.io,resources=routepolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=networking.istio.io,resources=virtualservices,verbs=get;list;watch;create;update;patch

// routePolicyController is the RoutePolicy controller's name, in logs
// and in the operator's metrics.
const routePolicyController = "routepolicy"

// The RoutePolicy's policies.
const (
	RouteLocality   = "locality"
	RouteMulticloud = "multicloud"
	RouteSlate      = "slate"
)

// RoutePolicyReconciler runs every RoutePolicy's loop: each period it
// observes the services' routes and replicas in every location through
// Prometheus (prom.RouteObserver), lets the policy decide, and writes the
// route weights into Istio VirtualServices (kube's SetRouteWeights), or
// in dry-run only reports them. When Prometheus cannot answer it holds:
// no action from stale data, MetricsAvailable false, a warning event.
//
// What each policy reads, and how faithfully a cluster gives it:
//   - locality reads each location's ready and total replicas of each
//     service: kube-state-metrics gives exactly that.
//   - multicloud's models read, per service, the ready replicas in each
//     location (kube-state-metrics), the calls per second to it from
//     each location (Istio's, by source_cluster), the standard
//     processing times (the model file), the RTT of each pair of
//     locations (the blackbox exporter's probes), and each location's
//     background load (node_exporter's CPU less cAdvisor's of the
//     namespace's pods, over the nodes' cores); its variation check also
//     reads the clients' calls per location (Istio's calls whose caller
//     is not a routed service). The simulator produces the same series,
//     with a scrape's lag and the probes' jitter, so the model file a
//     user trains is the one that runs here. Every service counts as
//     placed in every location (with 0 replicas where it has none), so
//     the learned shifts may send calls to a location without replicas
//     if its model predicts that to be faster.
//   - slate reads the calls, summed latency and bytes of every route
//     (Istio's, by source and destination cluster), the ready replicas,
//     the probed RTTs and the background load: the same series, from
//     which it fits its own models as it runs.
type RoutePolicyReconciler struct {
	Client   client.Client
	Config   *rest.Config
	Recorder events.EventRecorder
	// APIReader reads model ConfigMaps uncached (default Client).
	APIReader  client.Reader
	Prometheus string // the Prometheus server's URL
	// Queries are the PromQL templates (default prom.DefaultRouteQueries).
	Queries *prom.RouteQueries
	// MinWindow is the shortest window of the PromQL queries; 0: the
	// control period.
	MinWindow time.Duration
	// DryRun makes every RoutePolicy a dry run.
	DryRun bool
	// Now is the clock (default time.Now).
	Now func() time.Time

	loops loopSet[*routeLoop]
}

// routeLoop is one RoutePolicy's running state, rebuilt when its spec or
// its model file changes.
type routeLoop struct {
	fileState // the model file ("" for locality)
	core
	obs *prom.RouteObserver
	act *kube.Actuator
	// fresh makes a new controller of the same policy: after a failed
	// write, so that every route is decided and written again.
	fresh func() control.Controller
}

// SetupWithManager registers the reconciler.
func (r *RoutePolicyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.APIReader == nil {
		r.APIReader = r.Client
	}
	return periodic(mgr, &v1alpha1.RoutePolicy{}, routePolicyController, 4, r)
}

// Reconcile runs one period of a RoutePolicy's loop and asks to be run
// again a period later.
func (r *RoutePolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rp v1alpha1.RoutePolicy
	if found, err := fetchObject(ctx, r.Client, req, &rp, &r.loops); !found {
		return ctrl.Result{}, err
	}
	rd := round{c: r.Client, rec: r.Recorder, controller: routePolicyController, obj: &rp,
		st: statusRef{&rp.Status.Conditions, &rp.Status.ObservedGeneration, &rp.Status.Policy, &rp.Status.Acting}}
	l, err := r.loop(ctx, req.NamespacedName, &rp)
	if err != nil {
		return rd.invalid(ctx, err)
	}
	pruneRoutes(&rp)
	var snap metrics.Snapshot
	acts, now, ok, res, err := rd.decide(ctx, &l.core, routePolicyOf(&rp), l.about, l.obs, r.Now(), &snap)
	if !ok {
		return res, err
	}
	dry := rp.Spec.DryRun || r.DryRun
	rp.Status.Acting = ActingPolicy
	if dry {
		rp.Status.Acting = ActingDryRun
	}
	decisions.WithLabelValues(routePolicyController, rp.Status.Acting).Inc()
	decided := metav1.NewTime(r.Now())
	for _, a := range acts {
		rw, ok := a.(control.SetRouteWeights)
		if !ok {
			continue // the routing policies decide nothing else
		}
		pct, err := kube.Percentages(rw.Weights)
		if err != nil {
			r.Recorder.Eventf(&rp, nil, corev1.EventTypeWarning, "ActionFailed", "Decide", "%s from %s: %v", rw.Service, rw.From, err)
			continue
		}
		if dry {
			actions.WithLabelValues(routePolicyController, actionName(rw), "dry-run").Inc()
			r.Recorder.Eventf(&rp, nil, corev1.EventTypeNormal, "WouldAct", "DryRun", "would route %s's calls from %s: %s", rw.Service, rw.From, percentText(pct))
			setRoute(&rp.Status, rw.Service, rw.From, pct, true, decided)
			continue
		}
		if err := l.act.Apply(now, rw); err != nil {
			// Decide again from scratch next period: the policy counts
			// these weights as in force, and they are not.
			l.ctl = l.fresh()
			actions.WithLabelValues(routePolicyController, actionName(rw), "failed").Inc()
			r.Recorder.Eventf(&rp, nil, corev1.EventTypeWarning, "ActionFailed", "Apply", "%s from %s: %v", rw.Service, rw.From, err)
			return ctrl.Result{RequeueAfter: l.period}, writeStatus(ctx, r.Client, &rp)
		}
		actions.WithLabelValues(routePolicyController, actionName(rw), "applied").Inc()
		r.Recorder.Eventf(&rp, nil, corev1.EventTypeNormal, "Acted", "Apply", "routed %s's calls from %s: %s", rw.Service, rw.From, percentText(pct))
		setRoute(&rp.Status, rw.Service, rw.From, pct, false, decided)
	}
	rp.Status.LastDecision = &decided
	return ctrl.Result{RequeueAfter: l.period}, writeStatus(ctx, r.Client, &rp)
}

func percentText(pct []kube.LocationPercent) string {
	var s []string
	for _, p := range pct {
		s = append(s, fmt.Sprintf("%s %d%%", p.Location, p.Percent))
	}
	return strings.Join(s, ", ")
}

// pruneRoutes drops from the status the routes of services and
// locations the spec no longer has.
func pruneRoutes(rp *v1alpha1.RoutePolicy) {
	rp.Status.Routes = slices.DeleteFunc(rp.Status.Routes, func(rs v1alpha1.RouteStatus) bool {
		return !slices.ContainsFunc(rp.Spec.Services, func(s v1alpha1.RouteService) bool { return s.Name == rs.Service }) ||
			!slices.ContainsFunc(rp.Spec.Locations, func(l v1alpha1.RouteLocation) bool { return l.Name == rs.From })
	})
}

// setRoute records a route's weights in the status, in the order of
// service and location.
func setRoute(st *v1alpha1.RoutePolicyStatus, service, from string, pct []kube.LocationPercent, dry bool, at metav1.Time) {
	w := make(map[string]int32, len(pct))
	for _, p := range pct {
		w[p.Location] = p.Percent
	}
	rs := v1alpha1.RouteStatus{Service: service, From: from, Weights: w, DryRun: dry, Changed: at}
	i, found := slices.BinarySearchFunc(st.Routes, rs, func(a, b v1alpha1.RouteStatus) int {
		return strings.Compare(a.Service+"\x00"+a.From, b.Service+"\x00"+b.From)
	})
	if found {
		if maps.Equal(st.Routes[i].Weights, w) && st.Routes[i].DryRun == dry {
			return // unchanged: keep when it was first decided
		}
		st.Routes[i] = rs
		return
	}
	st.Routes = slices.Insert(st.Routes, i, rs)
}

func routePolicyOf(rp *v1alpha1.RoutePolicy) string {
	if rp.Spec.Policy == "" {
		return RouteLocality
	}
	return rp.Spec.Policy
}

// loop returns the RoutePolicy's loop, building it when its spec or its
// model file is new. A model file that does not load leaves the loop in
// force, if there is one, and is reported once (PolicyRejected).
func (r *RoutePolicyReconciler) loop(ctx context.Context, key types.NamespacedName, rp *v1alpha1.RoutePolicy) (*routeLoop, error) {
	cur := r.loops.get(key)
	version, raw, err := r.modelFile(ctx, rp, cur)
	if err != nil {
		return r.reject(rp, cur, version, err)
	}
	if cur != nil && cur.knows(rp.Generation, version) {
		return cur, nil
	}
	l, err := r.build(rp, version, raw)
	if err != nil {
		return r.reject(rp, cur, version, err)
	}
	if version != "" {
		setCondition(&rp.Status.Conditions, rp.Generation, CondPolicyLoaded, true, "Loaded", l.about)
	}
	r.loops.set(key, l)
	return l, nil
}

// reject keeps cur, if there is one, when a new model file fails, and
// says why once per version.
func (r *RoutePolicyReconciler) reject(rp *v1alpha1.RoutePolicy, cur *routeLoop, version string, err error) (*routeLoop, error) {
	if version != "" {
		setCondition(&rp.Status.Conditions, rp.Generation, CondPolicyLoaded, false, "PolicyRejected", fmt.Sprintf("%s: %v", version, err))
	}
	if cur == nil || version == "" {
		return nil, err
	}
	if cur.rejected != version {
		cur.rejected = version
		inForce := cur.about
		if inForce == "" {
			inForce = RouteLocality
		}
		policyRejected.WithLabelValues(routePolicyController).Inc()
		r.Recorder.Eventf(rp, nil, corev1.EventTypeWarning, "PolicyRejected", "Load", "%s: %v; the policy in force (%s) stays", version, err, inForce)
	}
	return cur, nil
}

// modelFile returns the version of rp's model file ("" for locality) and
// its bytes, unless cur already runs or rejected that version.
func (r *RoutePolicyReconciler) modelFile(ctx context.Context, rp *v1alpha1.RoutePolicy, cur *routeLoop) (string, []byte, error) {
	src := rp.Spec.PolicyFrom
	if routePolicyOf(rp) != RouteMulticloud {
		return "", nil, nil
	}
	if src == nil {
		return "", nil, fmt.Errorf("policyFrom is required by the multicloud policy")
	}
	return readSource(ctx, r.APIReader, rp.Namespace, src, func(v string) bool {
		return cur != nil && cur.knows(rp.Generation, v)
	})
}

// build makes a new loop for rp's spec and model file.
func (r *RoutePolicyReconciler) build(rp *v1alpha1.RoutePolicy, version string, raw []byte) (*routeLoop, error) {
	spec := &rp.Spec
	l := &routeLoop{fileState: fileState{generation: rp.Generation, policy: version, about: version}, core: core{period: spec.Period.Duration}}
	if l.period <= 0 {
		l.period = 10 * time.Second
	}
	var locations []string
	for _, loc := range spec.Locations {
		locations = append(locations, loc.Name)
	}
	switch routePolicyOf(rp) {
	case RouteLocality:
		l.fresh = func() control.Controller {
			s, _ := policy.Parse(RouteLocality)
			c, _ := multicloud.NewBaseline(s, 1)
			return c
		}
	case RouteMulticloud:
		pol, err := multicloud.ReadPolicy(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		if !slices.Equal(pol.Locations, locations) {
			return nil, fmt.Errorf("the models' locations %v are not the RoutePolicy's %v (the same, in the same order)", pol.Locations, locations)
		}
		kind := spec.Model
		if kind == "" {
			kind = multicloud.KindChosen
		}
		var routed []string
		for _, s := range pol.Services {
			if slices.ContainsFunc(spec.Services, func(x v1alpha1.RouteService) bool { return x.Name == s.Name }) {
				routed = append(routed, s.Name)
			}
		}
		if len(routed) == 0 {
			return nil, fmt.Errorf("the file has models of %d services, none of them the RoutePolicy's", len(pol.Services))
		}
		models, err := pol.Models(kind)
		if err != nil {
			return nil, err
		}
		opt := multicloud.DefaultOptions()
		if spec.Objective != "" {
			opt.Objective = spec.Objective
		}
		if q := spec.MaxEgressGBPerHour; q != nil {
			opt.MaxEgressGBPerHour = q.AsApproximateFloat64()
		}
		if q := spec.EgressSecondsPerGB; q != nil {
			opt.EgressPrice = q.AsApproximateFloat64()
		}
		if err := opt.Check(models); err != nil {
			return nil, err
		}
		l.fresh = func() control.Controller {
			models, _ := pol.Models(kind) // fresh instances: a model keeps scratch
			return multicloud.NewController(models, opt)
		}
		l.about = fmt.Sprintf("%s (%s models of %s, trained on %s, seed %d)", version, kind, strings.Join(routed, ", "), pol.Scenario, pol.Provenance.Seed)
	case RouteSlate:
		opt := slate.DefaultOptions()
		if q := spec.EgressSecondsPerGB; q != nil {
			if opt.EgressWeight = q.AsApproximateFloat64(); opt.EgressWeight < 0 {
				return nil, fmt.Errorf("egressSecondsPerGB %s: want 0 or more", q)
			}
		}
		l.fresh = func() control.Controller { return slate.NewController(opt) }
	default:
		return nil, fmt.Errorf("policy %q: want locality, multicloud or slate", spec.Policy)
	}
	l.ctl = l.fresh()
	return l, r.connect(l, rp, locations)
}

// connect gives l its actuator of the services' routes and its observer.
func (r *RoutePolicyReconciler) connect(l *routeLoop, rp *v1alpha1.RoutePolicy, locations []string) error {
	kc, err := r.loops.client(r.Config)
	if err != nil {
		return err
	}
	var targets []kube.Target
	var services []prom.RouteService
	for _, s := range rp.Spec.Services {
		targets = append(targets, kube.Target{Service: s.Name, Namespace: rp.Namespace, Name: s.Name, Host: s.Host, LocalityLabel: rp.Spec.LocalityLabel})
		services = append(services, prom.RouteService{Name: s.Name, Workload: s.Workload})
	}
	if l.act, err = kc.Actuator(targets); err != nil {
		return err
	}
	q := prom.DefaultRouteQueries()
	if r.Queries != nil {
		q = *r.Queries
	}
	if l.obs, err = prom.NewRouteObserver(r.Prometheus, l.period, rp.Namespace, services, locations, q); err != nil {
		return err
	}
	l.obs.SetMinWindow(r.MinWindow)
	return nil
}
