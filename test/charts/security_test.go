package charts

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openaaa/openaaa/internal/podsecurity"
)

// Every pod the charts render keeps the pod security of docs/security.md, with default and
// full values.
func TestRenderedPodsAreLockedDown(t *testing.T) {
	pods := 0
	for _, r := range renders {
		for _, o := range objects(t, r.template(t)) {
			path := map[string][]string{
				"Deployment": {"spec", "template", "spec"}, "StatefulSet": {"spec", "template", "spec"},
				"DaemonSet": {"spec", "template", "spec"}, "Job": {"spec", "template", "spec"},
				"CronJob": {"spec", "jobTemplate", "spec", "template", "spec"}, "Pod": {"spec"},
			}[o.GetKind()]
			if path == nil {
				continue
			}
			raw, _, _ := unstructured.NestedMap(o.Object, path...)
			var spec corev1.PodSpec
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
				t.Fatalf("%s: %s %s: %v", r.name, o.GetKind(), o.GetName(), err)
			}
			pods++
			for _, problem := range podsecurity.Check(spec) {
				t.Errorf("%s: %s %s: %s", r.name, o.GetKind(), o.GetName(), problem)
			}
		}
	}
	if pods == 0 {
		t.Fatal("no pod template rendered: the test checks nothing")
	}
}

// The operator chart lets in only metrics scrapes from the monitoring namespaces and the
// kubelet's probes; the aaacluster chart hands spec.networkPolicy to the operator.
func TestNetworkPolicies(t *testing.T) {
	op := renders[0]
	np := find(objects(t, op.template(t)), "NetworkPolicy", "")
	if np == nil {
		t.Fatal("openaaa-operator default values: no NetworkPolicy")
	}
	sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
	if sel["app.kubernetes.io/name"] != "openaaa-operator" {
		t.Errorf("the operator NetworkPolicy selects %v", sel)
	}
	rules, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
	open := map[string]bool{}
	for _, r := range rules {
		rule := r.(map[string]any)
		ports, _, _ := unstructured.NestedSlice(rule, "ports")
		from, _, _ := unstructured.NestedSlice(rule, "from")
		for _, p := range ports {
			port := fmt.Sprint(p.(map[string]any)["port"])
			open[port] = len(from) == 0
			if port == "8080" {
				ns, _, _ := unstructured.NestedStringMap(from[0].(map[string]any), "namespaceSelector", "matchLabels")
				if ns["kubernetes.io/metadata.name"] != "monitoring" {
					t.Errorf("metrics port open to namespaces %v, want monitoring", ns)
				}
			}
		}
	}
	if wide, ok := open["8080"]; !ok || wide {
		t.Errorf("metrics port 8080: in the policy %v, open to all %v; want restricted", ok, wide)
	}
	if len(open) != 2 {
		t.Errorf("ports let in %v, want only metrics and probes", open)
	}
	if find(objects(t, op.template(t, "--set", "networkPolicy.enabled=false")), "NetworkPolicy", "") != nil {
		t.Error("networkPolicy.enabled=false still renders the NetworkPolicy")
	}

	c := find(objects(t, renders[3].template(t)), "AAACluster", "radius")
	got, _, _ := unstructured.NestedStringMap(c.Object, "spec", "networkPolicy", "monitoringNamespaceSelector", "matchLabels")
	if got["kubernetes.io/metadata.name"] != "observability" {
		t.Errorf("aaacluster full values: spec.networkPolicy.monitoringNamespaceSelector %v", got)
	}
	if _, err := helm(t, "template", "x", "charts/aaacluster", "--set", "datacenters[0].name=dc1", "--set", "networkPolicy.enabld=false"); err == nil {
		t.Error("a misspelt networkPolicy value is accepted")
	}
}
