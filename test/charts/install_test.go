package charts

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestHelmInstall installs both charts for real with helm on the envtest API server (helm's
// own install path: ordering, ownership, NOTES), checks what it created and uninstalls them.
// The CRD is envtest's here (crds.enabled=false): TestCRDToggles covers the CRD template.
func TestHelmInstall(t *testing.T) {
	c := apiClient(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, apiServer.env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"helm-operator", "helm-aaa", "monitoring"} {
		ensureNamespace(t, c, ns)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := helm(t, append(args, "--kubeconfig", kubeconfig)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	out := run("install", "openaaa-operator", "charts/openaaa-operator", "-n", "helm-operator",
		"-f", "charts/openaaa-operator/ci/full-values.yaml", "--set", "crds.enabled=false")
	for _, want := range []string{"STATUS: deployed", "NOTES:", "kubectl -n helm-operator get deploy,pods", "install the AAACluster CRD yourself"} {
		if !strings.Contains(out, want) {
			t.Errorf("helm install openaaa-operator: output lacks %q:\n%s", want, out)
		}
	}
	out = run("install", "radius", "charts/aaacluster", "-n", "helm-aaa", "-f", "charts/aaacluster/ci/full-values.yaml")
	if !strings.Contains(out, "STATUS: deployed") || !strings.Contains(out, "kubectl -n helm-aaa get aaacluster radius -w") {
		t.Errorf("helm install radius: unexpected output:\n%s", out)
	}

	ctx := context.Background()
	get := func(gvk schema.GroupVersionKind, ns, name string) {
		t.Helper()
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			t.Errorf("after helm install: %s %s/%s: %v", gvk.Kind, ns, name, err)
		}
	}
	get(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "helm-operator", "openaaa-operator")
	get(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}, "helm-operator", "openaaa-operator")
	get(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "monitoring", "openaaa-operator-dashboard-policing")
	get(schema.GroupVersionKind{Group: "aaa.openaaa.io", Version: "v1alpha1", Kind: "AAACluster"}, "helm-aaa", "radius")
	get(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, "helm-aaa", "radius-nas-clients")

	// an upgrade with the same values changes nothing in the AAACluster (no drift)
	gvk := schema.GroupVersionKind{Group: "aaa.openaaa.io", Version: "v1alpha1", Kind: "AAACluster"}
	before := &unstructured.Unstructured{}
	before.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "helm-aaa", Name: "radius"}, before); err != nil {
		t.Fatal(err)
	}
	run("upgrade", "radius", "charts/aaacluster", "-n", "helm-aaa", "-f", "charts/aaacluster/ci/full-values.yaml")
	after := before.DeepCopy()
	if err := c.Get(ctx, client.ObjectKey{Namespace: "helm-aaa", Name: "radius"}, after); err != nil {
		t.Fatal(err)
	}
	if before.GetGeneration() != after.GetGeneration() {
		t.Errorf("helm upgrade with the same values changed the AAACluster: generation %d -> %d", before.GetGeneration(), after.GetGeneration())
	}

	// Default values install too (the CRD requires spec.subscribers: the chart names a
	// ConfigMap), and the NOTES say which ConfigMap to create.
	out = run("install", "plain", "charts/aaacluster", "-n", "helm-aaa")
	if !strings.Contains(out, "STATUS: deployed") || !strings.Contains(out, "helm-aaa/plain-subscribers") {
		t.Errorf("helm install plain (default values): output lacks the deployment or the subscribers ConfigMap:\n%s", out)
	}

	run("uninstall", "plain", "-n", "helm-aaa")
	run("uninstall", "radius", "-n", "helm-aaa")
	run("uninstall", "openaaa-operator", "-n", "helm-operator")
}
