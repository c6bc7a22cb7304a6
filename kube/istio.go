package kube

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	istioapi "istio.io/api/networking/v1"
	istionet "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// DefaultLocalityLabel is the label that names a workload's location when
// a target names none: the cluster ID Istio gives every workload and
// endpoint.
const DefaultLocalityLabel = "topology.istio.io/cluster"

// The VirtualServices the actuator writes.
const (
	// VirtualServicePrefix prefixes a service's name to name its
	// VirtualService.
	VirtualServicePrefix = "shoal-"
	// RoutePrefix prefixes a caller location to name its HTTP route.
	RoutePrefix = "from-"
	// DefaultRoute names the last route, which sends every other
	// caller's calls to the host as a whole.
	DefaultRoute = "default"
	// ManagedBy is the label that marks a VirtualService as Shoal's.
	ManagedBy = "app.kubernetes.io/managed-by"
)

// istioGroupVersion is the VirtualService API SetRouteWeights writes.
const istioGroupVersion = "networking.istio.io/v1"

// istioRoutes is a cluster's VirtualService client, its API found by
// discovery on first use.
type istioRoutes struct {
	client istioclient.Interface
	mu     sync.Mutex
	served bool // discovery found the API (a miss is asked again next time)
	// conflicts counts the writes retried because another writer changed
	// the VirtualService in between (or created it first).
	conflicts atomic.Int64
}

// virtualServices returns the VirtualService client of a namespace, or
// an error naming the API when the cluster does not serve it.

// conflictBackoff retries a VirtualService write that lost a race more
// patiently than client-go's DefaultBackoff (4 tries): writers for several
// caller locations may update one object at once, and the full jitter
// keeps them from colliding again in step.
var conflictBackoff = wait.Backoff{Steps: 10, Duration: 10 * time.Millisecond, Factor: 2, Jitter: 1, Cap: 2 * time.Second}

func (c *Client) virtualServices(namespace string) (interface {
	Get(context.Context, string, metav1.GetOptions) (*istionet.VirtualService, error)
	Create(context.Context, *istionet.VirtualService, metav1.CreateOptions) (*istionet.VirtualService, error)
	Update(context.Context, *istionet.VirtualService, metav1.UpdateOptions) (*istionet.VirtualService, error)
}, error) {
	r := &c.istio
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.served {
		res, err := c.client.Discovery().ServerResourcesForGroupVersion(istioGroupVersion)
		switch {
		case apierrors.IsNotFound(err):
			return nil, fmt.Errorf("the cluster does not serve Istio's %s API (VirtualServices): install Istio, or its CRDs, to route", istioGroupVersion)
		case err != nil:
			return nil, fmt.Errorf("discovery of %s: %w", istioGroupVersion, err)
		}
		for _, x := range res.APIResources {
			r.served = r.served || x.Name == "virtualservices"
		}
		if !r.served {
			return nil, fmt.Errorf("the cluster serves %s without virtualservices: is Istio's VirtualService CRD installed?", istioGroupVersion)
		}
	}
	return r.client.NetworkingV1().VirtualServices(namespace), nil
}

// Percentages turns route weights into Istio's whole percentages summing
// to 100, by the largest remainder method (the package's doc), in the
// order of the locations' names, without those that get 0. The weights
// must be finite and non-negative, with a positive sum, and name
// locations that are valid subset names.
func Percentages(weights map[string]float64) ([]LocationPercent, error) {
	locs := make([]string, 0, len(weights))
	total := 0.0
	for l, w := range weights {
		if l == "" {
			return nil, errors.New("a weight of no location")
		}
		if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			return nil, fmt.Errorf("location %s: weight %g, want finite and >= 0", l, w)
		}
		locs = append(locs, l)
		total += w
	}
	if total <= 0 || math.IsInf(total, 0) {
		return nil, fmt.Errorf("weights %v: want a positive, finite sum", weights)
	}
	slices.Sort(locs)
	out := make([]LocationPercent, len(locs))
	frac := make([]float64, len(locs))
	left := 100
	for i, l := range locs {
		exact := weights[l] / total * 100
		fl := math.Floor(exact)
		out[i] = LocationPercent{Location: l, Percent: int32(fl)}
		frac[i] = exact - fl
		left -= int(fl)
	}
	// The points missing go to the largest remainders, ties by name.
	order := make([]int, len(locs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case frac[a] > frac[b]:
			return -1
		case frac[a] < frac[b]:
			return 1
		}
		return 0
	})
	for k := 0; left > 0; k = (k + 1) % len(order) {
		out[order[k]].Percent++
		left--
	}
	return slices.DeleteFunc(out, func(p LocationPercent) bool { return p.Percent == 0 }), nil
}

// LocationPercent is one location's share of a route, in percent.
type LocationPercent struct {
	Location string
	Percent  int32
}

// routeWeights sets the route of the callers in location from to the
// weights (the package's doc).
func (a *Actuator) routeWeights(ctx context.Context, t Target, from string, weights map[string]float64) error {
	if msgs := content.IsLabelValue(from); from == "" || len(msgs) > 0 {
		return fmt.Errorf("kube: %s: route weights from location %q: not a label value: %s", t.Service, from, strings.Join(msgs, "; "))
	}
	pct, err := Percentages(weights)
	if err != nil {
		return fmt.Errorf("kube: %s: route weights from %s: %w", t.Service, from, err)
	}
	for _, p := range pct { // Istio's subset names are DNS labels
		if msgs := content.IsDNS1123Label(p.Location); len(msgs) > 0 {
			return fmt.Errorf("kube: %s: route weights from %s: location %q is no subset name: %s", t.Service, from, p.Location, strings.Join(msgs, "; "))
		}
	}
	name := VirtualServicePrefix + t.Service
	if msgs := content.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("kube: %s: VirtualService name %q: %s", t.Service, name, strings.Join(msgs, "; "))
	}
	vss, err := a.virtualServices(t.Namespace)
	if err != nil {
		return fmt.Errorf("kube: %s: SetRouteWeights: %w", t.Service, err)
	}
	route := &istioapi.HTTPRoute{
		Name:  RoutePrefix + from,
		Match: []*istioapi.HTTPMatchRequest{{SourceLabels: map[string]string{t.LocalityLabel: from}}},
	}
	for _, p := range pct {
		route.Route = append(route.Route, &istioapi.HTTPRouteDestination{
			Destination: &istioapi.Destination{Host: t.Host, Subset: p.Location}, Weight: p.Percent})
	}
	tries := 0
	err = retry.OnError(conflictBackoff, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		if tries++; tries > 1 {
			a.istio.conflicts.Add(1)
		}
		vs, err := vss.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			vs = &istionet.VirtualService{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.Namespace, Labels: map[string]string{ManagedBy: "shoal"}}}
			vs.Spec.Hosts = []string{t.Host}
			vs.Spec.Http = withRoute(nil, route, t.Host)
			_, err = vss.Create(ctx, vs, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		if vs.Labels[ManagedBy] != "shoal" {
			return fmt.Errorf("VirtualService %s/%s exists and is not Shoal's (no label %s=shoal): left alone", t.Namespace, name, ManagedBy)
		}
		vs.Spec.Hosts = []string{t.Host}
		vs.Spec.Http = withRoute(vs.Spec.Http, route, t.Host)
		_, err = vss.Update(ctx, vs, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("kube: %s: route weights from %s (VirtualService %s/%s): %w", t.Service, from, t.Namespace, name, err)
	}
	return nil
}

// withRoute returns the HTTP routes with route in place of its namesake:
// the from- routes in the order of their names, then any other routes as
// they were, then the default route to host.
func withRoute(routes []*istioapi.HTTPRoute, route *istioapi.HTTPRoute, host string) []*istioapi.HTTPRoute {
	var from, other []*istioapi.HTTPRoute
	for _, r := range routes {
		switch {
		case r.Name == route.Name || r.Name == DefaultRoute:
		case strings.HasPrefix(r.Name, RoutePrefix):
			from = append(from, r)
		default:
			other = append(other, r)
		}
	}
	from = append(from, route)
	slices.SortFunc(from, func(a, b *istioapi.HTTPRoute) int { return strings.Compare(a.Name, b.Name) })
	def := &istioapi.HTTPRoute{Name: DefaultRoute, Route: []*istioapi.HTTPRouteDestination{{Destination: &istioapi.Destination{Host: host}}}}
	return append(append(from, other...), def)
}
