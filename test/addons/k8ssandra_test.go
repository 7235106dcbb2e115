package addons

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testK8ssandraCluster is the smallest K8ssandraCluster the single-node cluster runs: one DC of
// one node, soft anti-affinity (cass-operator's webhook then requires cpu and memory requests
// AND limits: "attempted to use multiple nodes per worker without cpu and memory requests and
// limits", seen on the cluster), num_tokens 16 (no per-node-config init container), the static
// volumes' StorageClass; no server image: cass-operator's ImageConfig names ours.
const testK8ssandraCluster = `apiVersion: k8ssandra.io/v1alpha1
kind: K8ssandraCluster
metadata:
  name: test
  namespace: %s
spec:
  cassandra:
    serverVersion: "5.0.9"
    softPodAntiAffinity: true
    resources:
      requests: {cpu: 100m, memory: 1Gi}
      limits: {cpu: "1", memory: 1Gi}
    config:
      cassandraYaml:
        num_tokens: 16
    storageConfig:
      cassandraDataVolumeClaimSpec:
        storageClassName: %s
        accessModes: [ReadWriteOnce]
        resources:
          requests: {storage: 5Gi}
    datacenters:
    - metadata:
        name: dc1
      size: 1
`

var (
	gvkK8ssandraCluster = schema.GroupVersionKind{Group: "k8ssandra.io", Version: "v1alpha1", Kind: "K8ssandraCluster"}
	gvkCassandraDC      = schema.GroupVersionKind{Group: "cassandra.datastax.com", Version: "v1beta1", Kind: "CassandraDatacenter"}
)

// TestK8ssandraOnCluster installs cass-operator and k8ssandra-operator on the running cluster
// named by OPENAAA_ADDONS_KUBECONFIG (as TestInstallOnCluster; the install imports the images
// itself) and checks the chain our operator relies on: a K8ssandraCluster is accepted by
// k8ssandra-operator's webhook and turned into a CassandraDatacenter, and cass-operator turns
// that into a StatefulSet whose every container and init container runs one of our Cassandra
// images (its ImageConfig). It does not wait for Cassandra itself.
func TestK8ssandraOnCluster(t *testing.T) {
	kcfg := os.Getenv("OPENAAA_ADDONS_KUBECONFIG")
	if kcfg == "" {
		t.Skip("OPENAAA_ADDONS_KUBECONFIG not set")
	}
	env, err := Env()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	InstallK8ssandra(t, ctx, kcfg)
	t.Logf("cass-operator and k8ssandra-operator installed, webhooks answering, in %s", time.Since(start).Round(time.Second))

	c := kubeClient(t, kcfg)
	const ns = "k8ssandra-test"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	kc := &unstructured.Unstructured{}
	if err := utilyaml.Unmarshal([]byte(fmt.Sprintf(testK8ssandraCluster, ns, K8ssandraStorageClass)), &kc.Object); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, kc); err != nil {
		t.Fatalf("K8ssandraCluster rejected: %v", err)
	}
	t.Cleanup(func() { deleteK8ssandraCluster(t, c, ns, kc.GetName()) })

	dc := &unstructured.Unstructured{}
	dc.SetGroupVersionKind(gvkCassandraDC)
	poll(t, ctx, "k8ssandra-operator to create CassandraDatacenter dc1", func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dc1"}, dc) == nil
	})
	if v, _, _ := unstructured.NestedString(dc.Object, "spec", "serverVersion"); v != "5.0.9" {
		t.Errorf("CassandraDatacenter serverVersion %q, want 5.0.9", v)
	}
	sts := &appsv1.StatefulSet{}
	name := "test-dc1-default-sts" // <cluster>-<dc>-<rack>-sts
	poll(t, ctx, "cass-operator to create StatefulSet "+name, func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sts) == nil
	})
	reg := "ghcr.io/openaaa/"
	helper := env["CASSANDRA_HELPER_TAG"]
	want := map[string]string{
		"server-config-init-base": reg + "cassandra-mgmt:5.0.9",
		"server-config-init":      reg + "cassandra-config:" + helper,
		"cassandra":               reg + "cassandra-mgmt:5.0.9",
		"server-system-logger":    reg + "cassandra-logger:" + helper,
	}
	spec := sts.Spec.Template.Spec
	seen := map[string]bool{}
	for _, ctr := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		seen[ctr.Name] = true
		w, ok := want[ctr.Name]
		switch {
		case !ok:
			t.Errorf("container %s (%s): not one the test knows", ctr.Name, ctr.Image)
		case ctr.Image != w:
			t.Errorf("container %s runs %s, want %s", ctr.Name, ctr.Image, w)
		}
		if !strings.HasPrefix(ctr.Image, reg) || ctr.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("container %s: image %s pull %s, want ours, IfNotPresent", ctr.Name, ctr.Image, ctr.ImagePullPolicy)
		}
	}
	for n := range want {
		if !seen[n] {
			t.Errorf("no container %s in the StatefulSet", n)
		}
	}
	var claims []string
	for _, pvc := range sts.Spec.VolumeClaimTemplates {
		if sc := pvc.Spec.StorageClassName; sc == nil || *sc != K8ssandraStorageClass {
			t.Errorf("claim template %s: StorageClass %v, want %s", pvc.Name, sc, K8ssandraStorageClass)
		}
		claims = append(claims, pvc.Name)
	}
	t.Logf("StatefulSet %s: %d init containers, %d containers, claims %v, %s after the install", name,
		len(spec.InitContainers), len(spec.Containers), claims, time.Since(start).Round(time.Second))
}

func kubeClient(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// poll checks ok every second until it holds; fails naming what when ctx ends.
func poll(t *testing.T, ctx context.Context, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(time.Second):
		}
	}
}

// deleteK8ssandraCluster deletes the test's K8ssandraCluster and its namespace, waiting (bounded)
// for the operators' finalizers, so that the static volume it used is Released for the next
// install-k8ssandra to remake.
func deleteK8ssandraCluster(t *testing.T, c client.Client, ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kc := &unstructured.Unstructured{}
	kc.SetGroupVersionKind(gvkK8ssandraCluster)
	kc.SetNamespace(ns)
	kc.SetName(name)
	if err := c.Delete(ctx, kc); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting K8ssandraCluster %s: %v", name, err)
	}
	for c.Get(ctx, client.ObjectKeyFromObject(kc), kc) == nil {
		select {
		case <-ctx.Done():
			t.Errorf("K8ssandraCluster %s still there after 3 min", name)
			return
		case <-time.After(time.Second):
		}
	}
	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting namespace %s: %v", ns, err)
	}
}
