package controllers

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	policing "github.com/openaaa/openaaa/services/policing/config"
)

// diameterCluster is minimalCluster in namespace prod with Diameter Gx on: dc2 overrides the
// identity, one peer has two source networks, another is admitted by its realm alone. The
// subscribers (and their data policies) come from a file, as Gx needs them.
func diameterCluster() (*aaav1.AAACluster, aaav1.AAAClusterSpec) {
	c := minimalCluster("prod", "gx")
	c.Spec.Subscribers = &aaav1.SubscribersSpec{File: &aaav1.SubscriberFileSpec{ConfigMap: &aaav1.ConfigMapKeyRef{Name: "gx-subscribers"}}}
	c.Spec.Datacenters[1].Diameter = &aaav1.DatacenterDiameterSpec{OriginHost: "pcrf-backup.{realm}"}
	c.Spec.Diameter = &aaav1.DiameterSpec{Enabled: true, Realm: "epc.example.net", Peers: []aaav1.DiameterPeer{
		{OriginHost: "pgw1.epc.example.net", SourceCIDRs: []aaav1.CIDR{"10.1.0.0/16", "2001:db8::/32"}},
		{Realm: "roaming.example.org"},
	}}
	return c, withDefaults(c.Spec, Options{Version: "v1.2.3"})
}

// TestGoldenDiameter: spec.diameter becomes policing's diameter section (policing's loader
// takes it: TestRenderedConfigLoadsInPolicing), a TCP Service per data center and
// a container port.
func TestGoldenDiameter(t *testing.T) {
	c, spec := diameterCluster()
	golden(t, "policing-diameter-dc1.yaml", []byte(renderPolicingConfig(c, spec, "dc1")))
	golden(t, "services-diameter-dc1.yaml", toYAML(t, buildServices(c, spec, spec.Datacenters[0])))
}

func TestRenderDiameter(t *testing.T) {
	_, spec := diameterCluster()
	tests := []struct {
		name string
		dc   string
		want policing.Diameter
	}{
		{"the template, filled in", "dc1", policing.Diameter{Enabled: true, Address: ":3868", OriginHost: "pcrf.dc1.epc.example.net", OriginRealm: "epc.example.net",
			ServedHosts: []string{"pcrf-backup.epc.example.net"}}},
		{"the data center's override", "dc2", policing.Diameter{Enabled: true, Address: ":3868", OriginHost: "pcrf-backup.epc.example.net", OriginRealm: "epc.example.net",
			ServedHosts: []string{"pcrf.dc1.epc.example.net"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := renderDiameter(spec, tc.dc)
			if got.Enabled != tc.want.Enabled || got.Address != tc.want.Address || got.OriginHost != tc.want.OriginHost || got.OriginRealm != tc.want.OriginRealm ||
				!slices.Equal(got.ServedHosts, tc.want.ServedHosts) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			// One entry per source network, each keeping the peer's Origin-Host: any entry
			// admits, so pgw1 from 192.0.2.1 must match none.
			peers := []policing.DiameterPeer{
				{OriginHost: "pgw1.epc.example.net", Address: "10.1.0.0/16"},
				{OriginHost: "pgw1.epc.example.net", Address: "2001:db8::/32"},
				{OriginRealm: "roaming.example.org"},
			}
			if len(got.Peers) != len(peers) {
				t.Fatalf("peers %+v, want %+v", got.Peers, peers)
			}
			for i := range peers {
				if got.Peers[i] != peers[i] {
					t.Errorf("peers[%d] = %+v, want %+v", i, got.Peers[i], peers[i])
				}
			}
		})
	}
	spec.Diameter.Port = 3869
	if got := renderDiameter(spec, "dc1").Address; got != ":3869" {
		t.Errorf("address %s for port 3869", got)
	}
}

// With Diameter on, each data center has a TCP Service on the Diameter port that keeps the
// PCEF's source address (sourceCIDRs), the pods a container port of that name, and the
// NetworkPolicy lets anyone reach it (the peer table does the refusing); off, none of them
// and no diameter section for policing.
func TestDiameterObjects(t *testing.T) {
	c, spec := diameterCluster()
	dc := spec.Datacenters[0]
	svc := findService(buildServices(c, spec, dc), diameterServiceName(c, dc.Name))
	if svc == nil {
		t.Fatalf("no Service %s", diameterServiceName(c, dc.Name))
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		t.Errorf("Service type %s, externalTrafficPolicy %s: want LoadBalancer, Local", svc.Spec.Type, svc.Spec.ExternalTrafficPolicy)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 3868 || svc.Spec.Ports[0].Protocol != corev1.ProtocolTCP || svc.Spec.Ports[0].TargetPort.StrVal != portDiameter {
		t.Errorf("Service ports %+v", svc.Spec.Ports)
	}
	if !hasContainerPort(buildDeployment(c, spec, dc, "h"), portDiameter, 3868) {
		t.Errorf("no container port %s 3868/TCP", portDiameter)
	}
	np := buildNetworkPolicy(c, spec, dc.Name, "openaaa-system")
	open := false
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port.IntVal == 3868 && *p.Protocol == corev1.ProtocolTCP {
				open = len(rule.From) == 0
			}
		}
	}
	if !open {
		t.Errorf("the NetworkPolicy does not let PCEFs reach 3868/TCP: %+v", np.Spec.Ingress)
	}

	spec.Diameter.Enabled = false
	if svc := findService(buildServices(c, spec, dc), diameterServiceName(c, dc.Name)); svc != nil {
		t.Errorf("Service %s while Diameter is off", svc.Name)
	}
	if hasContainerPort(buildDeployment(c, spec, dc, "h"), portDiameter, 3868) {
		t.Errorf("container port %s while Diameter is off", portDiameter)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(renderPolicingConfig(c, spec, "dc1")), &cfg); err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg["diameter"]; ok {
		t.Errorf("policing.yaml has a diameter section while Diameter is off")
	}
	for _, rule := range buildNetworkPolicy(c, spec, dc.Name, "").Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port.IntVal == 3868 {
				t.Errorf("the NetworkPolicy opens 3868 while Diameter is off")
			}
		}
	}
}

func findService(svcs []*corev1.Service, name string) *corev1.Service {
	for _, s := range svcs {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func hasContainerPort(d *appsv1.Deployment, name string, port int32) bool {
	for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
		if p.Name == name && p.ContainerPort == port && p.Protocol == corev1.ProtocolTCP {
			return true
		}
	}
	return false
}

// spec.diameter.tls: with an issuer, a Certificate <name>-diameter covering every data
// center's Diameter identity and Service, mounted into the pods, a second port on the Diameter
// Service and the pods, open in the NetworkPolicy, and policing's diameter.tls naming the
// files; with secretName the user's Secret is mounted and no Certificate is asked for.
func TestDiameterTLSObjects(t *testing.T) {
	c, _ := diameterCluster()
	c.Spec.Diameter.TLS = &aaav1.DiameterTLSSpec{Enabled: true, IssuerRef: &aaav1.IssuerReference{Name: "epc-ca"},
		DNSNames: []string{"pcrf.public.example.net"}}
	spec := withDefaults(c.Spec, Options{Version: "v1.2.3"})
	dc := spec.Datacenters[0]
	golden(t, "policing-diameter-tls-dc1.yaml", []byte(renderPolicingConfig(c, spec, "dc1")))
	golden(t, "certificate-diameter.yaml", toYAML(t, buildDiameterCertificate(c, spec).Object))

	names := diameterDNSNames(c, spec)
	for _, want := range []string{"pcrf.dc1.epc.example.net", "pcrf-backup.epc.example.net",
		diameterServiceName(c, "dc2") + ".prod.svc", "pcrf.public.example.net"} {
		if !slices.Contains(names, want) {
			t.Errorf("certificate names %v lack %s", names, want)
		}
	}
	svc := findService(buildServices(c, spec, dc), diameterServiceName(c, dc.Name))
	if svc == nil || len(svc.Spec.Ports) != 2 || svc.Spec.Ports[1].Port != 5658 || svc.Spec.Ports[1].TargetPort.StrVal != portDiamTLS {
		t.Fatalf("Diameter Service ports %+v, want 3868 and 5658", svc)
	}
	dep := buildDeployment(c, spec, dc, "h")
	if !hasContainerPort(dep, portDiamTLS, 5658) {
		t.Errorf("no container port %s 5658/TCP", portDiamTLS)
	}
	secretOf := func(d *appsv1.Deployment) string {
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name == "diameter-tls" && v.Secret != nil {
				return v.Secret.SecretName
			}
		}
		return ""
	}
	if got := secretOf(dep); got != "gx-diameter-tls" {
		t.Errorf("mounted Secret %q, want cert-manager's gx-diameter-tls", got)
	}
	open := false
	for _, rule := range buildNetworkPolicy(c, spec, dc.Name, "").Spec.Ingress {
		for _, p := range rule.Ports {
			open = open || (p.Port.IntVal == 5658 && len(rule.From) == 0)
		}
	}
	if !open {
		t.Error("the NetworkPolicy does not let PCEFs reach 5658/TCP")
	}

	c.Spec.Diameter.TLS = &aaav1.DiameterTLSSpec{Enabled: true, Port: 5659, SecretName: "pcrf-tls"}
	spec = withDefaults(c.Spec, Options{Version: "v1.2.3"})
	if got := secretOf(buildDeployment(c, spec, dc, "h")); got != "pcrf-tls" {
		t.Errorf("mounted Secret %q, want the user's pcrf-tls", got)
	}
	if got := renderDiameter(spec, "dc1").TLS; got.Address != ":5659" || got.CAFile != "/etc/openaaa/diameter-tls/ca.crt" {
		t.Errorf("policing's diameter.tls %+v", got)
	}
	if !slices.Contains(referencedObjects(c), "Secret/pcrf-tls") {
		t.Errorf("the user's Secret is not watched: %v", referencedObjects(c))
	}
	c.Spec.Diameter.TLS.Enabled = false
	spec = withDefaults(c.Spec, Options{Version: "v1.2.3"})
	if renderDiameter(spec, "dc1").TLS.Address != "" || hasContainerPort(buildDeployment(c, spec, dc, "h"), portDiamTLS, 5659) {
		t.Error("TLS objects while spec.diameter.tls.enabled is false")
	}
}
