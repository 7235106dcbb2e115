package controllers

import (
	"context"
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	policing "github.com/openaaa/openaaa/services/policing/config"
)

// EAP rounds forwarded between the policing pods (docs/eap.md "Multi-DC conversations"):
// when spec.eap offers a method whose conversations live in their pod's memory (tls, peap,
// ttls: a TLS handshake or tunnel), each pod listens on EAPForwardPort for
// the rounds other pods, of any data center, forward to it, under an inter-node secret the
// operator generates once into a Secret it owns (never into the ConfigMap). The pods find each
// other in the session store's node registry, by pod IP.
const (
	// EAPForwardPort is the policing pods' UDP port for forwarded EAP rounds.
	EAPForwardPort = 1815
	portEAPForward = "eap-forward"
	eapForwardKey  = "secret"
	eapForwardDir  = configDir + "/eap-forward"
)

func eapForwardSecretName(c *aaav1.AAACluster) string { return c.Name + "-eap-forward" }

// eapForwardEnabled: forwarding is on when a conversation can live in a pod's memory.
func eapForwardEnabled(spec aaav1.AAAClusterSpec) bool { return eapUsesTLS(spec) }

// ensureEAPForwardSecret creates the inter-node secret when forwarding is on (ensureRandomSecret:
// an existing Secret, a rotated one included, is left as it is; rotating it rolls the pods,
// which read it at start).
func (r *AAAClusterReconciler) ensureEAPForwardSecret(ctx context.Context, c *aaav1.AAACluster, spec aaav1.AAAClusterSpec) error {
	if !eapForwardEnabled(spec) {
		return nil
	}
	return r.ensureRandomSecret(ctx, c, eapForwardSecretName(c), eapForwardKey, componentRadius, "the EAP inter-node secret")
}

// renderEAPForward is policing's eap.forward section: the listener on every address (the
// pod's IP is advertised, policing's default), the mounted secret. Pure.
func renderEAPForward() policing.EAPForward {
	return policing.EAPForward{Address: fmt.Sprintf(":%d", EAPForwardPort), SecretFile: path.Join(eapForwardDir, eapForwardKey)}
}

// eapForwardVolume mounts the inter-node secret read-only as eapForwardDir/secret.
func eapForwardVolume(c *aaav1.AAACluster) (corev1.Volume, corev1.VolumeMount) {
	return secretKeyVolume("eap-forward", eapForwardSecretName(c), eapForwardKey, eapForwardDir)
}

// eapForwardIngress lets the policing pods of this cluster, every data center's, reach the
// forwarding port; nothing else may.
func eapForwardIngress(c *aaav1.AAACluster) networkingv1.NetworkPolicyIngressRule {
	return networkingv1.NetworkPolicyIngressRule{
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(EAPForwardPort))}},
		From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{LabelName: "policing", LabelCluster: c.Name, LabelComponent: componentRadius}}}},
	}
}
