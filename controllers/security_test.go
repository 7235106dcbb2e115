package controllers

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	"github.com/openaaa/openaaa/internal/podsecurity"
)

// The NetworkPolicy opens RADIUS to anyone and the admin port only to the peers it names;
// a configured monitoring selector replaces the default one.
func TestNetworkPolicyPeers(t *testing.T) {
	c, spec := sampleForBuilders(t)
	spec.NetworkPolicy.MonitoringNamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "observability"}}
	np := buildNetworkPolicy(c, spec, "dc1", "")
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("policy types %v: want Ingress only", np.Spec.PolicyTypes)
	}
	if len(np.Spec.Ingress) != 2 {
		t.Fatalf("ingress rules %d, want 2", len(np.Spec.Ingress))
	}
	radius, admin := np.Spec.Ingress[0], np.Spec.Ingress[1]
	if len(radius.From) != 0 {
		t.Errorf("RADIUS is limited to %v: NASes are outside the cluster", radius.From)
	}
	for _, p := range radius.Ports {
		if p.Port.IntVal == AdminPort {
			t.Errorf("the admin port is open to anyone")
		}
	}
	if len(admin.Ports) != 1 || admin.Ports[0].Port.IntVal != AdminPort || *admin.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("admin rule ports %v", admin.Ports)
	}
	var monitoring, operator bool
	for _, peer := range admin.From {
		if peer.NamespaceSelector == nil && peer.PodSelector == nil {
			t.Errorf("an admin peer selects everything: %+v", peer)
		}
		if ns := peer.NamespaceSelector; ns != nil {
			if ns.MatchLabels["team"] == "observability" {
				monitoring = true
			}
			if ns.MatchLabels[corev1.LabelMetadataName] == defaultMonitoringNamespace {
				t.Errorf("the default monitoring namespace is still let in beside the configured selector")
			}
			if peer.PodSelector != nil {
				operator = true
			}
		}
	}
	if !monitoring || operator {
		t.Errorf("admin peers %+v: want the configured monitoring namespaces and, without its namespace, no operator rule", admin.From)
	}
}

// Every pod the operator builds (policing per DC, in every configuration of the samples; the
// schema migration Job; the aaa-loadgen Job) keeps the pod security of docs/security.md.
func TestBuiltPodsAreLockedDown(t *testing.T) {
	c, spec := sampleForBuilders(t)
	pods := map[string]corev1.PodSpec{}
	for _, dc := range spec.Datacenters {
		pods["Deployment "+dc.Name] = buildDeployment(c, spec, dc, "h").Spec.Template.Spec
	}
	pods["migration Job"] = buildMigrationJob(c, spec, "dc1:3").Spec.Template.Spec
	ext := minimalCluster("prod", "edge")
	ext.Spec.Subscribers = &aaav1.SubscribersSpec{File: &aaav1.SubscriberFileSpec{Secret: &aaav1.SecretKeyRef{Name: "subs"}}}
	ext.Spec.AccountingProxy = &aaav1.AccountingProxySpec{Servers: []aaav1.AccountingServer{{Name: "b", Address: "b:1813", Secret: aaav1.SecretKeyRef{Name: "b"}}}}
	extSpec := withDefaults(ext.Spec, Options{})
	pods["Deployment (external Cassandra, proxy)"] = buildDeployment(ext, extSpec, extSpec.Datacenters[0], "h").Spec.Template.Spec
	lt := testLoadTest()
	ltSpec := loadTestDefaults(lt.Spec, Options{Version: "v1"})
	job, err := buildLoadgenJob(lt, ltSpec, ext, extSpec, []string{"dc1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pods["aaa-loadgen Job"] = job.Spec.Template.Spec
	for name, p := range pods {
		for _, problem := range podsecurity.Check(p) {
			t.Errorf("%s: %s", name, problem)
		}
	}
	// The check itself catches a pod that falls short.
	mig := pods["migration Job"]
	weak := mig.DeepCopy()
	weak.Containers[0].SecurityContext.ReadOnlyRootFilesystem = ptr.To(false)
	if len(podsecurity.Check(*weak)) == 0 {
		t.Error("podsecurity.Check accepts a writable root filesystem")
	}
}
