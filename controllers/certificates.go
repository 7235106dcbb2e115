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

// diameterDNSNames are the names the Diameter TLS certificate covers: every data center's
// Diameter identity (a PCEF checks the Origin-Host it connects to) and Diameter Service in its
// in-cluster forms, then the configured ones. Pure.
func diameterDNSNames(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) []string {
	var out []string
	for _, dc := range spec.Datacenters {
		svc := diameterServiceName(c, dc.Name)
		out = append(out, diameterOriginHost(spec, dc.Name),
			svc, svc+"."+c.Namespace, svc+"."+c.Namespace+".svc", svc+"."+c.Namespace+".svc.cluster.local")
	}
	return append(out, spec.Diameter.TLS.DNSNames...)
}

// buildCertificate is the cert-manager Certificate of RadSec (server and client auth: RadSec
// peers authenticate each other). Pure.
func buildCertificate(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) *unstructured.Unstructured {
	return certificate(c, certificateName(c), certificateSecretName(c), spec.Radius.RadSec.IssuerRef,
		radsecDNSNames(c, spec), "radsec")
}

// buildDiameterCertificate is the cert-manager Certificate of Diameter over TLS (server and
// client auth: Diameter peers authenticate each other, RFC 6733 §13). Pure.
func buildDiameterCertificate(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) *unstructured.Unstructured {
	return certificate(c, diameterCertificateName(c), diameterCertificateSecretName(c), spec.Diameter.TLS.IssuerRef,
		diameterDNSNames(c, spec), "diameter")
}

// buildEAPCertificate is the cert-manager Certificate of the EAP server (tls, peap, ttls) for
// the names supplicants check: spec.eap.dnsNames only, the Services are not its names. Pure.
func buildEAPCertificate(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) *unstructured.Unstructured {
	return certificate(c, eapCertificateName(c), eapCertificateSecretName(c), spec.EAP.IssuerRef,
		spec.EAP.DNSNames, "eap")
}

func certificate(c *aaav1.AAACluster, name, secret string, issuer *aaav1.IssuerReference, names []string, component string) *unstructured.Unstructured {
	dns := make([]any, 0, len(names))
	for _, n := range names {
		dns = append(dns, n)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": CertificateGVK.GroupVersion().String(),
		"kind":       CertificateGVK.Kind,
		"metadata":   map[string]any{"name": name, "namespace": c.Namespace},
		"spec": map[string]any{
			"secretName": secret,
			"issuerRef":  map[string]any{"name": issuer.Name, "kind": issuer.Kind, "group": issuer.Group},
			"dnsNames":   dns,
			"usages":     []any{"server auth", "client auth"},
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"},
		},
	}}
	u.SetLabels(clusterLabels(c, component))
	return u
}

// wantedCertificate is a Certificate the operator manages: requested from issuer when its
// listener is enabled with one, else deleted if present.
type wantedCertificate struct {
	name, what, field string                 // its name; what it serves; the spec field that asks for it
	issuer            *aaav1.IssuerReference // nil: not wanted
	build             func(*aaav1.AAACluster, aaav1.AAAClusterSpec) *unstructured.Unstructured
}

// reconcileCertificates requests the RadSec, Diameter TLS and EAP Certificates from
// cert-manager when they are enabled with an issuer. Without cert-manager the cluster is degraded, not
// stopped.
func (r *AAAClusterReconciler) reconcileCertificates(ctx context.Context, st *state) (result, error) {
	c, spec := st.cluster, st.spec
	certs := []wantedCertificate{
		{name: certificateName(c), what: "RadSec", field: "spec.radius.radsec", build: buildCertificate},
		{name: diameterCertificateName(c), what: "Diameter over TLS", field: "spec.diameter.tls", build: buildDiameterCertificate},
		{name: eapCertificateName(c), what: "EAP", field: "spec.eap", build: buildEAPCertificate},
	}
	if radsecEnabled(spec) {
		certs[0].issuer = spec.Radius.RadSec.IssuerRef
	}
	if diameterTLSEnabled(spec) {
		certs[1].issuer = spec.Diameter.TLS.IssuerRef
	}
	if eapUsesTLS(spec) {
		certs[2].issuer = spec.EAP.IssuerRef
	}
	ok, err := r.hasKind(CertificateGVK)
	if err != nil {
		return result{}, err
	}
	if !ok {
		for _, w := range certs {
			if w.issuer != nil {
				st.certProblem = &problem{ReasonCertManagerMissing, fmt.Sprintf(
					"%s needs a certificate from issuer %s but cert-manager (Certificate cert-manager.io/v1) is not installed; "+
						"install cert-manager or set %s.secretName", w.what, w.issuer.Name, w.field)}
				return result{requeueAfter: requeueOptional}, nil
			}
		}
		return result{}, nil
	}
	for _, w := range certs {
		if w.issuer == nil {
			if err := r.deleteIfExists(ctx, c, CertificateGVK, w.name); err != nil {
				return result{}, err
			}
			continue
		}
		if _, err := r.apply(ctx, c, w.build(c, spec)); err != nil {
			return result{}, err
		}
	}
	return result{}, nil
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
