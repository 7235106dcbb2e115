package controllers

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

// golden compares got with testdata/golden/name (rewritten with -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./controllers -run Golden -update)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from the golden file (go test ./controllers -run Golden -update to accept):\n--- got\n%s", name, got)
	}
}

func toYAML(t *testing.T, v any) []byte {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sampleForBuilders is the 3-DC sample in namespace prod, with every default applied.
func sampleForBuilders(t *testing.T) (*aaav1.AAACluster, aaav1.AAAClusterSpec) {
	c := loadSample(t)
	c.Namespace = "prod"
	c.UID = "00000000-0000-0000-0000-000000000001"
	return c, withDefaults(c.Spec, Options{Version: "v1.2.3"})
}

func TestGoldenBuilders(t *testing.T) {
	c, spec := sampleForBuilders(t)
	dc1, dc2 := spec.Datacenters[0], spec.Datacenters[1]
	golden(t, "policing-dc1.yaml", []byte(renderPolicingConfig(c, spec, "dc1")))
	golden(t, "deployment-dc1.yaml", toYAML(t, buildDeployment(c, spec, dc1, "0123456789abcdef")))
	golden(t, "deployment-dc2.yaml", toYAML(t, buildDeployment(c, spec, dc2, "0123456789abcdef")))
	golden(t, "services-dc1.yaml", toYAML(t, buildServices(c, spec, dc1)))
	golden(t, "pdb-dc1.yaml", toYAML(t, buildPDB(c, dc1)))
	golden(t, "networkpolicy-dc1.yaml", toYAML(t, buildNetworkPolicy(c, spec, dc1.Name, "openaaa-system")))
	golden(t, "hpa-dc1.yaml", toYAML(t, buildHPA(c, spec, dc1)))
	persistent := *spec.DeepCopy()
	persistent.Spool.Persistence = &aaav1.SpoolPersistence{StorageClassName: ptr.To("fast-local")}
	persistent = withDefaults(persistent, Options{Version: "v1.2.3"})
	golden(t, "statefulset-dc1.yaml", toYAML(t, buildWorkload(c, persistent, persistent.Datacenters[0], "0123456789abcdef")))
	golden(t, "k8ssandracluster.yaml", toYAML(t, buildK8ssandraCluster(c, spec, nil).Object))
	golden(t, "migration-job.yaml", toYAML(t, buildMigrationJob(c, spec, "dc1:3,dc2:3,dc3:3")))
	golden(t, "certificate.yaml", toYAML(t, buildCertificate(c, spec).Object))
	golden(t, "servicemonitor.yaml", toYAML(t, buildServiceMonitor(c, spec).Object))
	golden(t, "prometheusrule.yaml", toYAML(t, buildPrometheusRule(c, spec).Object))
}

// TestGoldenExternalConfig: the configuration with an external Cassandra, file subscribers, an
// accounting proxy and a policy.
func TestGoldenExternalConfig(t *testing.T) {
	c := minimalCluster("prod", "edge")
	c.Spec.Cassandra.External = &aaav1.ExternalCassandra{ContactPoints: []string{"10.1.0.1:9042", "10.2.0.1"}, CredentialsSecret: corev1.LocalObjectReference{Name: "cass"}}
	c.Spec.Cassandra.RowCacheSize = ptr.To[int32](250000)
	c.Spec.Subscribers = &aaav1.SubscribersSpec{File: &aaav1.SubscriberFileSpec{Secret: &aaav1.SecretKeyRef{Name: "subs"}}}
	c.Spec.AccountingProxy = &aaav1.AccountingProxySpec{Servers: []aaav1.AccountingServer{{Name: "billing", Address: "billing.example.net:1813", Secret: aaav1.SecretKeyRef{Name: "billing"}}}}
	c.Spec.Policy = &aaav1.PolicySpec{RejectMessage: "No", Lua: &aaav1.LuaPolicySpec{ConfigMap: aaav1.ConfigMapKeyRef{Name: "edge-policy"},
		Budget: &metav1.Duration{Duration: 20 * time.Millisecond}, FailMode: "open", Memoize: ptr.To(false)}}
	// The CRD now rejects false, but an object stored before the rule (kept by validation
	// ratcheting while the field is unchanged) still renders what it says.
	c.Spec.Radius.RequireMessageAuthenticator = ptr.To(false)
	spec := withDefaults(c.Spec, Options{PolicingImage: "registry.example.net:5000/aaa/policing:v2"})
	rendered := renderPolicingConfig(c, spec, "dc2")
	golden(t, "policing-external.yaml", []byte(rendered))
	if !strings.Contains(rendered, "rowCache:\n      size: 250000") {
		t.Errorf("spec.cassandra.rowCacheSize not rendered:\n%s", rendered)
	}
	if strings.Contains(renderPolicingConfig(c, withDefaults(minimalCluster("prod", "edge").Spec, Options{}), "dc1"), "rowCache") {
		t.Error("rowCache rendered without spec.cassandra.rowCacheSize: policing's default must apply")
	}
	if !strings.Contains(rendered, "requireMessageAuthenticator: false") {
		t.Errorf("spec.radius.requireMessageAuthenticator=false not rendered:\n%s", rendered)
	}
	if got := imageRef(spec); got != "registry.example.net:5000/aaa/policing:v2" {
		t.Errorf("image %s", got)
	}
	d := buildDeployment(c, spec, spec.Datacenters[0], "h")
	var names []string
	for _, v := range d.Spec.Template.Spec.Volumes {
		names = append(names, v.Name)
	}
	if got := strings.Join(names, ","); got != "config,clients,cassandra-credentials,admin-token,tmp,state,subscribers,policy,accounting-proxy" {
		t.Errorf("volumes %s", got)
	}
	if got := rollingSecrets(c, spec); strings.Join(got, ",") != "billing,cass,subs" {
		t.Errorf("rolling secrets %v", got)
	}
	// The Lua script's ConfigMap is reloaded by policing, never part of the rolling hash.
	if got := referencedObjects(c); strings.Contains(strings.Join(got, ","), "edge-policy") {
		t.Errorf("referenced %v: the policy ConfigMap must not roll pods", got)
	}
}

func TestWithDefaults(t *testing.T) {
	spec := withDefaults(aaav1.AAAClusterSpec{Datacenters: []aaav1.Datacenter{
		{Name: "small", Cassandra: aaav1.DatacenterCassandraSpec{Size: ptr.To[int32](1)}},
		{Name: "big", Cassandra: aaav1.DatacenterCassandraSpec{Size: ptr.To[int32](5)}},
		{Name: "auto", Autoscaling: &aaav1.AutoscalingSpec{MinReplicas: 2, MaxReplicas: 4}, Service: aaav1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}},
	}}, Options{Version: "dev"})
	tests := []struct {
		name      string
		got, want any
	}{
		{"rf capped by size", *spec.Datacenters[0].Cassandra.ReplicationFactor, int32(1)},
		{"rf 3 on bigger DCs", *spec.Datacenters[1].Cassandra.ReplicationFactor, int32(3)},
		{"size 3", *spec.Datacenters[2].Cassandra.Size, int32(3)},
		{"replicas 2", *spec.Datacenters[0].Replicas, int32(2)},
		{"no replicas with autoscaling", spec.Datacenters[2].Replicas == nil, true},
		{"target CPU", *spec.Datacenters[2].Autoscaling.TargetCPUUtilizationPercentage, int32(70)},
		{"LoadBalancer", spec.Datacenters[0].Service.Type, corev1.ServiceTypeLoadBalancer},
		{"Local", spec.Datacenters[0].Service.ExternalTrafficPolicy, corev1.ServiceExternalTrafficPolicyLocal},
		{"no policy on ClusterIP", spec.Datacenters[2].Service.ExternalTrafficPolicy, corev1.ServiceExternalTrafficPolicy("")},
		{"managed", managed(spec), true},
		{"server version", spec.Cassandra.Managed.ServerVersion, "5.0.9"},
		{"dev tag", spec.Image.Tag, "latest"},
		{"storage", spec.Datacenters[0].Cassandra.Storage.Size.String(), "10Gi"},
		{"message authenticator", *spec.Radius.RequireMessageAuthenticator, true},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestPolicingDownAlert: the operator's OpenAAAPolicingDown also sees a data center whose pods
// are all gone (no `up` series left to be 0), not only one whose pods fail their scrapes; a
// data center scaled to 0 on purpose does not page; `for` is the rule file's unless the spec
// sets policingDownFor, and the description says the one in force.
func TestPolicingDownAlert(t *testing.T) {
	c := &aaav1.AAACluster{ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: "aaa"}}
	spec := withDefaults(aaav1.AAAClusterSpec{
		Datacenters: []aaav1.Datacenter{
			{Name: "dc1"},
			{Name: "dc2", Autoscaling: &aaav1.AutoscalingSpec{MinReplicas: 1, MaxReplicas: 3}},
			{Name: "off", Replicas: ptr.To[int32](0)},
		},
		Monitoring: aaav1.MonitoringSpec{PrometheusRule: &aaav1.PrometheusRuleSpec{Enabled: true}},
	}, Options{Version: "dev"})
	down := func() map[string]any {
		for _, g := range clusterRuleGroups(c, spec) {
			for _, r := range g.(map[string]any)["rules"].([]any) {
				if r := r.(map[string]any); r["alert"] == policingDownAlert {
					return r
				}
			}
		}
		t.Fatal("no OpenAAAPolicingDown")
		return nil
	}
	r := down()
	expr := r["expr"].(string)
	for _, want := range []string{
		`(up{aaa_openaaa_io_datacenter!="", namespace="aaa", aaa_openaaa_io_cluster="edge"}) == 0`,
		`or absent(up{namespace="aaa", aaa_openaaa_io_cluster="edge", aaa_openaaa_io_datacenter="dc1"})`,
		`or absent(up{namespace="aaa", aaa_openaaa_io_cluster="edge", aaa_openaaa_io_datacenter="dc2"})`,
	} {
		if !strings.Contains(expr, want) {
			t.Errorf("OpenAAAPolicingDown: %s\nlacks %s", expr, want)
		}
	}
	if strings.Contains(expr, `"off"`) {
		t.Errorf("OpenAAAPolicingDown watches a data center scaled to 0: %s", expr)
	}
	if r["for"] != "3m" {
		t.Errorf("for %v; want the rule file's 3m", r["for"])
	}
	spec.Monitoring.PrometheusRule.PolicingDownFor = "30s"
	r = down()
	desc := r["annotations"].(map[string]any)["description"].(string)
	if r["for"] != "30s" || !strings.Contains(desc, "down for 30s") {
		t.Errorf("for %v, description %q; want 30s from the spec in both", r["for"], desc)
	}
}

func TestHPABehavior(t *testing.T) {
	c := &aaav1.AAACluster{ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: "aaa"}}
	dc := aaav1.Datacenter{Name: "dc1", Autoscaling: &aaav1.AutoscalingSpec{MinReplicas: 1, MaxReplicas: 3}}
	if b := buildHPA(c, aaav1.AAAClusterSpec{}, dc).Spec.Behavior; b != nil {
		t.Errorf("behavior %+v without scaleDownStabilizationSeconds; want Kubernetes' defaults", b)
	}
	dc.Autoscaling.ScaleDownStabilizationSeconds = ptr.To[int32](30)
	b := buildHPA(c, aaav1.AAAClusterSpec{}, dc).Spec.Behavior
	if b == nil || b.ScaleDown == nil || b.ScaleDown.StabilizationWindowSeconds == nil || *b.ScaleDown.StabilizationWindowSeconds != 30 || b.ScaleUp != nil {
		t.Errorf("behavior %+v; want scaleDown.stabilizationWindowSeconds 30 and nothing else", b)
	}
}

func TestSplitImage(t *testing.T) {
	for in, want := range map[string][2]string{
		"":                            {"", ""},
		"policing":                    {"policing", ""},
		"ghcr.io/openaaa/policing:v1": {"ghcr.io/openaaa/policing", "v1"},
		"host:5000/policing":          {"host:5000/policing", ""},
		"host:5000/policing:v2":       {"host:5000/policing", "v2"},
	} {
		repo, tag := splitImage(in)
		if repo != want[0] || tag != want[1] {
			t.Errorf("splitImage(%q) = %q, %q", in, repo, tag)
		}
	}
}

func TestDesiredReplication(t *testing.T) {
	spec := withDefaults(aaav1.AAAClusterSpec{Datacenters: []aaav1.Datacenter{
		{Name: "dc1"}, {Name: "dc2", Cassandra: aaav1.DatacenterCassandraSpec{Size: ptr.To[int32](2)}}, {Name: "dc3"},
	}}, Options{})
	tests := []struct {
		name           string
		ready, applied map[string]bool
		want           string
	}{
		{"all ready", map[string]bool{"dc1": true, "dc2": true, "dc3": true}, nil, "dc1:3,dc2:2,dc3:3"},
		{"a new DC waits until ready", map[string]bool{"dc1": true, "dc2": true}, map[string]bool{"dc1": true, "dc2": true}, "dc1:3,dc2:2"},
		{"a replicated DC that is down stays", map[string]bool{"dc1": true}, map[string]bool{"dc1": true, "dc2": true, "dc3": true}, "dc1:3,dc2:2,dc3:3"},
		{"a DC that left the spec leaves the map", map[string]bool{"dc1": true, "dc2": true, "dc3": true}, map[string]bool{"dc0": true}, "dc1:3,dc2:2,dc3:3"},
		{"nothing ready", nil, nil, ""},
	}
	for _, tc := range tests {
		if got := desiredReplication(spec, tc.ready, tc.applied); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := replicationDCs("dc1:3,dc2:2"); len(got) != 2 || !got["dc1"] || !got["dc2"] {
		t.Errorf("replicationDCs %v", got)
	}
	if got := replicationDCs(""); len(got) != 0 {
		t.Errorf("replicationDCs of empty %v", got)
	}
}

func TestRetainedDatacenters(t *testing.T) {
	existing := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"cassandra": map[string]any{
		"datacenters": []any{
			map[string]any{"metadata": map[string]any{"name": "dc1"}, "size": int64(3)},
			map[string]any{"metadata": map[string]any{"name": "gone"}, "size": int64(3)},
			map[string]any{"metadata": map[string]any{"name": "old"}, "size": int64(3)},
		},
	}}}}
	spec := aaav1.AAAClusterSpec{Datacenters: []aaav1.Datacenter{{Name: "dc1"}}}
	got := retainedDatacenters(existing, spec, map[string]bool{"dc1": true, "old": true})
	if len(got) != 1 || got[0].(map[string]any)["metadata"].(map[string]any)["name"] != "old" {
		t.Errorf("retained %v, want only old", got)
	}
	if retainedDatacenters(nil, spec, nil) != nil {
		t.Error("nothing to retain without a K8ssandraCluster")
	}
}

func TestK8ssandraStatus(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
		"conditions": []any{map[string]any{"type": "CassandraInitialized", "status": "True"}},
		"datacenters": map[string]any{
			"dc1": map[string]any{"cassandra": map[string]any{"cassandraOperatorProgress": "Ready"}},
			"dc2": map[string]any{"cassandra": map[string]any{"cassandraOperatorProgress": "Ready",
				"conditions": []any{map[string]any{"type": "Ready", "status": "False"}}}},
			"dc3": map[string]any{"cassandra": map[string]any{"cassandraOperatorProgress": "Updating"}},
		},
	}}}
	init, ready, progress := k8ssandraStatus(u, []aaav1.Datacenter{{Name: "dc1"}, {Name: "dc2"}, {Name: "dc3"}, {Name: "dc4"}}, nil)
	if !init || !ready["dc1"] || ready["dc2"] || ready["dc3"] || ready["dc4"] {
		t.Errorf("initialized %v, ready %v", init, ready)
	}
	// What kubectl shows while the datacenters come up, one after another.
	if want := "dc1 ready, dc2 not ready, dc3 Updating, dc4 not created yet"; progress != want {
		t.Errorf("progress %q, want %q", progress, want)
	}
	if init, _, progress := k8ssandraStatus(&unstructured.Unstructured{Object: map[string]any{}}, []aaav1.Datacenter{{Name: "dc1"}}, nil); init || progress != "dc1 not created yet" {
		t.Errorf("without status: initialized %v, progress %q", init, progress)
	}

	// Issue 31, seen on the local cluster: dc2's Cassandra pod killed and kept from coming
	// back, k8ssandra-operator's status still said Ready (cass-operator had not noticed), and
	// the AAACluster said cassandraReady for dc2. The StatefulSets' ready nodes tell.
	nodes := cassandraNodes([]appsv1.StatefulSet{
		cassSts("geo", "dc1", "default", 3, 3), cassSts("geo", "dc2", "r1", 1, 1), cassSts("geo", "dc2", "r2", 1, 0),
		cassSts("other", "dc2", "default", 1, 1), cassSts("geo", "dc3", "default", 1, 1),
	}, "geo")
	if nodes["dc1"] != [2]int32{3, 3} || nodes["dc2"] != [2]int32{1, 2} || nodes["dc3"] != [2]int32{1, 1} {
		t.Errorf("nodes (ready, desired) %v", nodes)
	}
	init, ready, progress = k8ssandraStatus(u, []aaav1.Datacenter{{Name: "dc1"}, {Name: "dc2"}, {Name: "dc3"}},
		map[string][2]int32{"dc1": {2, 3}, "dc3": {0, 1}})
	if !init || ready["dc1"] || ready["dc3"] {
		t.Errorf("with nodes down: ready %v", ready)
	}
	if want := "dc1 2/3 Cassandra nodes ready, dc2 not ready, dc3 Updating"; progress != want {
		t.Errorf("progress %q, want %q", progress, want)
	}

	// Issue 31, seen on the local cluster: dc2 removed from the spec, k8ssandra-operator
	// v1.26.0 stuck in its decommission (Cassandra 5 refuses to drop a data center with live
	// nodes from system_auth), and the AAACluster said nothing of it.
	u.Object["status"].(map[string]any)["datacenters"].(map[string]any)["gone"] = map[string]any{"decommissionProgress": "UpdatingReplication"}
	if _, _, progress := k8ssandraStatus(u, []aaav1.Datacenter{{Name: "dc1"}}, nil); progress != "dc1 ready, gone leaving (UpdatingReplication)" {
		t.Errorf("progress with a datacenter leaving: %q", progress)
	}
	if e := k8ssandraError(u); e != "" {
		t.Errorf("k8ssandraError without an error: %q", e)
	}
	u.Object["status"].(map[string]any)["error"] = "None"
	if e := k8ssandraError(u); e != "" {
		t.Errorf("k8ssandraError of None: %q", e)
	}
	u.Object["status"].(map[string]any)["error"] = "CALL alter keyspaces system_auth failed on all datacenter dc1 pods"
	if e := k8ssandraError(u); e != "CALL alter keyspaces system_auth failed on all datacenter dc1 pods" {
		t.Errorf("k8ssandraError: %q", e)
	}
}

func cassSts(cluster, dc, rack string, replicas, ready int32) appsv1.StatefulSet {
	return appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: cluster + "-" + dc + "-" + rack + "-sts", Labels: map[string]string{
			cassClusterLabel: cluster, cassDCLabel: dc}},
		Spec:   appsv1.StatefulSetSpec{Replicas: &replicas},
		Status: appsv1.StatefulSetStatus{ReadyReplicas: ready},
	}
}

func TestJobOutcome(t *testing.T) {
	cond := func(typ batchv1.JobConditionType, reason string) *batchv1.Job {
		return &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: "m"}}}}
	}
	if done, failed, _, _ := jobOutcome(&batchv1.Job{}); done || failed {
		t.Error("running job done")
	}
	if done, failed, _, _ := jobOutcome(cond(batchv1.JobComplete, "")); !done || failed {
		t.Error("complete job not done")
	}
	if done, failed, reason, msg := jobOutcome(cond(batchv1.JobFailed, "DeadlineExceeded")); !done || !failed || reason != "DeadlineExceeded" || msg != "m" {
		t.Error("failed job")
	}
}

func TestDeploymentReady(t *testing.T) {
	base := func() *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, UpdatedReplicas: 2, AvailableReplicas: 2,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}},
		}
	}
	tests := []struct {
		name   string
		mutate func(*appsv1.Deployment)
		want   bool
	}{
		{"available", func(*appsv1.Deployment) {}, true},
		{"old generation", func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 1 }, false},
		{"rolling", func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 1 }, false},
		{"unavailable", func(d *appsv1.Deployment) { d.Status.Conditions[0].Status = corev1.ConditionFalse }, false},
		{"too few", func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 1 }, false},
	}
	for _, tc := range tests {
		d := base()
		tc.mutate(d)
		if got := deploymentReady(d); got != tc.want {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
	if deploymentReady(nil) {
		t.Error("nil ready")
	}
}

func TestServiceEndpoint(t *testing.T) {
	lb := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.1"}}
	if got := serviceEndpoint(lb); got != "" {
		t.Errorf("pending load balancer: %q", got)
	}
	lb.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "aaa.example.net"}}
	if got := serviceEndpoint(lb); got != "aaa.example.net" {
		t.Errorf("hostname: %q", got)
	}
	// Issue 32: a NodePort Service's cluster IP is no use to a NAS outside the cluster; its
	// node ports on any node's address are.
	np := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.0.0.3", Ports: []corev1.ServicePort{
		{Name: portAuth, Port: 1812, NodePort: 31456}, {Name: portAcct, Port: 1813, NodePort: 30999}}}}
	if got := serviceEndpoint(np); got != "<node address>:31456 (auth), <node address>:30999 (acct)" {
		t.Errorf("NodePort endpoint %q", got)
	}
	if got := serviceEndpoint(&corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.0.0.2"}}); got != "10.0.0.2" {
		t.Errorf("cluster IP: %q", got)
	}
}

// TestPodSecurity: the policing and migration pods run non-root, read-only, with no
// capabilities and the RuntimeDefault seccomp profile, and mount no service account token.
func TestPodSecurity(t *testing.T) {
	c, spec := sampleForBuilders(t)
	for _, pod := range []corev1.PodSpec{
		buildDeployment(c, spec, spec.Datacenters[0], "h").Spec.Template.Spec,
		buildMigrationJob(c, spec, "dc1:3").Spec.Template.Spec,
	} {
		if !*pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || *pod.AutomountServiceAccountToken {
			t.Errorf("pod security context %+v", pod.SecurityContext)
		}
		for _, ct := range pod.Containers {
			sc := ct.SecurityContext
			if !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 {
				t.Errorf("container %s security context %+v", ct.Name, sc)
			}
			for _, e := range ct.Env {
				if e.Value != "" && strings.Contains(strings.ToLower(e.Name), "pass") {
					t.Errorf("secret in env %s", e.Name)
				}
			}
		}
	}
}

func TestConfigHash(t *testing.T) {
	c, spec := sampleForBuilders(t)
	cm := rollingConfig(c, spec, "dc1")
	a := configHash(cm, map[string]map[string][]byte{"aaa-superuser": {"password": []byte("1")}}, nil)
	b := configHash(cm, map[string]map[string][]byte{"aaa-superuser": {"password": []byte("2")}}, nil)
	absent := configHash(cm, map[string]map[string][]byte{"aaa-superuser": nil}, nil)
	if a == b || a == absent {
		t.Error("a Secret change does not change the hash")
	}
	if a != configHash(rollingConfig(c, spec, "dc1"), map[string]map[string][]byte{"aaa-superuser": {"password": []byte("1")}}, nil) {
		t.Error("hash not stable")
	}
	// A new data center is a remote DC of dc1's pods, but does not roll them.
	more := *spec.DeepCopy()
	more.Datacenters = append(more.Datacenters, aaav1.Datacenter{Name: "dc9"})
	if !strings.Contains(renderPolicingConfig(c, more, "dc1"), "name: dc9") {
		t.Error("dc1's policing.yaml does not list the new data center dc9 as a remote DC")
	}
	if a != configHash(rollingConfig(c, more, "dc1"), map[string]map[string][]byte{"aaa-superuser": {"password": []byte("1")}}, nil) {
		t.Error("adding a data center changes dc1's hash: its pods would roll")
	}
	if got := rollingSecrets(c, spec); strings.Join(got, ",") != "aaa-ldap-bind,aaa-superuser" {
		t.Errorf("rolling secrets %v (the clients Secret is reloaded, not rolled)", got)
	}
	if got := referencedObjects(c); strings.Join(got, ",") != "Secret/aaa-ldap-bind,Secret/aaa-radius-clients,Secret/aaa-superuser" {
		t.Errorf("referenced %v", got)
	}
}

// TestAddedDatacenterJoinsNotDegraded: a data center added to a Ready cluster is joining until
// its policing is first available — progress, not degradation (no Degraded, no Warning reason);
// once it has joined, losing it is Degraded (issue 31: adding dc2 said Degraded=True
// PartiallyAvailable with a Warning event for minutes).
func TestAddedDatacenterJoinsNotDegraded(t *testing.T) {
	c, spec := sampleForBuilders(t)
	c.Generation = 2
	avail := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}, Status: appsv1.DeploymentStatus{
		UpdatedReplicas: 2, AvailableReplicas: 2, ReadyReplicas: 2,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}}}
	done := map[string]bool{stepConfig: true, stepCertificates: true, stepMonitoring: true, stepCassandra: true, stepSchema: true, stepDatacenters: true}
	// dc1 and dc2 served; dc3 was just added: its Cassandra is not ready, its policing not
	// deployed yet.
	prev := aaav1.AAAClusterStatus{Datacenters: []aaav1.DatacenterStatus{{Name: "dc1", Ready: true, Joined: true}, {Name: "dc2", Ready: true, Joined: true}}}
	st := &state{cluster: c, spec: spec, status: prev,
		cassandra: cassandraState{initialized: true, reason: ReasonDatacenterNotReady, message: "Cassandra datacenters not ready: dc3 (dc1 ready, dc2 ready, dc3 0/1 Cassandra nodes ready)",
			dcReady: map[string]bool{"dc1": true, "dc2": true}},
		schema: schemaState{ready: true, reason: ReasonReady},
		dcs: map[string]*dcObserved{
			"dc1": {complete: true, deployed: true, workload: observeWorkload(avail)},
			"dc2": {complete: true, deployed: true, workload: observeWorkload(avail)},
			"dc3": {complete: true},
		},
		completed: done,
	}
	cond := func(s aaav1.AAAClusterStatus, typ string) metav1.Condition {
		t.Helper()
		c := meta.FindStatusCondition(s.Conditions, typ)
		if c == nil {
			t.Fatalf("no %s condition", typ)
		}
		return *c
	}
	s := computeStatus(st, nil)
	if d := cond(s, aaav1.ConditionDegraded); d.Status != metav1.ConditionFalse {
		t.Errorf("dc3 joining: Degraded %s/%s %q, want False", d.Status, d.Reason, d.Message)
	}
	for _, typ := range []string{aaav1.ConditionCassandraReady, aaav1.ConditionPolicingReady, aaav1.ConditionReady} {
		if c := cond(s, typ); c.Status != metav1.ConditionFalse || c.Reason != ReasonDatacenterJoining || !strings.Contains(c.Message, "dc3") || warningReasons[c.Reason] {
			t.Errorf("dc3 joining: %s %s/%s %q, want False/%s naming dc3, not a Warning", typ, c.Status, c.Reason, c.Message, ReasonDatacenterJoining)
		}
	}
	if d := findDC(s.Datacenters, "dc3"); d == nil || d.Joined || d.Ready {
		t.Errorf("dc3 joining: status %+v", d)
	}
	// dc3 serves: it has joined, and the cluster is Ready.
	st.status = s
	st.cassandra = cassandraState{initialized: true, ready: true, reason: ReasonReady, dcReady: map[string]bool{"dc1": true, "dc2": true, "dc3": true}}
	st.dcs["dc3"] = &dcObserved{complete: true, deployed: true, workload: observeWorkload(avail)}
	s = computeStatus(st, nil)
	if r := cond(s, aaav1.ConditionReady); r.Status != metav1.ConditionTrue {
		t.Errorf("dc3 serving: Ready %s/%s %q", r.Status, r.Reason, r.Message)
	}
	if d := findDC(s.Datacenters, "dc3"); d == nil || !d.Joined {
		t.Errorf("dc3 serving: status %+v, want joined", d)
	}
	// dc3 lost after it joined: Degraded, naming its policing and its Cassandra.
	st.status = s
	st.cassandra = cassandraState{initialized: true, reason: ReasonDatacenterNotReady, message: "Cassandra datacenters not ready: dc3 (dc1 ready, dc2 ready, dc3 0/1 Cassandra nodes ready)",
		dcReady: map[string]bool{"dc1": true, "dc2": true}}
	st.dcs["dc3"] = &dcObserved{complete: true, deployed: true, workload: observeWorkload(&appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}})}
	s = computeStatus(st, nil)
	if d := cond(s, aaav1.ConditionDegraded); d.Status != metav1.ConditionTrue || d.Reason != ReasonPartiallyAvailable || !strings.Contains(d.Message, "dc3 0/1 Cassandra nodes ready") {
		t.Errorf("dc3 lost: Degraded %s/%s %q", d.Status, d.Reason, d.Message)
	}
	if c := cond(s, aaav1.ConditionCassandraReady); c.Reason != ReasonDatacenterNotReady {
		t.Errorf("dc3 lost: CassandraReady %s/%s", c.Status, c.Reason)
	}
	if d := findDC(s.Datacenters, "dc3"); d == nil || !d.Joined {
		t.Errorf("dc3 lost: status %+v, want still joined", d)
	}
	// The first bring-up: policing deployed in every data center, none available yet — it
	// is starting, not unavailable (no Warning).
	first := &state{cluster: c, spec: spec,
		cassandra: cassandraState{initialized: true, ready: true, reason: ReasonReady, dcReady: map[string]bool{"dc1": true, "dc2": true, "dc3": true}},
		schema:    schemaState{ready: true, reason: ReasonReady},
		dcs:       map[string]*dcObserved{},
		completed: done,
	}
	for _, dc := range []string{"dc1", "dc2", "dc3"} {
		first.dcs[dc] = &dcObserved{complete: true, deployed: true, workload: observeWorkload(&appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}})}
	}
	s = computeStatus(first, nil)
	if p := cond(s, aaav1.ConditionPolicingReady); p.Reason != ReasonDatacenterJoining || warningReasons[p.Reason] {
		t.Errorf("first bring-up: PolicingReady %s/%s %q", p.Status, p.Reason, p.Message)
	}
}

// TestComputeStatus: conditions from observations; lastTransitionTime kept when nothing
// changes; Ready follows the three readiness conditions.
func TestComputeStatus(t *testing.T) {
	c, spec := sampleForBuilders(t)
	c.Generation = 4
	avail := func() *appsv1.Deployment {
		return &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}, Status: appsv1.DeploymentStatus{
			UpdatedReplicas: 2, AvailableReplicas: 2, ReadyReplicas: 2,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}}}
	}
	// Every data center had joined (served once): dc3 not available is a loss.
	joined := aaav1.AAAClusterStatus{Datacenters: []aaav1.DatacenterStatus{{Name: "dc1", Joined: true}, {Name: "dc2", Joined: true}, {Name: "dc3", Joined: true}}}
	st := &state{cluster: c, spec: spec, status: joined,
		cassandra: cassandraState{initialized: true, ready: true, reason: ReasonReady, dcReady: map[string]bool{"dc1": true, "dc2": true, "dc3": true}},
		schema:    schemaState{ready: true, reason: ReasonReady},
		dcs: map[string]*dcObserved{
			"dc1": {complete: true, deployed: true, workload: observeWorkload(avail())},
			"dc2": {complete: true, deployed: true, workload: observeWorkload(avail())},
			"dc3": {complete: true, deployed: true, workload: observeWorkload(&appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}})},
		},
		completed: map[string]bool{stepConfig: true, stepCertificates: true, stepMonitoring: true, stepCassandra: true, stepSchema: true, stepDatacenters: true},
	}
	s := computeStatus(st, nil)
	check := func(s aaav1.AAAClusterStatus, typ string, status metav1.ConditionStatus, reason string) *metav1.Condition {
		t.Helper()
		cond := meta.FindStatusCondition(s.Conditions, typ)
		if cond == nil || cond.Status != status || cond.Reason != reason || cond.ObservedGeneration != 4 {
			t.Fatalf("%s: %+v, want %s/%s", typ, cond, status, reason)
		}
		return cond
	}
	check(s, aaav1.ConditionPolicingReady, metav1.ConditionFalse, ReasonPartiallyAvailable)
	check(s, aaav1.ConditionDegraded, metav1.ConditionTrue, ReasonPartiallyAvailable)
	check(s, aaav1.ConditionReady, metav1.ConditionFalse, ReasonPartiallyAvailable)
	if s.ReadyDatacenters != "2/3" || s.ObservedGeneration != 4 {
		t.Errorf("readyDatacenters %s observedGeneration %d", s.ReadyDatacenters, s.ObservedGeneration)
	}
	// k8ssandra-operator stuck (issue 31: a data center's decommission): serving, Degraded
	// with its error, the way out in docs/operator.md.
	stuck := *st
	stuck.dcs = map[string]*dcObserved{"dc1": st.dcs["dc1"], "dc2": st.dcs["dc2"], "dc3": {complete: true, deployed: true, workload: observeWorkload(avail())}}
	stuck.cassandra.problem = "k8ssandra-operator: CALL alter keyspaces system_auth failed on all datacenter dc1 pods (gone leaving (UpdatingReplication))"
	ss := computeStatus(&stuck, nil)
	if d := check(ss, aaav1.ConditionDegraded, metav1.ConditionTrue, ReasonK8ssandraError); !strings.Contains(d.Message, "system_auth") {
		t.Errorf("Degraded while k8ssandra-operator is stuck: %q", d.Message)
	}
	check(ss, aaav1.ConditionReady, metav1.ConditionTrue, ReasonReady)
	// dc3 lost whole (issue 31): Degraded names its Cassandra too, not only its policing.
	lost := *st
	lost.cassandra = cassandraState{initialized: true, reason: ReasonDatacenterNotReady, message: "Cassandra datacenters not ready: dc3 (dc1 ready, dc2 ready, dc3 0/1 Cassandra nodes ready)",
		dcReady: map[string]bool{"dc1": true, "dc2": true}}
	if d := check(computeStatus(&lost, nil), aaav1.ConditionDegraded, metav1.ConditionTrue, ReasonPartiallyAvailable); !strings.Contains(d.Message, "policing is not available in: dc3") ||
		!strings.Contains(d.Message, "dc3 0/1 Cassandra nodes ready") {
		t.Errorf("Degraded with dc3 lost: %q", d.Message)
	}
	// dc3 becomes available: Ready; then the same observation again keeps the times.
	st.dcs["dc3"].workload = observeWorkload(avail())
	st.status = s
	s2 := computeStatus(st, nil)
	ready := check(s2, aaav1.ConditionReady, metav1.ConditionTrue, ReasonReady)
	check(s2, aaav1.ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected)
	st.status = s2
	time.Sleep(1100 * time.Millisecond)
	s3 := computeStatus(st, nil)
	if again := check(s3, aaav1.ConditionReady, metav1.ConditionTrue, ReasonReady); !again.LastTransitionTime.Equal(&ready.LastTransitionTime) {
		t.Error("lastTransitionTime moved without a change")
	}
	// The monitoring condition goes away when nothing is asked for.
	if meta.FindStatusCondition(s3.Conditions, aaav1.ConditionMonitoringReady) != nil {
		t.Error("MonitoringReady without monitoring")
	}
	// An error after dc1: dc2 and dc3 were not observed and keep what was last seen; only Ready
	// says the error.
	st.status = s3
	st.completed = map[string]bool{stepConfig: true, stepCertificates: true, stepMonitoring: true, stepCassandra: true, stepSchema: true}
	st.dcs = map[string]*dcObserved{"dc1": {complete: true, deployed: true, workload: observeWorkload(avail())}, "dc2": {deployed: true}}
	s4 := computeStatus(st, errors.New("get Deployment aaa-dc2: timeout"))
	check(s4, aaav1.ConditionPolicingReady, metav1.ConditionTrue, ReasonReady)
	check(s4, aaav1.ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected)
	check(s4, aaav1.ConditionReady, metav1.ConditionFalse, ReasonReconcileError)
	if !equality.Semantic.DeepEqual(s4.Datacenters, s3.Datacenters) || s4.ReadyDatacenters != "3/3" {
		t.Errorf("datacenters not kept: %+v (%s), was %+v", s4.Datacenters, s4.ReadyDatacenters, s3.Datacenters)
	}
}

// TestPodStopsWithinItsGracePeriod (issue 13): a deleted policing pod keeps serving through the
// preStop delay, then drains its spool and proxy queue in what is left of the grace period —
// policing's radius.drainTimeout is that rest, less a margin to exit before SIGKILL.
func TestPodStopsWithinItsGracePeriod(t *testing.T) {
	c, spec := sampleForBuilders(t)
	spec.Spool.TerminationGracePeriodSeconds = ptr.To[int64](300)
	spec.Spool.PreStopDelaySeconds = ptr.To[int64](10)
	pod := buildDeployment(c, spec, spec.Datacenters[0], "h").Spec.Template.Spec
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g != 300 {
		t.Errorf("terminationGracePeriodSeconds = %v, want 300", g)
	}
	ctr := pod.Containers[0]
	if ctr.Lifecycle == nil || ctr.Lifecycle.PreStop == nil || ctr.Lifecycle.PreStop.Sleep == nil || ctr.Lifecycle.PreStop.Sleep.Seconds != 10 {
		t.Errorf("preStop = %+v, want a 10 s sleep", ctr.Lifecycle)
	}
	cfg := renderPolicingConfig(c, spec, "dc1")
	if !strings.Contains(cfg, "drainTimeout: 285s") {
		t.Errorf("policing.yaml has no drainTimeout of 300-10-5 s:\n%s", cfg)
	}
	// Every other data center is a remote DC of dc1, with its own contact points.
	for _, dc := range spec.Datacenters[1:] {
		if !strings.Contains(cfg, "name: "+dc.Name) {
			t.Errorf("policing.yaml of dc1 lacks remote DC %s:\n%s", dc.Name, cfg)
		}
	}
	if strings.Contains(cfg, "name: dc1\n") {
		t.Errorf("dc1 lists itself as a remote DC:\n%s", cfg)
	}
	// No preStop delay: no hook.
	spec.Spool.PreStopDelaySeconds = ptr.To[int64](0)
	if l := buildDeployment(c, spec, spec.Datacenters[0], "h").Spec.Template.Spec.Containers[0].Lifecycle; l != nil {
		t.Errorf("lifecycle %+v with no preStop delay", l)
	}
	// Persistence: a StatefulSet whose claim, not an emptyDir, holds the state directory; the
	// HPA scales it.
	spec.Spool.Persistence = &aaav1.SpoolPersistence{}
	spec = withDefaults(spec, Options{})
	ss, ok := buildWorkload(c, spec, spec.Datacenters[0], "h").(*appsv1.StatefulSet)
	if !ok {
		t.Fatalf("persistence: workload is not a StatefulSet")
	}
	for _, v := range ss.Spec.Template.Spec.Volumes {
		if v.Name == stateVolume {
			t.Errorf("persistence: the pod still has a volume %q (%+v) shadowing the claim", v.Name, v.VolumeSource)
		}
	}
	if len(ss.Spec.VolumeClaimTemplates) != 1 || ss.Spec.VolumeClaimTemplates[0].Name != stateVolume ||
		ss.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String() != DefaultSpoolVolumeSize {
		t.Errorf("claim templates %+v", ss.Spec.VolumeClaimTemplates)
	}
	if p := ss.Spec.PersistentVolumeClaimRetentionPolicy; p == nil || p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("claims must outlive their pods: retention %+v", p)
	}
	dc := spec.Datacenters[0]
	dc.Replicas, dc.Autoscaling = nil, &aaav1.AutoscalingSpec{MinReplicas: 2, MaxReplicas: 4}
	if k := buildHPA(c, spec, dc).Spec.ScaleTargetRef.Kind; k != "StatefulSet" {
		t.Errorf("HPA scales a %s", k)
	}
}

// TestManagedCassandraDefaults: the default Cassandra version is the one every test, benchmark
// and the demo run (hack/cassandra.sh's CASSANDRA_VERSION), and the K8ssandraCluster asks for
// 16 tokens per node (Cassandra 5's own default; with fewer, k8ssandra-operator computes
// initial tokens in an init container of k8ssandra-client's image) and for soft pod
// anti-affinity only when the spec does (several Cassandra nodes on one Kubernetes node).
func TestManagedCassandraDefaults(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "hack", "cassandra.sh"))
	if err != nil {
		t.Fatal(err)
	}
	var tested string
	for _, line := range strings.Split(string(script), "\n") {
		if v, ok := strings.CutPrefix(line, `CASSANDRA_VERSION="${CASSANDRA_VERSION:-`); ok {
			tested, _, _ = strings.Cut(v, "}")
		}
	}
	if tested == "" {
		t.Fatal("hack/cassandra.sh: no CASSANDRA_VERSION default")
	}
	c := &aaav1.AAACluster{ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: "aaa"}}
	spec := withDefaults(aaav1.AAAClusterSpec{Datacenters: []aaav1.Datacenter{{Name: "dc1",
		Cassandra: aaav1.DatacenterCassandraSpec{Size: ptr.To[int32](1)}}}}, Options{})
	if got := spec.Cassandra.Managed.ServerVersion; got != tested {
		t.Errorf("default serverVersion %q, tests run Cassandra %q", got, tested)
	}
	k8c := buildK8ssandraCluster(c, spec, nil)
	if v, _, _ := unstructured.NestedFieldNoCopy(k8c.Object, "spec", "cassandra", "config", "cassandraYaml", "num_tokens"); v != int64(16) {
		t.Errorf("num_tokens %v (%T), want 16", v, v)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(k8c.Object, "spec", "cassandra", "softPodAntiAffinity"); found {
		t.Error("softPodAntiAffinity set though the spec does not ask for it")
	}
	// A data center added later gets the keyspace's replication from k8ssandra-operator
	// before it rebuilds from an existing one (so the rebuild streams the sessions), at the
	// factor the migration will set.
	if got, want := k8c.GetAnnotations()["k8ssandra.io/dc-replication"], `{"dc1":{"openaaa":1}}`; got != want {
		t.Errorf("k8ssandra.io/dc-replication %q, want %q", got, want)
	}
	// The config init container asks for the datacenter's resources: cass-operator's default
	// (1 CPU) would make a small node's pod request a whole core (seen on the local cluster:
	// the second datacenter's pod stayed Pending, "Insufficient cpu").
	if _, found, _ := unstructured.NestedFieldNoCopy(k8c.Object, "spec", "cassandra", "datacenters"); !found {
		t.Fatal("no datacenters")
	}
	dcs, _, _ := unstructured.NestedSlice(k8c.Object, "spec", "cassandra", "datacenters")
	if _, found := dcs[0].(map[string]any)["initContainers"]; found {
		t.Error("initContainers set though the datacenter sets no resources")
	}
	spec.Datacenters[0].Cassandra.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1536Mi")}}
	dcs, _, _ = unstructured.NestedSlice(buildK8ssandraCluster(c, spec, nil).Object, "spec", "cassandra", "datacenters")
	inits, _ := dcs[0].(map[string]any)["initContainers"].([]any)
	if len(inits) != 1 || inits[0].(map[string]any)["name"] != "server-config-init" ||
		!equality.Semantic.DeepEqual(inits[0].(map[string]any)["resources"], toUnstructured(&spec.Datacenters[0].Cassandra.Resources)) {
		t.Errorf("initContainers %v, want server-config-init with the datacenter's resources", inits)
	}
	spec.Cassandra.Managed.SoftPodAntiAffinity = true
	k8c = buildK8ssandraCluster(c, spec, nil)
	if v, _, _ := unstructured.NestedBool(k8c.Object, "spec", "cassandra", "softPodAntiAffinity"); !v {
		t.Error("softPodAntiAffinity not set though the spec asks for it")
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(k8c.Object, "spec", "cassandra", "config", "jvmOptions"); found {
		t.Error("jvmOptions set though the spec has none")
	}
	spec.Cassandra.Managed.JvmOptions = []string{"-Dcassandra.ring_delay_ms=1000", "-XX:+UseG1GC"}
	k8c = buildK8ssandraCluster(c, spec, nil)
	opts, _, _ := unstructured.NestedStringSlice(k8c.Object, "spec", "cassandra", "config", "jvmOptions", "additionalOptions")
	if !slices.Equal(opts, spec.Cassandra.Managed.JvmOptions) {
		t.Errorf("config.jvmOptions.additionalOptions %v, want %v", opts, spec.Cassandra.Managed.JvmOptions)
	}
	if n, _, _ := unstructured.NestedInt64(k8c.Object, "spec", "cassandra", "config", "cassandraYaml", "num_tokens"); n != 16 {
		t.Errorf("num_tokens %d beside jvmOptions, want 16", n)
	}
}

// Issue 32, defect 4: while the first migration runs no Deployment exists yet: PolicingReady
// says policing waits for the schema (no Warning "not available"); and "1 data center".
func TestComputeStatusWhileMigrating(t *testing.T) {
	c, spec := sampleForBuilders(t)
	spec.Datacenters = spec.Datacenters[:1]
	st := &state{cluster: c, spec: spec,
		cassandra: cassandraState{initialized: true, ready: true, reason: ReasonReady, dcReady: map[string]bool{spec.Datacenters[0].Name: true}},
		schema:    schemaState{reason: ReasonMigrating, message: "migration Job running"},
		dcs:       map[string]*dcObserved{},
		completed: map[string]bool{stepConfig: true, stepCertificates: true, stepMonitoring: true, stepCassandra: true, stepSchema: true},
	}
	s := computeStatus(st, nil)
	cond := meta.FindStatusCondition(s.Conditions, aaav1.ConditionPolicingReady)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != ReasonWaitingForSchema || warningReasons[cond.Reason] {
		t.Errorf("PolicingReady while the first migration runs: %+v", cond)
	}
	if r := meta.FindStatusCondition(s.Conditions, aaav1.ConditionReady); r == nil || r.Reason != ReasonMigrating {
		t.Errorf("Ready: %+v", r)
	}
	// Once deployed and available: "ready in 1 data center".
	avail := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}, Status: appsv1.DeploymentStatus{
		UpdatedReplicas: 2, AvailableReplicas: 2, ReadyReplicas: 2,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}}}
	st.status = s
	st.schema = schemaState{ready: true, reason: ReasonReady}
	st.dcs[spec.Datacenters[0].Name] = &dcObserved{complete: true, deployed: true, workload: observeWorkload(avail)}
	st.completed[stepDatacenters] = true
	s = computeStatus(st, nil)
	if r := meta.FindStatusCondition(s.Conditions, aaav1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue || r.Message != "AAA cluster ready in 1 data center" {
		t.Errorf("Ready: %+v", r)
	}
	// A later migration (a DC added) with the first DC deployed but down: that is an outage.
	st.status = s
	st.schema = schemaState{reason: ReasonMigrating}
	delete(st.completed, stepDatacenters)
	st.dcs = map[string]*dcObserved{}
	s.Datacenters[0].Ready = false
	st.status = s
	s = computeStatus(st, nil)
	if cond := meta.FindStatusCondition(s.Conditions, aaav1.ConditionPolicingReady); cond == nil || cond.Reason != ReasonUnavailable {
		t.Errorf("PolicingReady of a deployed DC that is down during a migration: %+v", cond)
	}
}
