package controllers

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// patchStatus is how both controllers write status (CloudNativePG's status patch): a merge
// patch carrying the resourceVersion read, so that a status written meanwhile by someone else
// makes the API server answer Conflict instead of being overwritten. On Conflict it reads obj
// again (in place, from the manager's cache: the backoff gives the cache time to catch up) and
// calls update again, a bounded number of times. update sets obj's status from obj as it is
// now; patchStatus writes nothing when that changed nothing, and tells whether it wrote.
func patchStatus(ctx context.Context, c client.Client, obj client.Object, update func()) (written bool, err error) {
	key := client.ObjectKeyFromObject(obj)
	first := true
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if !first {
			// Decoding into a used object can leave fields the fresh copy lacks: start empty.
			reflect.ValueOf(obj).Elem().SetZero()
			if err := c.Get(ctx, key, obj); err != nil {
				return err
			}
		}
		first = false
		orig := obj.DeepCopyObject().(client.Object)
		update()
		if written = !equality.Semantic.DeepEqual(orig, obj); !written {
			return nil
		}
		return c.Status().Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	})
	return written && err == nil, err
}
