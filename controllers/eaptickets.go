package controllers

import (
	"context"
	"path"

	corev1 "k8s.io/api/core/v1"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	policing "github.com/openaaa/openaaa/services/policing/config"
)

// TLS session resumption of EAP-TLS and PEAP (docs/eap.md "Session resumption"): when
// spec.eap offers tls, peap or ttls and spec.eap.resumption does not turn it off, every
// policing pod of every data center reads the same session ticket keys, which the operator
// generates once into a Secret it owns (never into the ConfigMap), so that a
// re-authentication resumes on any pod. The Secret is mounted as a directory: a key rotated
// by editing it reaches the pods, which reload it (it does not roll them).
const (
	eapTicketsKey = "keys"
	eapTicketsDir = configDir + "/eap-tickets"
)

func eapTicketsSecretName(c *aaav1.AAACluster) string { return c.Name + "-eap-tickets" }

// eapResumptionEnabled: on with a TLS-based method unless spec.eap.resumption.enabled is false.
func eapResumptionEnabled(spec aaav1.AAAClusterSpec) bool {
	if !eapUsesTLS(spec) {
		return false
	}
	r := spec.EAP.Resumption
	return r == nil || r.Enabled == nil || *r.Enabled
}

// ensureEAPTicketsSecret creates the ticket keys when resumption is on (ensureRandomSecret:
// an existing Secret, a rotated one included, is left as it is).
func (r *AAAClusterReconciler) ensureEAPTicketsSecret(ctx context.Context, c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) error {
	if !eapResumptionEnabled(spec) {
		return nil
	}
	return r.ensureRandomSecret(ctx, c, eapTicketsSecretName(c), eapTicketsKey, componentRadius, "the EAP session ticket keys")
}

// renderEAPResumption is policing's eap.resumption section: the mounted keys, the lifetime
// (defaulted). Pure.
func renderEAPResumption(spec aaav1.AAAClusterSpec) policing.EAPResumption {
	return policing.EAPResumption{Enabled: true, TicketKeyFile: path.Join(eapTicketsDir, eapTicketsKey),
		Lifetime: policing.Duration(spec.EAP.Resumption.Lifetime.Duration)}
}

// eapTicketsVolume mounts the ticket keys read-only as eapTicketsDir/keys.
func eapTicketsVolume(c *aaav1.AAACluster) (corev1.Volume, corev1.VolumeMount) {
	return secretKeyVolume("eap-tickets", eapTicketsSecretName(c), eapTicketsKey, eapTicketsDir)
}
