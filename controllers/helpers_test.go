package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

const wait = 60 * time.Second // generous: 2 shared cores

var bg = context.Background()

// loadSample reads the 3-DC sample of config/samples.
func loadSample(t *testing.T) *aaav1.AAACluster {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "config", "samples", "aaa_v1alpha1_aaacluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := &aaav1.AAACluster{}
	if err := yaml.UnmarshalStrict(b, c); err != nil {
		t.Fatalf("sample: %v", err)
	}
	return c
}

// createSecret creates a Secret labelled for the operator's cache, as users are told to.
func (te *testEnv) createSecret(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{WatchLabel: WatchLabelValue}}, StringData: data}
	if err := te.c.Create(bg, s); err != nil {
		t.Fatalf("create Secret %s: %v", name, err)
	}
}

// externalCluster is minimalCluster on an external Cassandra that answers, with its
// credentials Secret created.
func (te *testEnv) externalCluster(t *testing.T, ns, name string) *aaav1.AAACluster {
	t.Helper()
	te.createSecret(t, ns, "cass-creds", map[string]string{"username": "u", "password": "p"})
	c := minimalCluster(ns, name)
	c.Spec.Cassandra.External = &aaav1.ExternalCassandra{ContactPoints: []string{listenTCP(t)}, CredentialsSecret: corev1.LocalObjectReference{Name: "cass-creds"}}
	return c
}

// migratedCluster creates a one-data-center AAACluster on an external Cassandra, its spec
// changed by mutate (if not nil) first, and finishes its migration Job: how the feature
// tests begin. The object returned is as the API server stored it (schema defaults set).
func (te *testEnv) migratedCluster(t *testing.T, ns, name string, mutate func(*aaav1.AAACluster)) *aaav1.AAACluster {
	t.Helper()
	c := te.externalCluster(t, ns, name)
	c.Spec.Datacenters = c.Spec.Datacenters[:1]
	if mutate != nil {
		mutate(c)
	}
	if err := te.c.Create(bg, c); err != nil {
		t.Fatal(err)
	}
	te.finishJob(t, te.waitMigrationJob(t, ns, name, "dc1:3"), true)
	return c
}

func (te *testEnv) getCluster(t *testing.T, ns, name string) *aaav1.AAACluster {
	t.Helper()
	c := &aaav1.AAACluster{}
	if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		t.Fatalf("get AAACluster: %v", err)
	}
	return c
}

// updateCluster applies mutate to the latest AAACluster, retrying on conflicts.
func (te *testEnv) updateCluster(t *testing.T, ns, name string, mutate func(*aaav1.AAACluster)) {
	t.Helper()
	eventually(t, wait, "update AAACluster", func() error {
		c := &aaav1.AAACluster{}
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return err
		}
		mutate(c)
		return te.c.Update(bg, c)
	})
}

// condition waits for a condition of the AAACluster to have status and reason ("" = any).
func (te *testEnv) waitCondition(t *testing.T, ns, name, typ string, status metav1.ConditionStatus, reason string) *aaav1.AAACluster {
	t.Helper()
	var c *aaav1.AAACluster
	eventually(t, wait, fmt.Sprintf("condition %s=%s (%s)", typ, status, reason), func() error {
		c = &aaav1.AAACluster{}
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, typ)
		if cond == nil {
			return fmt.Errorf("no condition %s yet; conditions: %v", typ, c.Status.Conditions)
		}
		if cond.Status != status || (reason != "" && cond.Reason != reason) {
			return fmt.Errorf("%s is %s/%s (%s)", typ, cond.Status, cond.Reason, cond.Message)
		}
		if cond.ObservedGeneration != c.Generation {
			return fmt.Errorf("%s observedGeneration %d, generation %d", typ, cond.ObservedGeneration, c.Generation)
		}
		return nil
	})
	return c
}

func (te *testEnv) k8ssandra(ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(K8ssandraClusterGVK)
	err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: name}, u)
	return u, err
}

// k8ssandraDCs returns name -> size of the K8ssandraCluster's datacenters.
func k8ssandraDCs(u *unstructured.Unstructured) map[string]int64 {
	out := map[string]int64{}
	list, _, _ := unstructured.NestedSlice(u.Object, "spec", "cassandra", "datacenters")
	for _, e := range list {
		m := e.(map[string]any)
		name, _, _ := unstructured.NestedString(m, "metadata", "name")
		size, _, _ := unstructured.NestedInt64(m, "size")
		out[name] = size
	}
	return out
}

// markCassandra plays k8ssandra-operator: CassandraInitialized and the ready datacenters.
func (te *testEnv) markCassandra(t *testing.T, ns, name string, readyDCs ...string) {
	t.Helper()
	eventually(t, wait, "mark K8ssandraCluster ready", func() error {
		u, err := te.k8ssandra(ns, name)
		if err != nil {
			return err
		}
		dcs := map[string]any{}
		for _, dc := range readyDCs {
			dcs[dc] = map[string]any{"cassandra": map[string]any{
				"cassandraOperatorProgress": "Ready",
				"conditions": []any{map[string]any{
					"type": "Ready", "status": "True", "reason": "", "message": "",
					"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
				}},
			}}
		}
		u.Object["status"] = map[string]any{
			"conditions": []any{map[string]any{
				"type": "CassandraInitialized", "status": "True", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
			}},
			"datacenters": dcs,
		}
		return te.c.Status().Update(bg, u)
	})
}

// migrationJobs lists the migration Jobs of a cluster.
func (te *testEnv) migrationJobs(ns, cluster string) ([]batchv1.Job, error) {
	list := &batchv1.JobList{}
	err := te.c.List(bg, list, client.InNamespace(ns), client.MatchingLabels{LabelCluster: cluster, LabelComponent: componentMigration})
	return list.Items, err
}

// waitMigrationJob waits for the one migration Job with this replication map.
func (te *testEnv) waitMigrationJob(t *testing.T, ns, cluster, replication string) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	eventually(t, wait, "migration Job with replication "+replication, func() error {
		jobs, err := te.migrationJobs(ns, cluster)
		if err != nil {
			return err
		}
		var seen []string
		for i := range jobs {
			args := jobs[i].Spec.Template.Spec.Containers[0].Args
			idx := slices.Index(args, "--replication")
			if idx >= 0 && args[idx+1] == replication {
				job = &jobs[i]
				return nil
			}
			seen = append(seen, fmt.Sprint(args))
		}
		return fmt.Errorf("jobs: %v", seen)
	})
	return job
}

// finishJob plays the Job controller: the Job succeeded (or failed: BackoffLimitExceeded).
func (te *testEnv) finishJob(t *testing.T, job *batchv1.Job, succeed bool) {
	t.Helper()
	te.endJob(t, job, succeed, batchv1.JobReasonBackoffLimitExceeded)
}

// endJob plays the Job controller: the Job succeeded, or failed with reason.
func (te *testEnv) endJob(t *testing.T, job *batchv1.Job, succeed bool, reason string) {
	t.Helper()
	eventually(t, wait, "finish Job "+job.Name, func() error {
		j := &batchv1.Job{}
		if err := te.c.Get(bg, client.ObjectKeyFromObject(job), j); err != nil {
			return err
		}
		now := metav1.Now()
		j.Status.StartTime = &now
		if succeed {
			j.Status.Succeeded = 1
			j.Status.CompletionTime = &now
			j.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
			}
		} else {
			j.Status.Failed = 5
			j.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: reason, Message: "Job failed: " + reason, LastTransitionTime: now, LastProbeTime: now},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, Message: "Job failed: " + reason, LastTransitionTime: now, LastProbeTime: now},
			}
		}
		return te.c.Status().Update(bg, j)
	})
}

// markDeploymentsAvailable plays the Deployment controller for every Deployment in ns.
func (te *testEnv) markDeploymentsAvailable(t *testing.T, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		eventually(t, wait, "mark Deployment "+name+" available", func() error {
			d := &appsv1.Deployment{}
			if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
				return err
			}
			n := ptr.Deref(d.Spec.Replicas, 1)
			d.Status = appsv1.DeploymentStatus{
				ObservedGeneration: d.Generation,
				Replicas:           n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
				Conditions: []appsv1.DeploymentCondition{{
					Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
					LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(),
				}},
			}
			return te.c.Status().Update(bg, d)
		})
	}
}

// exists tells whether obj (with its name and namespace set) is present.
func (te *testEnv) exists(obj client.Object) (bool, error) {
	err := te.c.Get(bg, client.ObjectKeyFromObject(obj), obj)
	if err == nil {
		return true, nil
	}
	if client.IgnoreNotFound(err) == nil {
		return false, nil
	}
	return false, err
}

func objKey(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
