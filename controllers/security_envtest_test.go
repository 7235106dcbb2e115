package controllers

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// The operator gives each AAACluster an admin token Secret (random, kept across reconciles,
// never in a ConfigMap, event or the status), mounts it where policing and policing ctl
// look, and writes one NetworkPolicy per data center; turning the policy off removes it.
func TestAdminTokenAndNetworkPolicy(t *testing.T) {
	te := sharedEnv(t)
	ns := te.newNamespace(t, "sec")
	c := te.externalCluster(t, ns, "sec")
	c.Spec.Datacenters = c.Spec.Datacenters[:1]
	if err := te.c.Create(bg, c); err != nil {
		t.Fatal(err)
	}
	te.finishJob(t, te.waitMigrationJob(t, ns, "sec", "dc1:3"), true)

	secret := &corev1.Secret{}
	eventually(t, wait, "Secret sec-admin-token", func() error {
		return te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "sec-admin-token"}, secret)
	})
	token := string(secret.Data["token"])
	if len(token) < 32 {
		t.Fatalf("admin token of %d characters, want >= 32", len(token))
	}
	live := te.getCluster(t, ns, "sec")
	if !metav1.IsControlledBy(secret, live) {
		t.Errorf("the token Secret is not owned by the AAACluster (it would outlive it)")
	}

	d := &appsv1.Deployment{}
	eventually(t, wait, "Deployment sec-dc1", func() error { return te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "sec-dc1"}, d) })
	var mounted bool
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "sec-admin-token" {
			mounted = true
		}
	}
	for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		if m.Name == "admin-token" && (m.MountPath != adminTokenDir || m.SubPath != "") {
			t.Errorf("admin token mount %+v: a directory is needed for a rotation to reach the pod", m)
		}
	}
	if !mounted {
		t.Errorf("the admin token Secret is not mounted in the policing pods")
	}
	cm := &corev1.ConfigMap{}
	if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "sec-dc1-policing"}, cm); err != nil {
		t.Fatal(err)
	}
	if cfg := cm.Data[configKey]; !strings.Contains(cfg, "tokenFile: "+adminTokenDir+"/token") || strings.Contains(cfg, token) {
		t.Errorf("policing.yaml must name the token file and not hold the token:\n%s", cfg)
	}

	np := &networkingv1.NetworkPolicy{}
	eventually(t, wait, "NetworkPolicy sec-dc1", func() error {
		return te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "sec-dc1"}, np)
	})
	if got, want := np.Spec.PodSelector.MatchLabels, podSelector(live, "dc1"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("NetworkPolicy selects %v, want the policing pods %v", got, want)
	}
	var radiusOpen, adminRestricted bool
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			switch {
			case p.Port.IntVal == 1812 && *p.Protocol == corev1.ProtocolUDP && len(rule.From) == 0:
				radiusOpen = true
			case p.Port.IntVal == AdminPort && len(rule.From) > 0:
				adminRestricted = true
			case p.Port.IntVal == AdminPort:
				t.Errorf("the admin port is open to anyone: %+v", rule)
			}
		}
	}
	if !radiusOpen || !adminRestricted {
		t.Errorf("NetworkPolicy ingress %+v: want RADIUS from anywhere and the admin port restricted", np.Spec.Ingress)
	}

	// The token never shows: not in the status, not in any event.
	st, _ := json.Marshal(te.getCluster(t, ns, "sec").Status)
	if strings.Contains(string(st), token) {
		t.Errorf("the status holds the admin token")
	}
	events := &corev1.EventList{}
	if err := te.c.List(bg, events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if strings.Contains(e.Message, token) {
			t.Errorf("event %s holds the admin token", e.Name)
		}
	}

	// A reconcile keeps the token (a rotated one too): only a missing Secret is created.
	secret.Data["token"] = []byte("rotated-by-the-user-0123456789abcdef")
	if err := te.c.Update(bg, secret); err != nil {
		t.Fatal(err)
	}
	te.updateCluster(t, ns, "sec", func(c *aaav1.AAACluster) { c.Spec.LogLevel = "debug" })
	consistently(t, 2*time.Second, "the rotated token is kept", func() error {
		s := &corev1.Secret{}
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "sec-admin-token"}, s); err != nil {
			return err
		}
		if string(s.Data["token"]) != "rotated-by-the-user-0123456789abcdef" {
			return fmt.Errorf("the operator rewrote the token")
		}
		return nil
	})

	te.updateCluster(t, ns, "sec", func(c *aaav1.AAACluster) { c.Spec.NetworkPolicy.Enabled = ptr.To(false) })
	eventually(t, wait, "NetworkPolicy removed when disabled", func() error {
		ok, err := te.exists(&networkingv1.NetworkPolicy{ObjectMeta: objKey(ns, "sec-dc1")})
		if ok {
			return fmt.Errorf("still there")
		}
		return err
	})
}
