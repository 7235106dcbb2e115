package controllers

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	policing "github.com/openaaa/openaaa/services/policing/config"
)

// spec.eap with an issuer: a Certificate <name>-eap, policing's eap section, the certificate's
// Secret, the CA bundle, the CRLs, the generated EAP inter-node secret and session ticket keys
// mounted; the operator then goes quiet. spec.eap.resumption.enabled false takes the ticket
// keys away. Moving to secretName deletes
// the Certificate and mounts the user's Secret; removing spec.eap takes the rest away.
func TestEAPReconcile(t *testing.T) {
	te := sharedEnv(t)
	ns := te.newNamespace(t, "eap")
	c := te.migratedCluster(t, ns, "wifi", func(c *aaav1.AAACluster) {
		c.Spec.EAP = &aaav1.EAPSpec{Methods: []string{"tls", "peap"}, IssuerRef: &aaav1.IssuerReference{Name: "wifi-ca"},
			DNSNames: []string{"radius.example.net"}, ClientCA: &aaav1.ConfigMapKeyRef{Name: "client-ca"}, CRL: &aaav1.ConfigMapKeyRef{Name: "client-crl"}}
	})
	if c.Spec.EAP.MaxConversations != int32(policing.Default().EAP.MaxConversations) || c.Spec.EAP.TLSIdentity != policing.Default().EAP.TLSIdentity {
		t.Errorf("schema defaults of spec.eap: maxConversations %d, tlsIdentity %q", c.Spec.EAP.MaxConversations, c.Spec.EAP.TLSIdentity)
	}

	cert := &unstructured.Unstructured{}
	cert.SetGroupVersionKind(CertificateGVK)
	cert.SetNamespace(ns)
	cert.SetName("wifi-eap")
	eventually(t, wait, "Certificate wifi-eap", func() error {
		if err := te.c.Get(bg, client.ObjectKeyFromObject(cert), cert); err != nil {
			return err
		}
		names, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
		if secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName"); secret != "wifi-eap-tls" || strings.Join(names, ",") != "radius.example.net" {
			return fmt.Errorf("secretName %q, dnsNames %v", secret, names)
		}
		return nil
	})
	config := func() string {
		cm := &corev1.ConfigMap{}
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "wifi-dc1-policing"}, cm); err != nil {
			t.Fatal(err)
		}
		return cm.Data[configKey]
	}
	eventually(t, wait, "the eap section of policing.yaml", func() error {
		cfg := config()
		for _, want := range []string{"certFile: /etc/openaaa/eap-tls/tls.crt", "caFile: /etc/openaaa/eap-ca/ca.crt", "crlFile: /etc/openaaa/eap-crl/ca.crl", "- peap", "timeout: 30s"} {
			if !strings.Contains(cfg, want) {
				return fmt.Errorf("no %q in\n%s", want, cfg)
			}
		}
		return nil
	})
	mounted := func() (secret, configMap string, err error) {
		d := &appsv1.Deployment{}
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "wifi-dc1"}, d); err != nil {
			return "", "", err
		}
		if v, m := volumeOf(d, "eap-tls"); v != nil && m != nil && m.ReadOnly {
			secret = v.Secret.SecretName
		}
		if v, m := volumeOf(d, "eap-ca"); v != nil && m != nil && m.ReadOnly {
			configMap = v.ConfigMap.Name
		}
		if v, m := volumeOf(d, "eap-crl"); v != nil && m != nil && m.ReadOnly {
			configMap += "," + v.ConfigMap.Name
		}
		return secret, configMap, nil
	}
	eventually(t, wait, "the EAP volumes", func() error {
		if s, cm, err := mounted(); err != nil || s != "wifi-eap-tls" || cm != "client-ca,client-crl" {
			return fmt.Errorf("Secret %q, ConfigMap %q (%v)", s, cm, err)
		}
		return nil
	})
	// The inter-node secret of EAP forwarding: generated once into a Secret the cluster owns,
	// mounted, only its path in the ConfigMap.
	fwd := &corev1.Secret{}
	eventually(t, wait, "the EAP inter-node Secret mounted", func() error {
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "wifi-eap-forward"}, fwd); err != nil {
			return err
		}
		d := &appsv1.Deployment{}
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "wifi-dc1"}, d); err != nil {
			return err
		}
		if v, m := volumeOf(d, "eap-forward"); v == nil || m == nil || v.Secret.SecretName != "wifi-eap-forward" || !m.ReadOnly {
			return fmt.Errorf("not mounted")
		}
		return nil
	})
	if len(fwd.Data[eapForwardKey]) < 32 || len(fwd.OwnerReferences) != 1 || fwd.OwnerReferences[0].Name != "wifi" {
		t.Errorf("Secret wifi-eap-forward: %d octets, owners %+v", len(fwd.Data[eapForwardKey]), fwd.OwnerReferences)
	}
	if cfg := config(); strings.Contains(cfg, string(fwd.Data[eapForwardKey])) || !strings.Contains(cfg, "secretFile: /etc/openaaa/eap-forward/secret") {
		t.Errorf("policing.yaml holds the inter-node secret, or not its path:\n%s", cfg)
	}
	// The session ticket keys: generated once into a Secret the cluster owns, mounted, only
	// their path in the ConfigMap.
	tickets := &corev1.Secret{}
	ticketsMounted := func() (bool, error) {
		d := &appsv1.Deployment{}
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "wifi-dc1"}, d); err != nil {
			return false, err
		}
		v, m := volumeOf(d, "eap-tickets")
		return v != nil && m != nil && v.Secret.SecretName == "wifi-eap-tickets" && m.ReadOnly, nil
	}
	eventually(t, wait, "the EAP ticket keys Secret mounted", func() error {
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "wifi-eap-tickets"}, tickets); err != nil {
			return err
		}
		if ok, err := ticketsMounted(); !ok || err != nil {
			return fmt.Errorf("not mounted (%v)", err)
		}
		return nil
	})
	if len(tickets.Data[eapTicketsKey]) < 32 || len(tickets.OwnerReferences) != 1 || tickets.OwnerReferences[0].Name != "wifi" {
		t.Errorf("Secret wifi-eap-tickets: %d octets, owners %+v", len(tickets.Data[eapTicketsKey]), tickets.OwnerReferences)
	}
	if cfg := config(); strings.Contains(cfg, string(tickets.Data[eapTicketsKey])) || !strings.Contains(cfg, "ticketKeyFile: /etc/openaaa/eap-tickets/keys") {
		t.Errorf("policing.yaml holds the ticket keys, or not their path:\n%s", cfg)
	}
	te.assertQuiet(t, ns, "wifi")

	// spec.eap.resumption.enabled false: no resumption section, no mount.
	te.updateCluster(t, ns, "wifi", func(c *aaav1.AAACluster) {
		c.Spec.EAP.Resumption = &aaav1.EAPResumption{Enabled: ptr.To(false)}
	})
	eventually(t, wait, "resumption off", func() error {
		if ok, err := ticketsMounted(); ok || err != nil {
			return fmt.Errorf("still mounted (%v)", err)
		}
		if strings.Contains(config(), "resumption:") {
			return fmt.Errorf("policing.yaml still has eap.resumption")
		}
		return nil
	})

	te.updateCluster(t, ns, "wifi", func(c *aaav1.AAACluster) {
		c.Spec.EAP.IssuerRef, c.Spec.EAP.DNSNames, c.Spec.EAP.SecretName = nil, nil, "radius-tls"
	})
	eventually(t, wait, "the user's Secret instead of cert-manager's", func() error {
		if ok, err := te.exists(cert); ok || err != nil {
			return fmt.Errorf("Certificate wifi-eap still there (%v)", err)
		}
		if s, _, err := mounted(); err != nil || s != "radius-tls" {
			return fmt.Errorf("Secret %q (%v)", s, err)
		}
		return nil
	})

	te.updateCluster(t, ns, "wifi", func(c *aaav1.AAACluster) { c.Spec.EAP = nil })
	eventually(t, wait, "EAP gone", func() error {
		if s, cm, err := mounted(); err != nil || s != "" || cm != "" {
			return fmt.Errorf("still mounted: Secret %q, ConfigMap %q (%v)", s, cm, err)
		}
		if strings.Contains(config(), "eap:") {
			return fmt.Errorf("the eap section of policing.yaml is still there")
		}
		d := &appsv1.Deployment{}
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "wifi-dc1"}, d); err != nil {
			return err
		}
		if v, _ := volumeOf(d, "eap-forward"); v != nil {
			return fmt.Errorf("the inter-node secret is still mounted")
		}
		return nil
	})
}
