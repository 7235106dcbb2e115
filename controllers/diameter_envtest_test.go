package controllers

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// Turning spec.diameter on gives each data center a Diameter Service (TCP 3868,
// externalTrafficPolicy Local), policing a diameter section with the data center's identity
// and the peer table, the pods a container port and the NetworkPolicy the port; turning it
// off takes all of them away again.
func TestDiameterOnAndOff(t *testing.T) {
	te := sharedEnv(t)
	ns := te.newNamespace(t, "gx")
	c := te.migratedCluster(t, ns, "gx", func(c *aaav1.AAACluster) {
		c.Spec.Diameter = &aaav1.DiameterSpec{Enabled: true, Realm: "epc.example.net", Peers: []aaav1.DiameterPeer{
			{OriginHost: "pgw1.epc.example.net", SourceCIDRs: []aaav1.CIDR{"10.1.0.0/16"}},
		}}
	})
	if c.Spec.Diameter.Port != DefaultDiameterPort || c.Spec.Diameter.OriginHost != DefaultDiameterOriginHost {
		t.Errorf("schema defaults of spec.diameter: port %d, originHost %q", c.Spec.Diameter.Port, c.Spec.Diameter.OriginHost)
	}

	svc := &corev1.Service{}
	eventually(t, wait, "Service gx-dc1-diameter", func() error {
		return te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "gx-dc1-diameter"}, svc)
	})
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 3868 || svc.Spec.Ports[0].Protocol != corev1.ProtocolTCP ||
		svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		t.Errorf("Service gx-dc1-diameter: ports %+v, externalTrafficPolicy %s", svc.Spec.Ports, svc.Spec.ExternalTrafficPolicy)
	}
	config := func() string {
		cm := &corev1.ConfigMap{}
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "gx-dc1-policing"}, cm); err != nil {
			t.Fatal(err)
		}
		return cm.Data[configKey]
	}
	eventually(t, wait, "the diameter section of policing.yaml", func() error {
		cfg := config()
		for _, want := range []string{"originHost: pcrf.dc1.epc.example.net", "originRealm: epc.example.net", "address: 10.1.0.0/16", `address: :3868`} {
			if !strings.Contains(cfg, want) {
				return fmt.Errorf("no %q in\n%s", want, cfg)
			}
		}
		return nil
	})
	deploymentPort := func() (bool, error) {
		d := &appsv1.Deployment{}
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "gx-dc1"}, d); err != nil {
			return false, err
		}
		return hasContainerPort(d, portDiameter, 3868), nil
	}
	eventually(t, wait, "container port diameter", func() error {
		if ok, err := deploymentPort(); !ok {
			return fmt.Errorf("not there (%v)", err)
		}
		return nil
	})
	policyPort := func() (bool, error) {
		np := &networkingv1.NetworkPolicy{}
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "gx-dc1"}, np); err != nil {
			return false, err
		}
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				if p.Port.IntVal == 3868 && *p.Protocol == corev1.ProtocolTCP {
					return true, nil
				}
			}
		}
		return false, nil
	}
	eventually(t, wait, "3868/TCP in the NetworkPolicy", func() error {
		if ok, err := policyPort(); !ok {
			return fmt.Errorf("not there (%v)", err)
		}
		return nil
	})

	// With its Service in place, an unchanged AAACluster still reconciles without a write.
	te.assertQuiet(t, ns, "gx")

	te.updateCluster(t, ns, "gx", func(c *aaav1.AAACluster) { c.Spec.Diameter.Enabled = false })
	eventually(t, wait, "Diameter gone when disabled", func() error {
		var left []string
		if ok, err := te.exists(&corev1.Service{ObjectMeta: objKey(ns, "gx-dc1-diameter")}); ok || err != nil {
			left = append(left, fmt.Sprintf("Service gx-dc1-diameter (%v)", err))
		}
		if strings.Contains(config(), "diameter:") {
			left = append(left, "the diameter section of policing.yaml")
		}
		if ok, err := deploymentPort(); ok || err != nil {
			left = append(left, fmt.Sprintf("the container port (%v)", err))
		}
		if ok, err := policyPort(); ok || err != nil {
			left = append(left, fmt.Sprintf("3868 in the NetworkPolicy (%v)", err))
		}
		if len(left) > 0 {
			return fmt.Errorf("still there: %s", strings.Join(left, ", "))
		}
		return nil
	})
	// The RADIUS Service stays.
	if ok, err := te.exists(&corev1.Service{ObjectMeta: objKey(ns, "gx-dc1-radius")}); !ok {
		t.Errorf("the RADIUS Service went with Diameter (%v)", err)
	}
}
