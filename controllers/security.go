package controllers

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// The admin API's bearer token (docs/security.md): one Secret per AAACluster, created once
// with a random token and never rewritten, so that a token a user rotates stays; policing
// re-reads the mounted file, so a rotation needs no restart.
const (
	adminTokenKey = "token"
	adminTokenDir = configDir + "/admin" // policing ctl's default token file is here
	// LabelAdminClient on a pod of the AAACluster's namespace lets it reach the admin port
	// (with the token) through the NetworkPolicy.
	LabelAdminClient = "aaa.openaaa.io/admin-client"
	// defaultMonitoringNamespace may scrape /metrics when spec.networkPolicy names none.
	defaultMonitoringNamespace = "monitoring"
	// operatorName is the app.kubernetes.io/name of the operator's pods.
	operatorName = "openaaa-operator"
)

func adminTokenSecretName(c *aaav1.AAACluster) string { return c.Name + "-admin-token" }
func networkPolicyName(c *aaav1.AAACluster, dc string) string {
	return c.Name + "-" + dc
}

// newAdminToken is 32 random bytes, URL-safe base64: printable in a header, unguessable.
func newAdminToken() ([]byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	return []byte(base64.RawURLEncoding.EncodeToString(b)), nil
}

// ensureAdminToken creates the admin token Secret when it does not exist. An existing one,
// even made by the user, is left as it is. The token never reaches a log, an event or the
// status: only the Secret's name does.
func (r *AAAClusterReconciler) ensureAdminToken(ctx context.Context, c *aaav1.AAACluster) error {
	return r.ensureRandomSecret(ctx, c, adminTokenSecretName(c), adminTokenKey, componentAdmin, "the admin API token")
}

// ensureRandomSecret creates the Secret name, owned by c, holding a random value
// (newAdminToken) under key, when it does not exist; an existing one, even made by the
// user, is left as it is. The value never reaches a log, an event or the status.
func (r *AAAClusterReconciler) ensureRandomSecret(ctx context.Context, c *aaav1.AAACluster, name, key, component, what string) error {
	err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &corev1.Secret{})
	if err == nil || !apierrors.IsNotFound(err) {
		if err != nil {
			return fmt.Errorf("get Secret %s: %w", name, err)
		}
		return nil
	}
	value, err := newAdminToken()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: clusterLabels(c, component)},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{key: value},
	}
	if err := controllerutil.SetControllerReference(c, s, r.Scheme); err != nil {
		return err
	}
	if err := r.Create(ctx, s); apierrors.IsAlreadyExists(err) {
		return nil // the user's, without the watch label: it is mounted all the same
	} else if err != nil {
		return fmt.Errorf("create Secret %s: %w", name, err)
	}
	r.event(ctx, c, corev1.EventTypeNormal, ReasonCreated, "created Secret %s (%s)", name, what)
	return nil
}

// adminTokenVolume mounts the token as adminTokenDir/token. A directory, not a subPath, so
// that the kubelet's update of a rotated Secret reaches the file policing watches.
func adminTokenVolume(c *aaav1.AAACluster) (corev1.Volume, corev1.VolumeMount) {
	return secretKeyVolume("admin-token", adminTokenSecretName(c), adminTokenKey, adminTokenDir)
}

// secretKeyVolume mounts one key of a Secret read-only as dir/key (a directory: updates reach it).
func secretKeyVolume(name, secret, key, dir string) (corev1.Volume, corev1.VolumeMount) {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  secret,
			Items:       []corev1.KeyToPath{{Key: key, Path: key}},
			DefaultMode: ptr.To[int32](0o440),
		}}},
		corev1.VolumeMount{Name: name, MountPath: dir, ReadOnly: true}
}

// networkPolicyEnabled: on unless spec.networkPolicy.enabled is false.
func networkPolicyEnabled(spec aaav1.AAAClusterSpec) bool {
	return spec.NetworkPolicy.Enabled == nil || *spec.NetworkPolicy.Enabled
}

// buildNetworkPolicy restricts what reaches the policing pods of one data center: RADIUS,
// RadSec and Diameter from anywhere (NASes and PCEFs live outside the cluster), the admin
// port (API with its token, /metrics, probes) only from the operator, this cluster's
// aaa-loadgen Jobs (they read /metrics), pods labelled aaa.openaaa.io/admin-client=true in
// the namespace, and the monitoring namespaces; the EAP forwarding port only from this
// cluster's policing pods (eapforward.go). Egress is not restricted (Cassandra, LDAP, NAS CoA ports, proxy
// upstreams and DNS vary per site). Pure; operatorNamespace "" leaves the operator out.
func buildNetworkPolicy(c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, dc string, operatorNamespace string) *networkingv1.NetworkPolicy {
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	port := func(p corev1.Protocol, n int32) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Protocol: ptr.To(p), Port: ptr.To(intstr.FromInt32(n))}
	}
	public := []networkingv1.NetworkPolicyPort{port(udp, spec.Radius.AuthPort), port(udp, spec.Radius.AcctPort)}
	if radsecEnabled(spec) {
		public = append(public, port(tcp, spec.Radius.RadSec.Port))
	}
	if diameterEnabled(spec) {
		// From anywhere, as RADIUS: policing's peer table refuses unknown peers (3010,
		// counted), and a NetworkPolicy's view of a load-balanced source address varies by CNI.
		public = append(public, port(tcp, spec.Diameter.Port))
	}
	if diameterTLSEnabled(spec) {
		public = append(public, port(tcp, spec.Diameter.TLS.Port))
	}
	monitoring := spec.NetworkPolicy.MonitoringNamespaceSelector
	if monitoring == nil {
		monitoring = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: defaultMonitoringNamespace}}
	}
	admin := []networkingv1.NetworkPolicyPeer{
		{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelAdminClient: "true"}}},
		{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelName: "aaa-loadgen", LabelCluster: c.Name}}},
		{NamespaceSelector: monitoring},
	}
	if operatorNamespace != "" {
		admin = append(admin, networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: operatorNamespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{LabelName: operatorName}},
		})
	}
	ingress := []networkingv1.NetworkPolicyIngressRule{
		{Ports: public},
		{Ports: []networkingv1.NetworkPolicyPort{port(tcp, AdminPort)}, From: admin},
	}
	if eapForwardEnabled(spec) {
		ingress = append(ingress, eapForwardIngress(c))
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: networkPolicyName(c, dc), Namespace: c.Namespace, Labels: dcLabels(c, dc, componentRadius)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: podSelector(c, dc)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     ingress,
		},
	}
}
