package controllers

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// eapCluster is minimalCluster in namespace prod with EAP-TLS, PEAP and MD5, the server
// certificate from a cert-manager issuer, the client CA and the CRLs from ConfigMaps.
func eapCluster() (*aaav1.AAACluster, aaav1.AAAClusterSpec) {
	c := minimalCluster("prod", "wifi")
	c.Spec.EAP = &aaav1.EAPSpec{Methods: []string{"tls", "peap", "md5"},
		IssuerRef: &aaav1.IssuerReference{Name: "wifi-ca"}, DNSNames: []string{"radius.example.net"},
		ClientCA: &aaav1.ConfigMapKeyRef{Name: "wifi-client-ca"}, CRL: &aaav1.ConfigMapKeyRef{Name: "wifi-crl"}}
	return c, withDefaults(c.Spec, Options{Version: "v1.2.3"})
}

// volumeOf is the pod volume of that name in a Deployment, and its mount.
func volumeOf(d *appsv1.Deployment, name string) (*corev1.Volume, *corev1.VolumeMount) {
	pod := d.Spec.Template.Spec
	var v *corev1.Volume
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			v = &pod.Volumes[i]
		}
	}
	for i, m := range pod.Containers[0].VolumeMounts {
		if m.Name == name {
			return v, &pod.Containers[0].VolumeMounts[i]
		}
	}
	return v, nil
}

// TestGoldenEAP: spec.eap becomes policing's eap section (policing's loader takes
// it: TestRenderedConfigLoadsInPolicing), a Certificate <name>-eap for dnsNames only, and two
// read-only directory mounts (no subPath: renewals reach the pod): the certificate's Secret,
// the CA bundle's key and the CRLs' key.
func TestGoldenEAP(t *testing.T) {
	c, spec := eapCluster()
	golden(t, "policing-eap-dc1.yaml", []byte(renderPolicingConfig(c, spec, "dc1")))
	golden(t, "certificate-eap.yaml", toYAML(t, buildEAPCertificate(c, spec).Object))

	d := buildDeployment(c, spec, spec.Datacenters[0], "h")
	v, m := volumeOf(d, "eap-tls")
	if v == nil || m == nil || v.Secret == nil || v.Secret.SecretName != "wifi-eap-tls" || m.MountPath != eapTLSDir || !m.ReadOnly || m.SubPath != "" {
		t.Errorf("eap-tls volume %+v mount %+v: want cert-manager's Secret wifi-eap-tls read-only at %s", v, m, eapTLSDir)
	}
	v, m = volumeOf(d, "eap-ca")
	if v == nil || m == nil || v.ConfigMap == nil || v.ConfigMap.Name != "wifi-client-ca" || v.ConfigMap.Items[0].Key != "ca.crt" ||
		m.MountPath != eapCADir || !m.ReadOnly || m.SubPath != "" {
		t.Errorf("eap-ca volume %+v mount %+v: want ConfigMap wifi-client-ca key ca.crt read-only at %s", v, m, eapCADir)
	}
	v, m = volumeOf(d, "eap-crl")
	if v == nil || m == nil || v.ConfigMap == nil || v.ConfigMap.Name != "wifi-crl" || v.ConfigMap.Items[0].Key != "ca.crl" ||
		m.MountPath != eapCRLDir || !m.ReadOnly || m.SubPath != "" {
		t.Errorf("eap-crl volume %+v mount %+v: want ConfigMap wifi-crl key ca.crl read-only at %s", v, m, eapCRLDir)
	}
	// Reloaded in place, never rolling the pods; watched so that a change reconciles.
	if got := rollingSecrets(c, spec); slices.Contains(got, "wifi-eap-tls") {
		t.Errorf("rolling secrets %v: the EAP certificate is reloaded, it must not roll pods", got)
	}
	if got := referencedObjects(c); !slices.Contains(got, "ConfigMap/wifi-client-ca") || !slices.Contains(got, "ConfigMap/wifi-crl") {
		t.Errorf("referenced %v lack the client CA or CRL ConfigMap", got)
	}
	assertEAPForward(t, c, spec, d, true)
	assertEAPTickets(t, c, spec, d, "1h0m0s")

	// spec.eap.resumption: a lifetime of its own, or off.
	c.Spec.EAP.Resumption = &aaav1.EAPResumption{Lifetime: &metav1.Duration{Duration: 8 * time.Hour}}
	spec = withDefaults(c.Spec, Options{Version: "v1.2.3"})
	assertEAPTickets(t, c, spec, buildDeployment(c, spec, spec.Datacenters[0], "h"), "8h0m0s")
	c.Spec.EAP.Resumption = &aaav1.EAPResumption{Enabled: ptr.To(false)}
	spec = withDefaults(c.Spec, Options{Version: "v1.2.3"})
	assertEAPTickets(t, c, spec, buildDeployment(c, spec, spec.Datacenters[0], "h"), "")
}

// assertEAPTickets checks the session resumption parts of a data center (eaptickets.go): the
// ticket keys' Secret mounted read-only as a directory (a rotation reaches the pods), only its
// path in the ConfigMap, not rolling the pods (policing reloads it), and the lifetime; or none
// of it (lifetime "").
func assertEAPTickets(t *testing.T, c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, d *appsv1.Deployment, lifetime string) {
	t.Helper()
	v, m := volumeOf(d, "eap-tickets")
	cfg := renderPolicingConfig(c, spec, "dc1")
	rolls := slices.Contains(rollingSecrets(c, spec), c.Name+"-eap-tickets")
	if lifetime == "" {
		if v != nil || m != nil || strings.Contains(cfg, "resumption:") || eapResumptionEnabled(spec) {
			t.Errorf("resumption off, yet volume %v or\n%s", v, cfg)
		}
		return
	}
	if v == nil || m == nil || v.Secret == nil || v.Secret.SecretName != c.Name+"-eap-tickets" || m.MountPath != eapTicketsDir || !m.ReadOnly || m.SubPath != "" {
		t.Errorf("eap-tickets volume %+v mount %+v", v, m)
	}
	if rolls {
		t.Error("the ticket keys roll the pods: policing reloads them")
	}
	want := "resumption:\n    enabled: true\n    lifetime: " + lifetime + "\n    ticketKeyFile: /etc/openaaa/eap-tickets/keys\n"
	if !strings.Contains(cfg, want) {
		t.Errorf("eap.resumption: want\n%s in\n%s", want, cfg)
	}
}

// assertEAPForward checks the EAP forwarding parts of a data center (eapforward.go): the
// inter-node secret's Secret mounted read-only (only its path in the ConfigMap), the UDP
// port on the container and not on the Service, the NetworkPolicy's rule letting only
// this cluster's policing pods reach it, the Secret rolling the pods; or none of it.
func assertEAPForward(t *testing.T, c *aaav1.AAACluster, spec aaav1.AAAClusterSpec, d *appsv1.Deployment, on bool) {
	t.Helper()
	v, m := volumeOf(d, "eap-forward")
	port := slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].Ports, func(p corev1.ContainerPort) bool {
		return p.Name == portEAPForward && p.ContainerPort == EAPForwardPort && p.Protocol == corev1.ProtocolUDP
	})
	np := buildNetworkPolicy(c, spec, "dc1", "openaaa-system")
	rule := slices.ContainsFunc(np.Spec.Ingress, func(r networkingv1.NetworkPolicyIngressRule) bool {
		return len(r.Ports) == 1 && r.Ports[0].Port.IntValue() == EAPForwardPort && len(r.From) == 1 &&
			r.From[0].PodSelector.MatchLabels[LabelCluster] == c.Name && r.From[0].NamespaceSelector == nil
	})
	cfg := renderPolicingConfig(c, spec, "dc1")
	rolls := slices.Contains(rollingSecrets(c, spec), c.Name+"-eap-forward")
	if !on {
		if v != nil || port || rule || rolls || strings.Contains(cfg, "forward:") {
			t.Errorf("forwarding without an in-memory method: volume %v, port %v, rule %v, rolls %v\n%s", v != nil, port, rule, rolls, cfg)
		}
		return
	}
	if v == nil || m == nil || v.Secret == nil || v.Secret.SecretName != c.Name+"-eap-forward" || m.MountPath != eapForwardDir || !m.ReadOnly {
		t.Errorf("eap-forward volume %+v mount %+v", v, m)
	}
	if !port || !rule || !rolls {
		t.Errorf("container port %v, NetworkPolicy rule %v, rolling secret %v", port, rule, rolls)
	}
	if !strings.Contains(cfg, "secretFile: /etc/openaaa/eap-forward/secret") || !strings.Contains(cfg, "address: :1815") {
		t.Errorf("eap.forward:\n%s", cfg)
	}
	for _, svc := range buildServices(c, spec, spec.Datacenters[0]) {
		for _, sp := range svc.Spec.Ports {
			if sp.Port == EAPForwardPort {
				t.Errorf("the forwarding port is on Service %s: %+v", svc.Name, sp)
			}
		}
	}
}

// With secretName the user's Secret is mounted and no Certificate is wanted; MD5 alone needs
// neither a certificate nor a CA; no spec.eap, no eap section.
func TestEAPVariants(t *testing.T) {
	c, _ := eapCluster()
	c.Spec.EAP = &aaav1.EAPSpec{Methods: []string{"peap", "ttls"}, SecretName: "radius-tls"}
	spec := withDefaults(c.Spec, Options{Version: "v1.2.3"})
	d := buildDeployment(c, spec, spec.Datacenters[0], "h")
	if v, _ := volumeOf(d, "eap-tls"); v == nil || v.Secret.SecretName != "radius-tls" {
		t.Errorf("eap-tls volume %+v, want the Secret radius-tls", v)
	}
	for _, name := range []string{"eap-ca", "eap-crl"} {
		if v, _ := volumeOf(d, name); v != nil {
			t.Errorf("a %s volume without clientCA and crl: %+v", name, v)
		}
	}
	cfg := renderPolicingConfig(c, spec, "dc1")
	if !strings.Contains(cfg, "certFile: /etc/openaaa/eap-tls/tls.crt") || strings.Contains(cfg, "caFile: /etc/openaaa/eap") || strings.Contains(cfg, "crlFile:") {
		t.Errorf("eap section:\n%s", cfg)
	}
	if got := referencedObjects(c); !slices.Contains(got, "Secret/radius-tls") {
		t.Errorf("referenced %v lack the EAP Secret", got)
	}

	c.Spec.EAP = &aaav1.EAPSpec{Methods: []string{"md5"}}
	spec = withDefaults(c.Spec, Options{Version: "v1.2.3"})
	if eapUsesTLS(spec) {
		t.Error("md5 alone asks for a certificate")
	}
	d = buildDeployment(c, spec, spec.Datacenters[0], "h")
	if v, _ := volumeOf(d, "eap-tls"); v != nil {
		t.Errorf("md5 alone mounts a certificate: %+v", v)
	}
	assertEAPForward(t, c, spec, d, false)
	assertEAPTickets(t, c, spec, d, "")
	cfg = renderPolicingConfig(c, spec, "dc1")
	if !strings.Contains(cfg, "- md5") || strings.Contains(cfg, "certFile: /etc/openaaa/eap") || !strings.Contains(cfg, "timeout: 30s") {
		t.Errorf("eap section for md5:\n%s", cfg)
	}

	c.Spec.EAP = nil
	spec = withDefaults(c.Spec, Options{Version: "v1.2.3"})
	if cfg := renderPolicingConfig(c, spec, "dc1"); strings.Contains(cfg, "eap:") {
		t.Errorf("an eap section without spec.eap:\n%s", cfg)
	}
}
