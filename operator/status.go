package operator

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// writeStatus writes obj's status, again onto the latest version of the
// object on a conflict (another client changed it since it was read): the
// status is the reconciler's own, and the status subresource takes
// nothing else from the request, so only the resource version is renewed.
func writeStatus(ctx context.Context, c client.Client, obj client.Object) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		err := c.Status().Update(ctx, obj)
		if apierrors.IsConflict(err) {
			latest := obj.DeepCopyObject().(client.Object)
			if gerr := c.Get(ctx, client.ObjectKeyFromObject(obj), latest); gerr != nil {
				return gerr
			}
			obj.SetResourceVersion(latest.GetResourceVersion())
		}
		return err
	})
}

// setCondition sets one condition of an object of the given generation.
func setCondition(conds *[]metav1.Condition, generation int64, typ string, ok bool, reason, msg string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: generation})
}

// fileState is what a loop knows of its policy or model file.
type fileState struct {
	generation int64  // the spec generation the loop was built for
	policy     string // the file in force ("" for a policy without one)
	about      string // the file and its provenance, for the status
	rejected   string // the file last rejected
}

// knows reports whether the loop was built for this generation and has
// already loaded or rejected file version v.
func (f *fileState) knows(generation int64, v string) bool {
	return f.generation == generation && (f.policy == v || f.rejected == v)
}
