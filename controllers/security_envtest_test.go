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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
	te.migratedCluster(t, ns, "sec", nil)

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

	// Deleted, it is made again, with a new token.
	if err := te.c.Delete(bg, secret); err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "the admin token Secret made again", func() error {
		s := &corev1.Secret{}
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "sec-admin-token"}, s); err != nil {
			return err
		}
		if t := string(s.Data["token"]); t == token || t == "rotated-by-the-user-0123456789abcdef" || len(t) < 32 {
			return fmt.Errorf("token not renewed")
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

// The operator caches only labelled Secrets and ConfigMaps. A referenced one without the label
// is invisible to it, and the status says so and names the label; once labelled it is used.
func TestUnlabelledReferencesAreNotWatched(t *testing.T) {
	te := sharedEnv(t)
	ns := te.newNamespace(t, "unlabelled")
	plain := &corev1.Secret{ObjectMeta: objKey(ns, "cass-plain"), StringData: map[string]string{"username": "u", "password": "p"}}
	if err := te.c.Create(bg, plain); err != nil {
		t.Fatal(err)
	}
	c := minimalCluster(ns, "hidden")
	c.Spec.Datacenters = c.Spec.Datacenters[:1]
	c.Spec.Cassandra.External = &aaav1.ExternalCassandra{ContactPoints: []string{listenTCP(t)}, CredentialsSecret: corev1.LocalObjectReference{Name: "cass-plain"}}
	if err := te.c.Create(bg, c); err != nil {
		t.Fatal(err)
	}
	got := te.waitCondition(t, ns, "hidden", aaav1.ConditionCassandraReady, metav1.ConditionFalse, ReasonNotLabelled)
	cond := meta.FindStatusCondition(got.Status.Conditions, aaav1.ConditionCassandraReady)
	if !strings.Contains(cond.Message, "Secret/cass-plain") || !strings.Contains(cond.Message, WatchLabel+"="+WatchLabelValue) {
		t.Errorf("CassandraReady message %q: want the Secret and the label to put on it", cond.Message)
	}
	// Not in the operator's cache: its client does not see it at all.
	if err := te.r.Get(bg, client.ObjectKey{Namespace: ns, Name: "cass-plain"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the operator's cached client reads an unlabelled Secret: %v", err)
	}

	// A referenced ConfigMap without the label: Degraded, naming it.
	subs := &corev1.ConfigMap{ObjectMeta: objKey(ns, "subs"), Data: map[string]string{"subscribers.yaml": "subscribers: []\n"}}
	if err := te.c.Create(bg, subs); err != nil {
		t.Fatal(err)
	}
	te.updateCluster(t, ns, "hidden", func(c *aaav1.AAACluster) {
		c.Spec.Subscribers = &aaav1.SubscribersSpec{File: &aaav1.SubscriberFileSpec{ConfigMap: &aaav1.ConfigMapKeyRef{Name: "subs"}}}
	})
	got = te.waitCondition(t, ns, "hidden", aaav1.ConditionDegraded, metav1.ConditionTrue, ReasonNotLabelled)
	if cond := meta.FindStatusCondition(got.Status.Conditions, aaav1.ConditionDegraded); !strings.Contains(cond.Message, "ConfigMap/subs") {
		t.Errorf("Degraded message %q: want ConfigMap/subs", cond.Message)
	}

	// Labelled: seen, used, and the conditions move on.
	for _, o := range []client.Object{plain, subs} {
		o.SetLabels(map[string]string{WatchLabel: WatchLabelValue})
		if err := te.c.Update(bg, o); err != nil {
			t.Fatal(err)
		}
	}
	te.waitCondition(t, ns, "hidden", aaav1.ConditionCassandraReady, metav1.ConditionTrue, ReasonExternalCassandra)
	eventually(t, wait, "Degraded no longer NotLabelled", func() error {
		cond := meta.FindStatusCondition(te.getCluster(t, ns, "hidden").Status.Conditions, aaav1.ConditionDegraded)
		if cond != nil && cond.Reason == ReasonNotLabelled {
			return fmt.Errorf("Degraded: %s", cond.Message)
		}
		return nil
	})
}

// With a managed Cassandra, the superuser Secret comes from k8ssandra-operator without the
// label: the operator labels it, so that it sees it.
func TestManagedSuperuserSecretIsLabelled(t *testing.T) {
	te := sharedEnv(t)
	ns := te.newNamespace(t, "adopt")
	c := minimalCluster(ns, "adopt")
	c.Spec.Datacenters = c.Spec.Datacenters[:1]
	if err := te.c.Create(bg, c); err != nil {
		t.Fatal(err)
	}
	su := &corev1.Secret{ObjectMeta: objKey(ns, "adopt-superuser"), StringData: map[string]string{"username": "adopt-superuser", "password": "x"}}
	if err := te.c.Create(bg, su); err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "the superuser Secret labelled", func() error {
		s := &corev1.Secret{}
		if err := te.c.Get(bg, client.ObjectKeyFromObject(su), s); err != nil {
			return err
		}
		if s.Labels[WatchLabel] != WatchLabelValue {
			return fmt.Errorf("labels %v", s.Labels)
		}
		return nil
	})
}
