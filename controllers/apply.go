package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// apply makes the object in the cluster match desired, built by a pure builder:
//   - desired gets the AAACluster as controller owner and the hash of itself in
//     AnnotationSpecHash;
//   - absent: created;
//   - present with the same hash and owner: left alone (no write at all);
//   - present otherwise: updated, keeping labels and annotations added by others and the fields
//     the API server or other controllers own (see preserve).
//
// It returns the object as it is in the cluster after the call.
func (r *AAAClusterReconciler) apply(ctx context.Context, owner *aaav1.AAACluster, desired client.Object) (client.Object, error) {
	obj, _, err := r.applyOp(ctx, owner, desired)
	return obj, err
}

// operation tells what apply did.
type operation int

const (
	opNone operation = iota
	opCreated
	opUpdated
)

// applyOp is apply, also telling whether it created or updated the object.
func (r *AAAClusterReconciler) applyOp(ctx context.Context, owner *aaav1.AAACluster, desired client.Object) (client.Object, operation, error) {
	if err := controllerutil.SetControllerReference(owner, desired, r.Scheme); err != nil {
		return nil, opNone, err
	}
	ann := maps.Clone(desired.GetAnnotations())
	if ann == nil {
		ann = map[string]string{}
	}
	delete(ann, AnnotationSpecHash)
	desired.SetAnnotations(ann)
	hash := hashOf(desired)
	ann[AnnotationSpecHash] = hash
	desired.SetAnnotations(ann)

	gvk, err := apiutil.GVKForObject(desired, r.Scheme)
	if err != nil {
		return nil, opNone, err
	}
	existing, err := r.newObject(gvk)
	if err != nil {
		return nil, opNone, err
	}
	err = r.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Create(ctx, desired); err != nil {
			return nil, opNone, fmt.Errorf("create %s %s: %w", gvk.Kind, desired.GetName(), err)
		}
		r.event(ctx, owner, corev1.EventTypeNormal, ReasonCreated, "created %s %s", gvk.Kind, desired.GetName())
		return desired, opCreated, nil
	case err != nil:
		return nil, opNone, fmt.Errorf("get %s %s: %w", gvk.Kind, desired.GetName(), err)
	}
	if existing.GetAnnotations()[AnnotationSpecHash] == hash && metav1.IsControlledBy(existing, owner) {
		return existing, opNone, nil
	}
	if other := metav1.GetControllerOf(existing); other != nil && other.UID != owner.UID {
		return nil, opNone, fmt.Errorf("%s %s exists and is controlled by %s %s, not by this AAACluster", gvk.Kind, desired.GetName(), other.Kind, other.Name)
	}
	desired.SetResourceVersion(existing.GetResourceVersion())
	desired.SetLabels(mergeLabels(existing.GetLabels(), desired.GetLabels()))
	desired.SetAnnotations(mergeLabels(existing.GetAnnotations(), desired.GetAnnotations()))
	preserve(existing, desired)
	if err := r.Update(ctx, desired); err != nil {
		return nil, opNone, fmt.Errorf("update %s %s: %w", gvk.Kind, desired.GetName(), err)
	}
	r.event(ctx, owner, corev1.EventTypeNormal, ReasonUpdated, "updated %s %s", gvk.Kind, desired.GetName())
	return desired, opUpdated, nil
}

// preserve copies into desired what belongs to the API server or to other controllers.
func preserve(existing, desired client.Object) {
	switch d := desired.(type) {
	case *corev1.Service:
		e := existing.(*corev1.Service)
		d.Spec.ClusterIP = e.Spec.ClusterIP
		d.Spec.ClusterIPs = e.Spec.ClusterIPs
		d.Spec.IPFamilies = e.Spec.IPFamilies
		d.Spec.IPFamilyPolicy = e.Spec.IPFamilyPolicy
		if d.Spec.Type == e.Spec.Type {
			if d.Spec.ExternalTrafficPolicy == e.Spec.ExternalTrafficPolicy {
				d.Spec.HealthCheckNodePort = e.Spec.HealthCheckNodePort
			}
			nodePorts := map[string]int32{}
			for _, p := range e.Spec.Ports {
				nodePorts[p.Name] = p.NodePort
			}
			for i := range d.Spec.Ports {
				if d.Spec.Ports[i].NodePort == 0 {
					d.Spec.Ports[i].NodePort = nodePorts[d.Spec.Ports[i].Name]
				}
			}
		}
	case *appsv1.Deployment:
		e := existing.(*appsv1.Deployment)
		// With a HorizontalPodAutoscaler the replicas are the autoscaler's.
		if d.Annotations[annotationAutoscaled] == "true" && e.Spec.Replicas != nil {
			d.Spec.Replicas = e.Spec.Replicas
		}
	case *appsv1.StatefulSet:
		e := existing.(*appsv1.StatefulSet)
		if d.Annotations[annotationAutoscaled] == "true" && e.Spec.Replicas != nil {
			d.Spec.Replicas = e.Spec.Replicas
		}
		// The claim templates are immutable: a new size or class applies to claims made
		// after a re-creation only (docs/operator.md).
		d.Spec.VolumeClaimTemplates = e.Spec.VolumeClaimTemplates
	case *unstructured.Unstructured:
		// Keep what other controllers or webhooks added to fields we do not set.
		e := existing.(*unstructured.Unstructured)
		for k, v := range e.Object {
			if _, ok := d.Object[k]; !ok && k != "status" {
				d.Object[k] = v
			}
		}
		if es, ok := e.Object["spec"].(map[string]any); ok {
			if ds, ok := d.Object["spec"].(map[string]any); ok {
				for k, v := range es {
					if _, ok := ds[k]; !ok {
						ds[k] = v
					}
				}
			}
		}
	}
}

// newObject returns an empty object of the kind (typed when the scheme knows it).
func (r *AAAClusterReconciler) newObject(gvk schema.GroupVersionKind) (client.Object, error) {
	if r.Scheme.Recognizes(gvk) {
		o, err := r.Scheme.New(gvk)
		if err != nil {
			return nil, err
		}
		return o.(client.Object), nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// deleteObject deletes obj if it exists, with background propagation, and records an event.
func (r *AAAClusterReconciler) deleteObject(ctx context.Context, owner *aaav1.AAACluster, obj client.Object) error {
	err := r.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", obj.GetName(), err)
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		if gvk, err := apiutil.GVKForObject(obj, r.Scheme); err == nil {
			kind = gvk.Kind
		}
	}
	r.event(ctx, owner, corev1.EventTypeNormal, ReasonDeleted, "deleted %s %s", kind, obj.GetName())
	return nil
}

// hasKind tells whether the API server serves the kind (optional CRDs: k8ssandra-operator,
// cert-manager, prometheus-operator).
func (r *AAAClusterReconciler) hasKind(gvk schema.GroupVersionKind) (bool, error) {
	_, err := r.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil {
		return true, nil
	}
	if isNoMatch(err) {
		return false, nil
	}
	return false, err
}

// RESTMapper of the client.
func (r *AAAClusterReconciler) RESTMapper() meta.RESTMapper { return r.Client.RESTMapper() }

// pruneOwned deletes the objects of list (already listed by the caller with the cluster's
// labels) that the AAACluster controls but no longer wants.
func (r *AAAClusterReconciler) pruneOwned(ctx context.Context, owner *aaav1.AAACluster, objs []client.Object, keep map[string]bool) error {
	for _, o := range objs {
		if keep[o.GetName()] || !metav1.IsControlledBy(o, owner) {
			continue
		}
		if err := r.deleteObject(ctx, owner, o); err != nil {
			return err
		}
	}
	return nil
}

// isNoMatch tells whether a RESTMapper error means "this kind is not served".
func isNoMatch(err error) bool {
	var gdf *apiutil.ErrResourceDiscoveryFailed
	if errors.As(err, &gdf) {
		for _, e := range *gdf {
			if !apierrors.IsNotFound(e) {
				return false
			}
		}
		return true
	}
	return meta.IsNoMatchError(err)
}
