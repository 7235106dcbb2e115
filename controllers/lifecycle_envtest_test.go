package controllers

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// TestThreeDCLifecycle drives the 3-DC sample through its whole life on a real API server:
// K8ssandraCluster → migration Job → per-DC objects → Ready; a quiet reconcile; a Secret
// change rolling pods; scaling, adding and removing a data center; deletion.
func TestThreeDCLifecycle(t *testing.T) {
	te := sharedEnv(t)
	ns := te.newNamespace(t, "lifecycle")
	te.createSecret(t, ns, "aaa-radius-clients", map[string]string{"clients.yaml": "[]\n"})
	te.createSecret(t, ns, "aaa-ldap-bind", map[string]string{"password": "bind-secret-value"})

	sample := loadSample(t)
	sample.Namespace = ns
	if err := te.c.Create(bg, sample); err != nil {
		t.Fatalf("create the sample: %v", err)
	}
	name := sample.Name

	// 1. A K8ssandraCluster with 3 datacenters of size 3, owned by the AAACluster; nothing else
	// waits on Cassandra yet.
	var k8c *unstructured.Unstructured
	eventually(t, wait, "K8ssandraCluster with dc1..dc3 of size 3", func() error {
		var err error
		if k8c, err = te.k8ssandra(ns, name); err != nil {
			return err
		}
		if got, want := k8ssandraDCs(k8c), map[string]int64{"dc1": 3, "dc2": 3, "dc3": 3}; fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("datacenters %v, want %v", got, want)
		}
		return nil
	})
	if !metav1.IsControlledBy(k8c, sample) {
		t.Errorf("K8ssandraCluster not controlled by the AAACluster: %v", k8c.GetOwnerReferences())
	}
	if v, _, _ := unstructured.NestedString(k8c.Object, "spec", "cassandra", "serverVersion"); v != "5.0.9" {
		t.Errorf("serverVersion %q, want 5.0.9", v)
	}
	te.waitCondition(t, ns, name, aaav1.ConditionCassandraReady, metav1.ConditionFalse, ReasonCassandraInit)
	te.waitCondition(t, ns, name, aaav1.ConditionReady, metav1.ConditionFalse, ReasonCassandraInit)
	if jobs, _ := te.migrationJobs(ns, name); len(jobs) != 0 {
		t.Fatalf("migration Job before Cassandra is initialized: %d", len(jobs))
	}

	// The RadSec Certificate, the ServiceMonitor, the PrometheusRule and the dashboard do not
	// wait for Cassandra.
	for _, gvk := range []struct{ kind, name string }{{"Certificate", name + "-radsec"}, {"ServiceMonitor", name}, {"PrometheusRule", name}} {
		u := &unstructured.Unstructured{}
		switch gvk.kind {
		case "Certificate":
			u.SetGroupVersionKind(CertificateGVK)
		case "ServiceMonitor":
			u.SetGroupVersionKind(ServiceMonitorGVK)
		default:
			u.SetGroupVersionKind(PrometheusRuleGVK)
		}
		u.SetNamespace(ns)
		u.SetName(gvk.name)
		eventually(t, wait, gvk.kind, func() error {
			ok, err := te.exists(u)
			if !ok && err == nil {
				err = fmt.Errorf("%s %s not found", gvk.kind, gvk.name)
			}
			return err
		})
	}
	te.waitCondition(t, ns, name, aaav1.ConditionMonitoringReady, metav1.ConditionTrue, ReasonReady)
	// Credentials exist once k8ssandra-operator creates them.
	te.createSecret(t, ns, name+"-superuser", map[string]string{"username": "aaa-superuser", "password": "s3cret-one"})

	// 2. Initialized: the migration Job with the replication map of all three datacenters.
	te.markCassandra(t, ns, name, "dc1", "dc2", "dc3")
	job := te.waitMigrationJob(t, ns, name, "dc1:3,dc2:3,dc3:3")
	args := job.Spec.Template.Spec.Containers[0].Args
	for _, flag := range []string{"migrate", "--contact-points", "--keyspace", "--username-file", "--password-file"} {
		if !slices.Contains(args, flag) {
			t.Errorf("migration Job args %v lack %s", args, flag)
		}
	}
	if img := job.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/openaaa/policing:v0.1.0" {
		t.Errorf("migration image %q", img)
	}
	te.waitCondition(t, ns, name, aaav1.ConditionSchemaReady, metav1.ConditionFalse, ReasonMigrating)
	consistently(t, time.Second, "no Deployment before the schema is migrated", func() error {
		list := &appsv1.DeploymentList{}
		if err := te.c.List(bg, list, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d Deployments", len(list.Items))
		}
		return nil
	})

	// 3. The Job succeeds: per-DC Deployments, Services, PDBs and HPAs.
	te.finishJob(t, job, true)
	c := te.waitCondition(t, ns, name, aaav1.ConditionSchemaReady, metav1.ConditionTrue, ReasonReady)
	if c.Status.Schema == nil || c.Status.Schema.Version != "v0.1.0" || c.Status.Schema.Replication != "dc1:3,dc2:3,dc3:3" {
		t.Errorf("status.schema = %+v", c.Status.Schema)
	}
	dcNames := []string{"dc1", "dc2", "dc3"}
	for _, dc := range dcNames {
		for _, obj := range []client.Object{
			&appsv1.Deployment{ObjectMeta: objKey(ns, name+"-"+dc)},
			&corev1.Service{ObjectMeta: objKey(ns, name+"-"+dc+"-radius")},
			&corev1.Service{ObjectMeta: objKey(ns, name+"-"+dc+"-radsec")},
			&corev1.Service{ObjectMeta: objKey(ns, name+"-"+dc+"-admin")},
			&policyv1.PodDisruptionBudget{ObjectMeta: objKey(ns, name+"-"+dc)},
			&corev1.ConfigMap{ObjectMeta: objKey(ns, name+"-"+dc+"-policing")},
		} {
			eventually(t, wait, fmt.Sprintf("%T %s", obj, obj.GetName()), func() error {
				ok, err := te.exists(obj)
				if err == nil && !ok {
					err = fmt.Errorf("not found")
				}
				return err
			})
			if !metav1.IsControlledBy(obj, c) {
				t.Errorf("%T %s is not controlled by the AAACluster", obj, obj.GetName())
			}
		}
	}
	// dc1 autoscales, dc2 and dc3 do not.
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: objKey(ns, name+"-dc1")}
	eventually(t, wait, "HPA of dc1", func() error { _, err := te.exists(hpa); return err })
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas != 2 || hpa.Spec.MaxReplicas != 8 || len(hpa.Spec.Metrics) != 2 {
		t.Errorf("HPA of dc1: %+v", hpa.Spec)
	}
	if ok, _ := te.exists(&autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: objKey(ns, name+"-dc2")}); ok {
		t.Error("dc2 has an HPA without autoscaling")
	}
	radius := &corev1.Service{ObjectMeta: objKey(ns, name+"-dc1-radius")}
	if _, err := te.exists(radius); err != nil {
		t.Fatal(err)
	}
	if radius.Spec.Type != corev1.ServiceTypeLoadBalancer || radius.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		t.Errorf("dc1 radius Service: type %s, externalTrafficPolicy %s", radius.Spec.Type, radius.Spec.ExternalTrafficPolicy)
	}
	// The ConfigMap names credential files but holds no secret.
	cm := &corev1.ConfigMap{ObjectMeta: objKey(ns, name+"-dc2-policing")}
	if _, err := te.exists(cm); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"s3cret-one", "bind-secret-value", "aaa-superuser"} {
		for _, v := range cm.Data {
			if strings.Contains(v, secret) {
				t.Errorf("ConfigMap holds the secret value %q", secret)
			}
		}
	}
	if !strings.Contains(cm.Data["policing.yaml"], "localDC: dc2") {
		t.Errorf("dc2 config lacks localDC: dc2:\n%s", cm.Data["policing.yaml"])
	}

	// 4. Deployments available: Ready.
	te.markDeploymentsAvailable(t, ns, name+"-dc1", name+"-dc2", name+"-dc3")
	c = te.waitCondition(t, ns, name, aaav1.ConditionReady, metav1.ConditionTrue, ReasonReady)
	te.waitCondition(t, ns, name, aaav1.ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected)
	if c.Status.ReadyDatacenters != "3/3" || len(c.Status.Datacenters) != 3 || !c.Status.Datacenters[0].Ready || !c.Status.Datacenters[0].CassandraReady {
		t.Errorf("status: %s %+v", c.Status.ReadyDatacenters, c.Status.Datacenters)
	}
	if !te.recorder.has(ns, "Normal "+ReasonMigrationSucceeded) || !te.recorder.has(ns, "Normal "+ReasonCreated) {
		t.Errorf("events: %v", te.recorder.events(ns))
	}

	// 5. A reconcile of an unchanged object goes quiet: no write at all, twice over.
	te.assertQuiet(t, ns, name)

	// 6. A changed Secret rolls the pods; a changed NAS clients Secret does not (it is reloaded).
	hashOfDep := func() string {
		d := &appsv1.Deployment{}
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: name + "-dc2"}, d); err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations[AnnotationConfigHash]
	}
	before := hashOfDep()
	clients := &corev1.Secret{}
	if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "aaa-radius-clients"}, clients); err != nil {
		t.Fatal(err)
	}
	clients.StringData = map[string]string{"clients.yaml": "- name: nas\n  address: 192.0.2.1\n"}
	if err := te.c.Update(bg, clients); err != nil {
		t.Fatal(err)
	}
	consistently(t, 2*time.Second, "clients change does not roll pods", func() error {
		if h := hashOfDep(); h != before {
			return fmt.Errorf("config hash changed")
		}
		return nil
	})
	su := &corev1.Secret{}
	if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: name + "-superuser"}, su); err != nil {
		t.Fatal(err)
	}
	su.StringData = map[string]string{"password": "s3cret-two"}
	if err := te.c.Update(bg, su); err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "credentials change rolls pods", func() error {
		if h := hashOfDep(); h == before {
			return fmt.Errorf("config hash unchanged")
		}
		return nil
	})
	te.markDeploymentsAvailable(t, ns, name+"-dc1", name+"-dc2", name+"-dc3")

	// 7. Scaling: dc2 gets 4 policing replicas and 5 Cassandra nodes; the replication factor
	// stays 3, so no new migration.
	te.updateCluster(t, ns, name, func(c *aaav1.AAACluster) {
		c.Spec.Datacenters[1].Replicas = ptr.To[int32](4)
		c.Spec.Datacenters[1].Cassandra.Size = ptr.To[int32](5)
	})
	eventually(t, wait, "dc2 scaled", func() error {
		d := &appsv1.Deployment{}
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: name + "-dc2"}, d); err != nil {
			return err
		}
		if ptr.Deref(d.Spec.Replicas, 0) != 4 {
			return fmt.Errorf("replicas %d", ptr.Deref(d.Spec.Replicas, 0))
		}
		u, err := te.k8ssandra(ns, name)
		if err != nil {
			return err
		}
		if s := k8ssandraDCs(u)["dc2"]; s != 5 {
			return fmt.Errorf("Cassandra dc2 size %d", s)
		}
		return nil
	})
	if jobs, _ := te.migrationJobs(ns, name); len(jobs) != 1 {
		t.Errorf("scaling started a migration: %d Jobs", len(jobs))
	}
	te.markDeploymentsAvailable(t, ns, name+"-dc2")

	// 8. Adding dc4: the K8ssandraCluster grows; the migration with the new map runs once dc4's
	// Cassandra is ready; then policing starts in dc4.
	te.updateCluster(t, ns, name, func(c *aaav1.AAACluster) {
		c.Spec.Datacenters = append(c.Spec.Datacenters, aaav1.Datacenter{Name: "dc4", Replicas: ptr.To[int32](2)})
	})
	eventually(t, wait, "K8ssandraCluster with dc4", func() error {
		u, err := te.k8ssandra(ns, name)
		if err != nil {
			return err
		}
		if _, ok := k8ssandraDCs(u)["dc4"]; !ok {
			return fmt.Errorf("datacenters %v", k8ssandraDCs(u))
		}
		return nil
	})
	// dc4 joins: progress, not degradation (no Degraded, no Warning event) until it serves.
	seenEvents := len(te.recorder.events(ns))
	te.waitCondition(t, ns, name, aaav1.ConditionCassandraReady, metav1.ConditionFalse, ReasonDatacenterJoining)
	if d := meta.FindStatusCondition(te.getCluster(t, ns, name).Status.Conditions, aaav1.ConditionDegraded); d == nil || d.Status != metav1.ConditionFalse {
		t.Errorf("dc4 joining: Degraded %+v, want False", d)
	}
	consistently(t, time.Second, "no policing in dc4 before its Cassandra is ready and migrated", func() error {
		if ok, err := te.exists(&appsv1.Deployment{ObjectMeta: objKey(ns, name+"-dc4")}); ok || err != nil {
			return fmt.Errorf("dc4 Deployment exists (%v)", err)
		}
		return nil
	})
	te.markCassandra(t, ns, name, "dc1", "dc2", "dc3", "dc4")
	job4 := te.waitMigrationJob(t, ns, name, "dc1:3,dc2:3,dc3:3,dc4:3")
	te.finishJob(t, job4, true)
	eventually(t, wait, "dc4 Deployment and the first Job pruned", func() error {
		if ok, err := te.exists(&appsv1.Deployment{ObjectMeta: objKey(ns, name+"-dc4")}); !ok || err != nil {
			return fmt.Errorf("dc4 Deployment missing (%v)", err)
		}
		jobs, err := te.migrationJobs(ns, name)
		if err != nil {
			return err
		}
		if len(jobs) != 1 || jobs[0].Name != job4.Name {
			return fmt.Errorf("%d migration Jobs", len(jobs))
		}
		return nil
	})
	te.markDeploymentsAvailable(t, ns, name+"-dc4")
	c = te.waitCondition(t, ns, name, aaav1.ConditionReady, metav1.ConditionTrue, ReasonReady)
	if c.Status.ReadyDatacenters != "4/4" {
		t.Errorf("readyDatacenters %s", c.Status.ReadyDatacenters)
	}
	if d := findDC(c.Status.Datacenters, "dc4"); d == nil || !d.Joined {
		t.Errorf("dc4 serving: %+v, want joined", d)
	}
	for _, e := range te.recorder.events(ns)[seenEvents:] {
		if strings.HasPrefix(e, "Warning ") {
			t.Errorf("a Warning event while dc4 joined: %q", e)
		}
	}

	// 9. Removing dc3: policing goes at once; Cassandra keeps dc3 until the keyspace no longer
	// replicates there.
	te.updateCluster(t, ns, name, func(c *aaav1.AAACluster) {
		c.Spec.Datacenters = slices.DeleteFunc(c.Spec.Datacenters, func(d aaav1.Datacenter) bool { return d.Name == "dc3" })
	})
	for _, obj := range []client.Object{
		&appsv1.Deployment{ObjectMeta: objKey(ns, name+"-dc3")},
		&corev1.Service{ObjectMeta: objKey(ns, name+"-dc3-radius")},
		&corev1.Service{ObjectMeta: objKey(ns, name+"-dc3-admin")},
		&policyv1.PodDisruptionBudget{ObjectMeta: objKey(ns, name+"-dc3")},
		&corev1.ConfigMap{ObjectMeta: objKey(ns, name+"-dc3-policing")},
	} {
		eventually(t, wait, fmt.Sprintf("%T %s deleted", obj, obj.GetName()), func() error {
			ok, err := te.exists(obj)
			if ok {
				return fmt.Errorf("still there")
			}
			return err
		})
	}
	job3 := te.waitMigrationJob(t, ns, name, "dc1:3,dc2:3,dc4:3")
	if u, err := te.k8ssandra(ns, name); err != nil || k8ssandraDCs(u)["dc3"] != 3 {
		t.Fatalf("dc3 left Cassandra before the keyspace stopped replicating there: %v %v", k8ssandraDCs(u), err)
	}
	te.finishJob(t, job3, true)
	eventually(t, wait, "dc3 leaves the K8ssandraCluster", func() error {
		u, err := te.k8ssandra(ns, name)
		if err != nil {
			return err
		}
		if got := fmt.Sprint(k8ssandraDCs(u)); got != fmt.Sprint(map[string]int64{"dc1": 3, "dc2": 5, "dc4": 3}) {
			return fmt.Errorf("datacenters %s", got)
		}
		return nil
	})
	c = te.waitCondition(t, ns, name, aaav1.ConditionReady, metav1.ConditionTrue, ReasonReady)
	if c.Status.ReadyDatacenters != "3/3" || c.Status.Schema.Replication != "dc1:3,dc2:3,dc4:3" {
		t.Errorf("status after removing dc3: %s %+v", c.Status.ReadyDatacenters, c.Status.Schema)
	}
	te.assertQuiet(t, ns, name)

	// 10. Deletion: the AAACluster goes (no finalizer); everything it created is owned by it, so
	// the garbage collector of a real cluster removes it.
	if err := te.c.Delete(bg, c); err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "AAACluster deleted", func() error {
		ok, err := te.exists(&aaav1.AAACluster{ObjectMeta: objKey(ns, name)})
		if ok {
			return fmt.Errorf("still there")
		}
		return err
	})
	te.assertAllOwnedBy(t, ns, c)
}

// assertQuiet reconciles twice directly and through a watch event, and expects no write (no
// create, update, patch, delete or status write, no event) and unchanged resourceVersions.
func (te *testEnv) assertQuiet(t *testing.T, ns, name string) {
	t.Helper()
	// Let the watches settle: nothing written for 2 s.
	eventually(t, wait, "the operator settles", func() error {
		n, _ := te.writes.get(ns)
		time.Sleep(2 * time.Second)
		if m, log := te.writes.get(ns); m != n {
			return fmt.Errorf("%d writes in 2s: %v", m-n, log[n:])
		}
		return nil
	})
	versions := te.resourceVersions(t, ns)
	writes, _ := te.writes.get(ns)
	events := len(te.recorder.events(ns))
	for i := 0; i < 2; i++ {
		if _, err := te.r.Reconcile(bg, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
	}
	// A watch event too: touching a label reconciles through the manager.
	te.updateCluster(t, ns, name, func(c *aaav1.AAACluster) {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels["touched"] = fmt.Sprint(time.Now().UnixNano())
	})
	time.Sleep(2 * time.Second)
	if n, log := te.writes.get(ns); n != writes {
		t.Errorf("reconcile of an unchanged AAACluster wrote %d times: %v", n-writes, log[writes:])
	}
	if e := te.recorder.events(ns); len(e) != events {
		t.Errorf("reconcile of an unchanged AAACluster recorded events: %v", e[events:])
	}
	after := te.resourceVersions(t, ns)
	for k, v := range versions {
		if k == "AAACluster/"+name {
			continue // the test's own label change
		}
		if after[k] != v {
			t.Errorf("%s changed: resourceVersion %s -> %s", k, v, after[k])
		}
	}
}

// resourceVersions of everything the operator manages in ns.
func (te *testEnv) resourceVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	lists := map[string]client.ObjectList{
		"AAACluster": &aaav1.AAAClusterList{}, "Deployment": &appsv1.DeploymentList{}, "Service": &corev1.ServiceList{},
		"ConfigMap": &corev1.ConfigMapList{}, "Job": &batchv1.JobList{}, "PDB": &policyv1.PodDisruptionBudgetList{},
		"HPA": &autoscalingv2.HorizontalPodAutoscalerList{},
	}
	for kind, l := range lists {
		if err := te.c.List(bg, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, _ := metaItems(l)
		for _, o := range items {
			out[kind+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	for _, gvk := range []struct {
		kind string
		list *unstructured.UnstructuredList
	}{
		{"K8ssandraCluster", listOf(K8ssandraClusterGVK.GroupVersion().WithKind("K8ssandraClusterList"))},
		{"Certificate", listOf(CertificateGVK.GroupVersion().WithKind("CertificateList"))},
		{"ServiceMonitor", listOf(ServiceMonitorGVK.GroupVersion().WithKind("ServiceMonitorList"))},
		{"PrometheusRule", listOf(PrometheusRuleGVK.GroupVersion().WithKind("PrometheusRuleList"))},
	} {
		if err := te.c.List(bg, gvk.list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, o := range gvk.list.Items {
			out[gvk.kind+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	return out
}

// assertAllOwnedBy checks that every object the operator made in ns names the cluster as
// controller.
func (te *testEnv) assertAllOwnedBy(t *testing.T, ns string, c *aaav1.AAACluster) {
	t.Helper()
	checked := 0
	lists := []client.ObjectList{&appsv1.DeploymentList{}, &corev1.ServiceList{}, &corev1.ConfigMapList{}, &batchv1.JobList{},
		&policyv1.PodDisruptionBudgetList{}, &autoscalingv2.HorizontalPodAutoscalerList{},
		listOf(K8ssandraClusterGVK.GroupVersion().WithKind("K8ssandraClusterList")),
		listOf(CertificateGVK.GroupVersion().WithKind("CertificateList")),
		listOf(ServiceMonitorGVK.GroupVersion().WithKind("ServiceMonitorList")),
		listOf(PrometheusRuleGVK.GroupVersion().WithKind("PrometheusRuleList"))}
	for _, l := range lists {
		if err := te.c.List(bg, l, client.InNamespace(ns), client.MatchingLabels{LabelCluster: c.Name}); err != nil {
			t.Fatal(err)
		}
		items, _ := metaItems(l)
		for _, o := range items {
			checked++
			ref := metav1.GetControllerOf(o)
			if ref == nil || ref.UID != c.UID || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
				t.Errorf("%T %s: controller %+v, want the AAACluster %s", o, o.GetName(), ref, c.UID)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d objects carry the cluster label", checked)
	}
}

func metaItems(l client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	err := meta.EachListItem(l, func(o runtime.Object) error {
		out = append(out, o.(client.Object))
		return nil
	})
	return out, err
}

func listOf(gvk schema.GroupVersionKind) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk)
	return l
}
