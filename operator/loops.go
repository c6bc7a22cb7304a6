package operator

import (
	"sync"

	"github.com/shoal-project/shoal/kube"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// loopSet is a periodic reconciler's running loops, one per object, and
// the cluster connection they share (made for the first). Its zero value
// is empty and ready.
type loopSet[L any] struct {
	mu    sync.Mutex
	kube  *kube.Client
	loops map[types.NamespacedName]L
}

func (s *loopSet[L]) get(key types.NamespacedName) L {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loops[key]
}

func (s *loopSet[L]) set(key types.NamespacedName, l L) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loops == nil {
		s.loops = map[types.NamespacedName]L{}
	}
	s.loops[key] = l
}

func (s *loopSet[L]) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.loops, key)
}

// client is the shared connection to the cluster at cfg.
func (s *loopSet[L]) client(cfg *rest.Config) (*kube.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kube == nil {
		c, err := kube.Connect(cfg, "")
		if err != nil {
			return nil, err
		}
		s.kube = c
	}
	return s.kube, nil
}

// periodic registers r for obj's kind under name, with workers reconciles
// at once. One controller per manager, though a process may run
// successive managers (an operator restarted in process, as the tests
// do). Only spec changes start a reconcile: a loop's own status updates
// must not, or every object would run twice a period.
func periodic(mgr ctrl.Manager, obj client.Object, name string, workers int, r reconcile.Reconciler) error {
	skip := true
	return ctrl.NewControllerManagedBy(mgr).For(obj, builder.WithPredicates(predicate.GenerationChangedPredicate{})).Named(name).
		WithOptions(controller.Options{SkipNameValidation: &skip, MaxConcurrentReconciles: workers}).Complete(r)
}
