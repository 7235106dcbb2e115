package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// radsecDNSNames are the names the RadSec certificate covers: the RadSec Service of every data
// center in its in-cluster forms, then the configured ones. Pure.
func radsecDNSNames(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) []string {
	var out []string
	for _, dc := range spec.Datacenters {
		svc := radsecServiceName(c, dc.Name)
		out = append(out, svc, svc+"."+c.Namespace, svc+"."+c.Namespace+".svc", svc+"."+c.Namespace+".svc.cluster.local")
	}
	return append(out, spec.Radius.RadSec.DNSNames...)
}

// buildCertificate is the cert-manager Certificate of RadSec (server and client auth: RadSec
// peers authenticate each other). Pure.
func buildCertificate(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) *unstructured.Unstructured {
	rs := spec.Radius.RadSec
	dns := make([]any, 0)
	for _, n := range radsecDNSNames(c, spec) {
		dns = append(dns, n)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": CertificateGVK.GroupVersion().String(),
		"kind":       CertificateGVK.Kind,
		"metadata":   map[string]any{"name": certificateName(c), "namespace": c.Namespace},
		"spec": map[string]any{
			"secretName": certificateSecretName(c),
			"issuerRef":  map[string]any{"name": rs.IssuerRef.Name, "kind": rs.IssuerRef.Kind, "group": rs.IssuerRef.Group},
			"dnsNames":   dns,
			"usages":     []any{"server auth", "client auth"},
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"},
		},
	}}
	u.SetLabels(clusterLabels(c, "radsec"))
	return u
}

// reconcileCertificates requests the RadSec Certificate from cert-manager when RadSec is
// enabled with an issuer. Without cert-manager the cluster is degraded, not stopped.
func (r *AAAClusterReconciler) reconcileCertificates(ctx context.Context, st *state) (result, error) {
	c, spec := st.cluster, st.spec
	want := radsecEnabled(spec) && spec.Radius.RadSec.IssuerRef != nil
	ok, err := r.hasKind(CertificateGVK)
	if err != nil {
		return result{}, err
	}
	if !ok {
		if want {
			st.radsecProblem = &problem{ReasonCertManagerMissing, fmt.Sprintf(
				"RadSec needs a certificate from issuer %s but cert-manager (Certificate cert-manager.io/v1) is not installed; "+
					"install cert-manager or set spec.radius.radsec.secretName", spec.Radius.RadSec.IssuerRef.Name)}
			return result{requeueAfter: requeueOptional}, nil
		}
		return result{}, nil
	}
	if !want {
		return result{}, r.deleteIfExists(ctx, c, CertificateGVK, certificateName(c))
	}
	_, err = r.apply(ctx, c, buildCertificate(c, spec))
	return result{}, err
}

// deleteIfExists deletes an object of an optional kind the cluster controls, reading first so
// that nothing is written when it is absent.
func (r *AAAClusterReconciler) deleteIfExists(ctx context.Context, c *aaav1.AAACluster, gvk schema.GroupVersionKind, name string) error {
	obj, err := r.newObject(gvk)
	if err != nil {
		return err
	}
	err = r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return r.pruneOwned(ctx, c, []client.Object{obj}, nil)
}
