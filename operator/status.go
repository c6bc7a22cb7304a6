package operator

import (
	"context"

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
