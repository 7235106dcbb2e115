package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The operator caches and watches only the Secrets and ConfigMaps labelled
// app.kubernetes.io/part-of=openaaa (docs/security.md): its own carry the label, and users
// put it on the ones an AAACluster or AAALoadTest names. Every other Secret of the cluster
// stays out of its memory and its watches.
const (
	WatchLabel      = LabelPartOf
	WatchLabelValue = partOf
)

// CacheByObject is the manager's cache configuration for Secrets and ConfigMaps.
func CacheByObject() map[client.Object]cache.ByObject {
	sel := labels.SelectorFromSet(labels.Set{WatchLabel: WatchLabelValue})
	return map[client.Object]cache.ByObject{
		&corev1.Secret{}:    {Label: sel},
		&corev1.ConfigMap{}: {Label: sel},
	}
}

// unlabelled tells whether a Secret or ConfigMap the cache does not show exists without the
// watch label. It reads only the object's metadata, straight from the API server (reader
// nil: it cannot tell, false).
func unlabelled(ctx context.Context, reader client.Reader, kind string, key client.ObjectKey) (bool, error) {
	if reader == nil {
		return false, nil
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	err := reader.Get(ctx, key, m)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get %s %s metadata: %w", kind, key.Name, err)
	}
	return m.Labels[WatchLabel] != WatchLabelValue, nil
}

// notLabelledMessage says why the operator does not see objects ("Secret/x", ...).
func notLabelledMessage(objs []string) string {
	return strings.Join(objs, ", ") + " exist but lack the label " + WatchLabel + "=" + WatchLabelValue +
		": the operator sees only labelled Secrets and ConfigMaps (docs/security.md)"
}

// adoptSuperuserSecret labels the Cassandra superuser Secret k8ssandra-operator created, so
// that the cache sees it: it is the one referenced Secret users do not create themselves.
func (r *AAAClusterReconciler) adoptSuperuserSecret(ctx context.Context, key client.ObjectKey) error {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	m.SetNamespace(key.Namespace)
	m.SetName(key.Name)
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, WatchLabel, WatchLabelValue)
	if err := r.Patch(ctx, m, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("label Secret %s: %w", key.Name, err)
	}
	return nil
}

// noteUnwatched records a referenced object the cache does not show but that exists without
// the label (status: Degraded, naming it). The managed Cassandra's superuser Secret is
// labelled instead: k8ssandra-operator creates it, not the user.
func (r *AAAClusterReconciler) noteUnwatched(ctx context.Context, st *state, kind, name string) error {
	key := client.ObjectKey{Namespace: st.cluster.Namespace, Name: name}
	hidden, err := unlabelled(ctx, r.APIReader, kind, key)
	if err != nil || !hidden {
		return err
	}
	if kind == "Secret" && managed(st.spec) && name == superuserSecretName(st.cluster) {
		return r.adoptSuperuserSecret(ctx, key)
	}
	st.unwatched = append(st.unwatched, kind+"/"+name)
	return nil
}
