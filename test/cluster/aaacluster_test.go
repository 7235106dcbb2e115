package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	"github.com/openaaa/openaaa/config/argocd"
	"github.com/openaaa/openaaa/controllers"
	"github.com/openaaa/openaaa/internal/cassandratest"
	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/test/cluster/clustertest"
)

// The AAACluster of these tests: what a new user gets by following docs/operator.md with the
// shipped charts, an external Cassandra 5 on the node's address and the NAS outside the node.
const (
	operatorNS = "openaaa-system"
	aaaNS      = "aaa"
	release    = "edge"
	nasSecret  = "nas-shared-secret-1"
	// loadtestSecret is the shared secret of the NAS client entry for the pod range, where
	// an AAALoadTest's aaa-loadgen pod sends from.
	loadtestSecret = "loadtest-secret-1"
	readyWithin    = 5 * time.Minute
)

// watched is the label the operator's cache selects Secrets and ConfigMaps by.
var watched = map[string]string{controllers.WatchLabel: controllers.WatchLabelValue}

// Cassandra on the node's address (pods reach it), on the test port of cassandratest.
var cassandraContact = fmt.Sprintf("%s:%d", clustertest.NodeIP, cassandratest.CQLPort)

func aaaclusterValues() string {
	return fmt.Sprintf(`datacenters:
  - name: dc1
    replicas: 1
    service: {type: NodePort}
    cassandra: {replicationFactor: 1}
cassandra:
  external:
    contactPoints: [%q]
    credentialsSecret: {name: cassandra-credentials}
sessionStore: cassandra
spool: {terminationGracePeriodSeconds: %d}
subscribers:
  file: {configMap: {name: subscribers, key: subscribers.yaml}}
nasClients:
  create: true
  clients:
    - {name: nas, address: %s, secret: %s}
    - {name: loadtests, address: %s, secret: %s}
`, cassandraContact, spoolGraceSeconds, clustertest.NASIP, nasSecret, clustertest.PodCIDR, loadtestSecret)
}

// spoolGraceSeconds is the policing pods' termination grace period in aaaclusterValues: a
// stopping pod delivers its spool within it.
const spoolGraceSeconds = 300

// TestAAAClusterOnCluster installs the operator chart and the aaacluster chart as a user would,
// with Cassandra stopped at first: the AAACluster says Cassandra is unreachable; once
// Cassandra runs, the schema Job completes and policing serves the NAS through a NodePort
// (its own source address kept). Then Cassandra goes away again and a policing pod is
// replaced: it waits alive and not ready (no restart, no CrashLoopBackOff) and serves within
// seconds of Cassandra's return. Last, both releases are uninstalled and leave nothing
// behind but the CRDs (kept on purpose).
func TestAAAClusterOnCluster(t *testing.T) {
	clustertest.Skip(t, cluster)
	inSerialLane(t)
	root, helm, tag := needOperatorImages(t)
	c := aaaClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// Step 1 wants Cassandra down: another test of the package may have started the shared node.
	cassandraKill(t)

	// The user's Secrets and ConfigMaps: Cassandra credentials and the subscriber file.
	mustApply(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: aaaNS}})
	mustApply(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cassandra-credentials", Namespace: aaaNS, Labels: watched},
		StringData: map[string]string{"username": "cassandra", "password": "cassandra"}})
	mustApply(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "subscribers", Namespace: aaaNS, Labels: watched},
		Data: map[string]string{"subscribers.yaml": subscribersYAML(loadUsers, "")}})

	installOperatorChart(t, ctx, helm, root, tag, aaaNS)
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(aaaclusterValues()), 0o600); err != nil {
		t.Fatal(err)
	}
	runHelm(t, ctx, helm, "install", release, filepath.Join(root, "charts", "aaacluster"), "-n", aaaNS, "-f", values)
	uninstalled := false
	defer func() {
		if !uninstalled {
			_ = exec.Command(helm, "--kubeconfig", cluster.Kubeconfig, "uninstall", release, "-n", aaaNS).Run()
			_ = exec.Command(helm, "--kubeconfig", cluster.Kubeconfig, "uninstall", "openaaa-operator", "-n", operatorNS).Run()
		}
	}()

	// 1. Cassandra down at start: the conditions say so.
	waitCondition(t, c, aaav1.ConditionCassandraReady, metav1.ConditionFalse, "CassandraUnreachable", 2*time.Minute)

	// 2. Cassandra comes: schema Job, policing Ready.
	cassandraUp(t)
	start := time.Now()
	ac := waitCondition(t, c, aaav1.ConditionReady, metav1.ConditionTrue, "", readyWithin)
	t.Logf("AAACluster Ready %s after Cassandra came up", time.Since(start).Round(time.Second))
	if ac.Status.Schema == nil || ac.Status.Schema.Replication != "dc1:1" {
		t.Errorf("schema status: %+v", ac.Status.Schema)
	}
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.InNamespace(aaaNS)); err != nil {
		t.Fatal(err)
	}
	succeeded := 0
	for _, j := range jobs.Items {
		succeeded += int(j.Status.Succeeded)
	}
	if succeeded == 0 {
		t.Errorf("no completed schema Job among %d Jobs", len(jobs.Items))
	}
	if h, err := argocd.Health(ac); err != nil || h.Status != "Healthy" {
		t.Errorf("Argo CD health of the Ready AAACluster: %+v, %v; want Healthy", h, err)
	}
	pod := policingPod(t, c, true)
	checkPodSecurity(t, pod)

	// 3. The NAS through the NodePort: accept, accounting, the session with the NAS's address.
	auth, acct := nodePorts(t, c)
	out, ok := nasRadclient(t, fmt.Sprintf("%s:%d", clustertest.NodeIP, auth), "auth", nasSecret,
		`User-Name = "alice"`, `User-Password = "wonderland"`, `Message-Authenticator = 0x00`)
	if !ok || !strings.Contains(out, "Access-Accept") {
		t.Fatalf("Access-Request from the NAS: no Access-Accept:\n%s", out)
	}
	acctAttrs := func(status string, time int) []string {
		return []string{`User-Name = "alice"`, `Acct-Session-Id = "k8s-1"`, `Acct-Status-Type = ` + status,
			`NAS-IP-Address = ` + clustertest.NASIP, fmt.Sprintf(`Acct-Session-Time = %d`, time), `Framed-IP-Address = 198.18.200.9`}
	}
	for i, st := range []string{"Start", "Interim-Update"} {
		if out, ok := nasRadclient(t, fmt.Sprintf("%s:%d", clustertest.NodeIP, acct), "acct", nasSecret, acctAttrs(st, 60*i)...); !ok || !strings.Contains(out, "Accounting-Response") {
			t.Fatalf("Accounting %s: no Accounting-Response:\n%s", st, out)
		}
	}
	sessions := adminSessions(t, c, pod.Status.PodIP, "alice")
	if len(sessions) != 1 || sessions[0]["nas"] != clustertest.NASIP {
		t.Fatalf("alice's sessions in the admin API: %v; want one, from NAS %s", sessions, clustertest.NASIP)
	}
	if out, ok := nasRadclient(t, fmt.Sprintf("%s:%d", clustertest.NodeIP, acct), "acct", nasSecret, acctAttrs("Stop", 120)...); !ok || !strings.Contains(out, "Accounting-Response") {
		t.Fatalf("Accounting Stop: no Accounting-Response:\n%s", out)
	}
	if s := adminSessions(t, c, pod.Status.PodIP, "alice"); len(s) != 0 {
		t.Errorf("alice still active after Stop: %v", s)
	}
	// A wrong secret, and a client policing does not know (the host, from the node's address).
	if out, ok := nasRadclient(t, fmt.Sprintf("%s:%d", clustertest.NodeIP, auth), "auth", "wrong-secret",
		`User-Name = "alice"`, `User-Password = "wonderland"`, `Message-Authenticator = 0x00`); ok || strings.Contains(out, "Access-") && strings.Contains(out, "Received") {
		t.Errorf("a wrong secret got an answer:\n%s", out)
	}
	if out, ok := hostRadclient(t, fmt.Sprintf("%s:%d", clustertest.NodeIP, auth), "auth", nasSecret,
		`User-Name = "alice"`, `User-Password = "wonderland"`, `Message-Authenticator = 0x00`); ok {
		t.Errorf("an unknown NAS got an answer:\n%s", out)
	}

	// 4. The capacity test as a Kubernetes object: an AAALoadTest runs aaa-loadgen in a Job and
	// writes the field's report into its status.
	loadTestOnCluster(t, ctx, c)

	// 5. Under load from the NAS: the clients Secret and the subscribers change (reloaded), a
	// spec change rolls the pod, a pod is deleted: no acknowledged accounting record is lost.
	noAccountingLost(t, ctx, c, helm, root, values, auth, acct)
	pod = policingPod(t, c, true)

	// 6. Cassandra lost, a policing pod replaced: alive, not ready, no restart; back by itself.
	cassandraKill(t)
	// Policing still serves (its spool takes the accounting), its Cassandra is gone: Argo CD
	// shows the cluster Degraded, with the reason.
	ac = waitCondition(t, c, aaav1.ConditionCassandraReady, metav1.ConditionFalse, "CassandraUnreachable", 2*time.Minute)
	if h, err := argocd.Health(ac); err != nil || h.Status != "Degraded" || !strings.Contains(h.Message, "contact point") {
		t.Errorf("Argo CD health with Cassandra down: %+v, %v; want Degraded naming the contact point", h, err)
	}
	spooled := spoolWhileCassandraDown(t, acct) // spool_test.go
	if err := c.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	var waiting *corev1.Pod
	eventually(t, 2*time.Minute, "a new policing pod running, not ready", func() error {
		p := policingPod(t, c, false)
		if p == nil || p.Name == pod.Name || p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pod %v", podState(p))
		}
		if podReady(p) {
			return fmt.Errorf("pod %s is ready without Cassandra", p.Name)
		}
		waiting = p
		return nil
	})
	time.Sleep(20 * time.Second) // past the startup probe's first checks and a liveness period
	if p := policingPod(t, c, false); p == nil || p.Name != waiting.Name || restarts(p) != 0 || podReady(p) {
		t.Fatalf("the pod waiting for Cassandra: %v; want the same pod, not ready, never restarted", podState(p))
	}
	body := httpGet(t, fmt.Sprintf("http://%s:9812/readyz", waiting.Status.PodIP))
	if !strings.Contains(body, "session store") {
		t.Errorf("/readyz of the waiting pod does not say what it waits for: %q", body)
	}
	cassandraUp(t)
	back := time.Now()
	eventually(t, 2*time.Minute, "the waiting pod ready", func() error {
		p := policingPod(t, c, false)
		if p == nil || !podReady(p) {
			return fmt.Errorf("pod %v", podState(p))
		}
		if p.Name != waiting.Name || restarts(p) != 0 {
			return fmt.Errorf("the pod was replaced or restarted: %v", podState(p))
		}
		return nil
	})
	t.Logf("policing ready %s after Cassandra's CQL port was back", time.Since(back).Round(time.Second))
	spooledRecordsDelivered(t, ctx, c, pod, spooled)
	waitCondition(t, c, aaav1.ConditionReady, metav1.ConditionTrue, "", 3*time.Minute)

	// 7. The operator chart upgraded (a new operator pod): policing keeps running untouched.
	upgradeOperatorChart(t, ctx, c, helm, root)

	// 8. Uninstall: the AAACluster's objects are collected; the CRDs stay (crds.keep).
	runHelm(t, ctx, helm, "uninstall", release, "-n", aaaNS, "--wait", "--timeout", "2m")
	eventually(t, 2*time.Minute, "the AAACluster's objects collected", func() error {
		return leftovers(ctx, c, client.InNamespace(aaaNS), client.MatchingLabels{"aaa.openaaa.io/cluster": release})
	})
	runHelm(t, ctx, helm, "uninstall", "openaaa-operator", "-n", operatorNS, "--wait", "--timeout", "2m")
	uninstalled = true
	eventually(t, time.Minute, "the operator chart's objects removed", func() error {
		return leftovers(ctx, c, client.MatchingLabels{"app.kubernetes.io/instance": "openaaa-operator"})
	})
	crd := &apiextv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: "aaaclusters.aaa.openaaa.io"}, crd); err != nil {
		t.Errorf("the AAACluster CRD should be kept after uninstall (crds.keep): %v", err)
	}
}

// leftovers lists the objects of the kinds a chart or the operator creates that match opts.
func leftovers(ctx context.Context, c client.Client, opts ...client.ListOption) error {
	var left []string
	for _, l := range []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.StatefulSetList{}, &corev1.ServiceList{},
		&corev1.ConfigMapList{}, &corev1.SecretList{}, &corev1.ServiceAccountList{}, &batchv1.JobList{},
		&policyv1.PodDisruptionBudgetList{}, &autoscalingv2.HorizontalPodAutoscalerList{},
		&networkingv1.NetworkPolicyList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{},
		&rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{}} {
		if err := c.List(ctx, l, opts...); err != nil {
			return err
		}
		items, _ := meta.ExtractList(l)
		for _, o := range items {
			left = append(left, fmt.Sprintf("%T %s/%s", o, o.(client.Object).GetNamespace(), o.(client.Object).GetName()))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("left: %v", left)
	}
	return nil
}

// upgradeOperatorChart upgrades the operator chart with a changed value, as a user's
// `helm upgrade` does: the operator's pods are replaced and take over, the AAACluster stays
// Ready and the policing pod is neither replaced nor restarted (the policing it renders is
// unchanged).
func upgradeOperatorChart(t *testing.T, ctx context.Context, c client.Client, helm, root string) {
	t.Helper()
	before := policingPod(t, c, true)
	var dep appsv1.Deployment
	key := client.ObjectKey{Namespace: operatorNS, Name: "openaaa-operator"}
	if err := c.Get(ctx, key, &dep); err != nil {
		t.Fatal(err)
	}
	gen := dep.Generation
	runHelm(t, ctx, helm, "upgrade", "openaaa-operator", filepath.Join(root, "charts", "openaaa-operator"),
		"-n", operatorNS, "--reuse-values", "--set", "logLevel=debug", "--wait", "--timeout", "3m")
	if err := c.Get(ctx, key, &dep); err != nil {
		t.Fatal(err)
	}
	if dep.Generation == gen || dep.Status.ObservedGeneration < dep.Generation || dep.Status.UpdatedReplicas != *dep.Spec.Replicas {
		t.Fatalf("the operator Deployment was not rolled by the upgrade: generation %d -> %d, observed %d, updated %d",
			gen, dep.Generation, dep.Status.ObservedGeneration, dep.Status.UpdatedReplicas)
	}
	// The new operator reconciles: an object it owns, deleted, comes back.
	var pdbs policyv1.PodDisruptionBudgetList
	if err := c.List(ctx, &pdbs, client.InNamespace(aaaNS), client.MatchingLabels{"aaa.openaaa.io/cluster": release}); err != nil || len(pdbs.Items) == 0 {
		t.Fatalf("no PodDisruptionBudget of the AAACluster (%v)", err)
	}
	old := pdbs.Items[0]
	if err := c.Delete(ctx, &old); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the upgraded operator recreates the deleted PodDisruptionBudget", func() error {
		var p policyv1.PodDisruptionBudget
		if err := c.Get(ctx, client.ObjectKeyFromObject(&old), &p); err != nil {
			return err
		}
		if p.UID == old.UID {
			return fmt.Errorf("still the old one")
		}
		return nil
	})
	waitCondition(t, c, aaav1.ConditionReady, metav1.ConditionTrue, "", 2*time.Minute)
	after := policingPod(t, c, true)
	if after.UID != before.UID || restarts(after) != restarts(before) {
		t.Errorf("the operator upgrade touched policing: pod %s (%d restarts) -> %s (%d restarts)",
			before.Name, restarts(before), after.Name, restarts(after))
	}
}

// needOperatorImages checks what installing the charts with an external Cassandra needs
// (skipping, or failing under OPENAAA_INTEGRATION=require) and imports the project's images:
// the repository root, bin/helm and the images' tag.
func needOperatorImages(t *testing.T) (root, helm, tag string) {
	t.Helper()
	root, err := clustertest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helm = filepath.Join(root, "bin", "helm")
	_, err = os.Stat(helm)
	testenv.Need(t, err == nil, "helm in bin/ (make helm)")
	testenv.Need(t, cassandratest.Available() == nil, "Cassandra 5 (make cassandra-jars)")
	refs, err := cluster.Import("policing", "openaaa-operator", "aaa-loadgen")
	testenv.Need(t, err == nil, fmt.Sprint("the images (make images): ", err))
	return root, helm, refs[0][strings.LastIndex(refs[0], ":")+1:]
}

// installOperatorChart installs the serial lane's operator (release openaaa-operator in
// openaaa-system) with the imported images, watching namespace watch only (parallel_test.go),
// and waits for it. extra are more helm arguments (--set ...).
func installOperatorChart(t *testing.T, ctx context.Context, helm, root, tag, watch string, extra ...string) {
	t.Helper()
	installOperatorRelease(t, ctx, helm, root, tag, "openaaa-operator", operatorNS, watch, extra...)
}

// installOperatorRelease installs the operator chart as release rel in namespace ns.
func installOperatorRelease(t *testing.T, ctx context.Context, helm, root, tag, rel, ns, watch string, extra ...string) {
	t.Helper()
	args := append([]string{"install", rel, filepath.Join(root, "charts", "openaaa-operator"),
		"-n", ns, "--create-namespace", "--set-string", "watchNamespace=" + watch}, imageValues(tag)...)
	runHelm(t, ctx, helm, append(append(args, "--set", "replicaCount=1", "--wait", "--timeout", "3m"), extra...)...)
}

// imageValues are the helm arguments naming the images by tag. --set-string: a tag is a
// string, and a short commit hash can be all digits (2759039), which --set makes a number
// that the chart's schema refuses.
func imageValues(tag string) []string {
	return []string{"--set-string", "image.tag=" + tag, "--set-string", "policingImage.tag=" + tag,
		"--set-string", "loadgenImage.tag=" + tag}
}

// A run at a commit whose short hash is all digits installs the chart: every cluster test
// failed so (helm: "at '/image/tag': got number, want string").
func TestOperatorChartTakesANumericTag(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helm := filepath.Join(root, "bin", "helm")
	_, err = os.Stat(helm)
	testenv.Need(t, err == nil, "helm in bin/ (make helm)")
	out, err := exec.Command(helm, append([]string{"template", "openaaa-operator", filepath.Join(root, "charts", "openaaa-operator"),
		"-n", operatorNS}, imageValues("2759039")...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template with tag 2759039: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "openaaa-operator:2759039") {
		t.Fatalf("the operator's image is not tagged 2759039:\n%s", out)
	}
}

// loadTestOnCluster creates an AAALoadTest against the cluster and checks its report: traffic
// answered, the server-side figures read from policing's /metrics, conditions and the
// columns kubectl shows.
func loadTestOnCluster(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	mustApply(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "loadtest-nas", Namespace: aaaNS, Labels: watched},
		StringData: map[string]string{"secret": loadtestSecret}})
	lt := createLoadTest(t, ctx, c, "capacity", aaav1.LoadTestLoad{Duration: "20s", Concurrency: 8})
	start := time.Now()
	waitLoadTest(t, ctx, c, lt, 4*time.Minute)
	r := lt.Status.Report
	b, _ := json.Marshal(lt.Status)
	t.Logf("AAALoadTest done in %s: %s", time.Since(start).Round(time.Second), b)
	if r == nil || r.Answered < 100 || r.Accepts == 0 || r.IncomingTPS == "" || r.IncomingTPS == "0" ||
		r.AvgAuthMs == "" || r.AvgAcctMs == "" || r.OutgoingTPS == "" || r.WorkersBusy == "" {
		t.Fatalf("AAALoadTest report incomplete: %s", b)
	}
	if len(lt.Status.Datacenters) != 1 || lt.Status.Datacenters[0].Name != "dc1" || lt.Status.Datacenters[0].Answered == 0 {
		t.Errorf("per-DC report: %+v", lt.Status.Datacenters)
	}
	if cond := meta.FindStatusCondition(lt.Status.Conditions, aaav1.ConditionComplete); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("Complete condition: %+v", cond)
	}
	out, err := cluster.Kubectl(ctx, "get", "aaaloadtests", "-n", aaaNS)
	if err != nil || !strings.Contains(out, "TPS") || !strings.Contains(out, aaav1.LoadTestSucceeded) {
		t.Errorf("kubectl get aaaloadtests: %v\n%s", err, out)
	}
	t.Logf("kubectl get aaaloadtests:\n%s", out)
	// A load test's Job goes with it.
	if err := c.Delete(ctx, lt); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the AAALoadTest's Job collected", func() error {
		job := &batchv1.Job{}
		err := c.Get(ctx, client.ObjectKey{Namespace: aaaNS, Name: lt.Status.Job}, job)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("Job %s still there (%v)", lt.Status.Job, err)
	})
}

// createLoadTest starts an AAALoadTest of the test's AAACluster: the loadtest-nas Secret,
// loadUsers users.
func createLoadTest(t *testing.T, ctx context.Context, c client.Client, name string, load aaav1.LoadTestLoad) *aaav1.AAALoadTest {
	t.Helper()
	lt := &aaav1.AAALoadTest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: aaaNS},
		Spec: aaav1.AAALoadTestSpec{
			Cluster:   aaav1.LoadTestClusterRef{Name: release},
			Load:      load,
			Users:     aaav1.LoadTestUsers{Count: loadUsers},
			SecretRef: aaav1.SecretKeyRef{Name: "loadtest-nas"},
			// These runs check the object's mechanics — the Job, the report, the conditions —
			// not capacity (make bench): in make test the node shares two cores with the
			// add-ons' builds, and a cold run starved policing so (acct 510 ms on average, 14
			// timeouts of 258) that the default 0.99 answered failed it.
			SuccessCriteria: aaav1.LoadTestSuccessCriteria{MinAnsweredRatio: "0.5", MaxTimeoutRatio: "0.5"},
		},
	}
	if err := c.Create(ctx, lt); err != nil {
		t.Fatal(err)
	}
	return lt
}

// waitLoadTest waits until lt succeeded (into lt); a failed one fails the test.
func waitLoadTest(t *testing.T, ctx context.Context, c client.Client, lt *aaav1.AAALoadTest, within time.Duration) {
	t.Helper()
	eventually(t, within, "the AAALoadTest done", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(lt), lt); err != nil {
			return err
		}
		if lt.Status.Phase != aaav1.LoadTestSucceeded {
			b, _ := json.Marshal(lt.Status)
			if lt.Status.Phase == aaav1.LoadTestFailed {
				t.Fatalf("AAALoadTest failed: %s", b)
			}
			return fmt.Errorf("status %s", b)
		}
		return nil
	})
}

// loadUsers subscribers user00001..user00200 (aaa-loadgen's default patterns) besides alice.
const loadUsers = 200

func subscribersYAML(n int, extra string) string {
	var b strings.Builder
	b.WriteString("subscribers:\n  - {username: alice, password: wonderland}\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - {username: user%05d, password: pass%05d}\n", i, i)
	}
	b.WriteString(extra)
	return b.String()
}

// noAccountingLost runs aaa-loadgen from the NAS namespace through the NodePorts (it
// retransmits as a NAS does) while the configuration changes, pods come and go and Cassandra
// stalls before each roll, then checks that every acknowledged accounting record is in
// Cassandra's history, once. A stall sends accounting to the pod's spool (an emptyDir), which
// acknowledges at disk speed: a CI run lost 4,030 records a pod held beyond what it could
// deliver at shutdown (policing's spool.deliverWithin bounds that now).
func noAccountingLost(t *testing.T, ctx context.Context, c client.Client, helm, root, values string, auth, acct int32) {
	t.Helper()
	loadgen := filepath.Join(t.TempDir(), "aaa-loadgen")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", loadgen, filepath.Join(root, "services", "loadgen")).CombinedOutput(); err != nil {
		t.Fatalf("building aaa-loadgen: %v\n%s", err, out)
	}
	db := cqlSession(t)
	defer db.Close()
	before := countRows(t, db, "SELECT count(*) FROM openaaa.acct_history")
	first := policingPod(t, c, true)

	report := filepath.Join(t.TempDir(), "report.json")
	lctx, lcancel := context.WithTimeout(ctx, 4*time.Minute)
	defer lcancel()
	run := clustertest.NASExec(lctx, loadgen, "run", "--quiet",
		"--target", fmt.Sprintf("%s:%d/%d", clustertest.NodeIP, auth, acct), "--nas-ip", clustertest.NASIP,
		"--secret", nasSecret, "--users", fmt.Sprint(loadUsers), "--framed-ip-base", "198.19.0.1",
		"--concurrency", "8", "--duration", "80s", "--timeout", "2s", "--retries", "6", "--json-out", report)
	var runOut bytes.Buffer
	run.Stdout, run.Stderr = &runOut, &runOut
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()
	var startAt time.Time
	step := func(at time.Duration, what string, f func()) {
		select {
		case err := <-done:
			t.Fatalf("aaa-loadgen ended before %q: %v\n%s", what, err, runOut.String())
		case <-time.After(time.Until(startAt.Add(at))):
		}
		t.Logf("+%s: %s", at, what)
		f()
	}
	startAt = time.Now()
	// A new NAS client through the chart (the clients Secret): reloaded, no roll.
	step(10*time.Second, "helm upgrade: a second NAS client", func() {
		extra := filepath.Join(t.TempDir(), "more.yaml")
		if err := os.WriteFile(extra, []byte(fmt.Sprintf("nasClients:\n  create: true\n  clients:\n    - {name: nas, address: %s, secret: %s}\n    - {name: nas-2, address: 198.18.0.9, secret: other}\n", clustertest.NASIP, nasSecret)), 0o600); err != nil {
			t.Fatal(err)
		}
		runHelm(t, ctx, helm, "upgrade", release, filepath.Join(root, "charts", "aaacluster"), "-n", aaaNS, "-f", values, "-f", extra)
	})
	// A stall of the pod about to roll: its accounting goes to its spool meanwhile.
	resume := func() {}
	defer func() { resume() }()
	step(13*time.Second, "Cassandra stalls for 6 s (SIGSTOP)", func() { resume = cassandraStall(t) })
	step(19*time.Second, "Cassandra resumes", func() { resume() })
	step(22*time.Second, "the clients change did not roll the pod", func() {
		if p := policingPod(t, c, true); p.Name != first.Name {
			t.Errorf("a clients Secret change rolled the pod (%s -> %s); policing reloads it", first.Name, p.Name)
		}
	})
	// The subscriber file is read at start: its change rolls the pods (docs/operator.md).
	step(25*time.Second, "the subscriber ConfigMap changes: the pod rolls", func() {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: aaaNS, Name: "subscribers"}, cm); err != nil {
			t.Fatal(err)
		}
		cm.Data["subscribers.yaml"] = subscribersYAML(loadUsers, "  - {username: zoe, password: zzz}\n")
		if err := c.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
	})
	step(40*time.Second, "spec change (logLevel): the pod rolls", func() {
		ac := &aaav1.AAACluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: aaaNS, Name: release}, ac); err != nil {
			t.Fatal(err)
		}
		ac.Spec.LogLevel = "debug"
		if err := c.Update(ctx, ac); err != nil {
			t.Fatal(err)
		}
	})
	step(50*time.Second, "Cassandra stalls for 6 s (SIGSTOP)", func() { resume = cassandraStall(t) })
	step(56*time.Second, "Cassandra resumes", func() { resume() })
	step(60*time.Second, "delete the policing pod", func() {
		p := policingPod(t, c, true)
		if p.Name == first.Name {
			t.Errorf("the subscriber and spec changes did not roll the pod")
		}
		if err := c.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	})
	if err := <-done; err != nil {
		t.Fatalf("aaa-loadgen: %v\n%s", err, runOut.String())
	}
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		AcctResponses, Timeouts, Aborted, Accepts, Sessions, Errors uint64
		IncomingTPS                                                 float64 `json:"incomingTPS"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	t.Logf("load: %d sessions, %d accepts, %d accounting acknowledged, %d timeouts, %d aborted, %d errors, %.0f TPS",
		r.Sessions, r.Accepts, r.AcctResponses, r.Timeouts, r.Aborted, r.Errors, r.IncomingTPS)
	if r.AcctResponses < 500 {
		t.Fatalf("only %d accounting records acknowledged: the load did not run", r.AcctResponses)
	}
	// An acknowledged record is in Cassandra or in a spool: wait until the pods that were
	// stopped have delivered theirs and exited (within their grace period), and the spool of
	// the running one is empty.
	waited := time.Now()
	// Bounded by the grace period they have: under a cold make test's load a pod's drain took
	// over 3 minutes (2026-11-29).
	eventually(t, spoolGraceSeconds*time.Second+30*time.Second, "the stopped policing pods gone", func() error {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(aaaNS), client.MatchingLabels{"app.kubernetes.io/component": "radius"}); err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				return fmt.Errorf("%s is still stopping", p.Name)
			}
		}
		return nil
	})
	t.Logf("the stopped pods were gone %s after the load", time.Since(waited).Round(time.Second))
	eventually(t, time.Minute, "the policing spools empty", func() error {
		p := policingPod(t, c, true)
		body := httpGet(t, fmt.Sprintf("http://%s:9812/metrics", p.Status.PodIP))
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "openaaa_spool_records ") && strings.TrimSpace(strings.TrimPrefix(line, "openaaa_spool_records ")) != "0" {
				return fmt.Errorf("%s: %s", p.Name, line)
			}
		}
		return nil
	})
	stored := uint64(countRows(t, db, "SELECT count(*) FROM openaaa.acct_history") - before)
	t.Logf("accounting: %d acknowledged, %d stored", r.AcctResponses, stored)
	if stored < r.AcctResponses {
		t.Fatalf("ACCOUNTING LOST: %d acknowledged, %d stored", r.AcctResponses, stored)
	}
	if stored > r.AcctResponses+r.Timeouts+r.Aborted {
		t.Fatalf("%d stored > %d acknowledged + %d unanswered: records stored twice?", stored, r.AcctResponses, r.Timeouts+r.Aborted)
	}
}

func cqlSession(t *testing.T) *gocql.Session {
	t.Helper()
	cc := gocql.NewCluster(cassandraContact)
	cc.Consistency = gocql.One
	cc.Timeout = 10 * time.Second
	s, err := cc.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func countRows(t *testing.T, s *gocql.Session, q string) int64 {
	t.Helper()
	var n int64
	if err := s.Query(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func aaaClient(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, aaav1.AddToScheme, apiextv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cluster.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustApply(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func runHelm(t *testing.T, ctx context.Context, helm string, args ...string) {
	t.Helper()
	start := time.Now()
	cmd := exec.CommandContext(ctx, helm, append([]string{"--kubeconfig", cluster.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s\n%s", strings.Join(args, " "), err, out, diagnostics())
	}
	t.Logf("helm %s %s: %s", args[0], args[1], time.Since(start).Round(100*time.Millisecond))
}

func waitCondition(t *testing.T, c client.Client, typ string, status metav1.ConditionStatus, reason string, within time.Duration) *aaav1.AAACluster {
	t.Helper()
	return waitConditionOf(t, c, client.ObjectKey{Namespace: aaaNS, Name: release}, typ, status, reason, within)
}

// waitConditionOf waits for a condition of the AAACluster key.
func waitConditionOf(t *testing.T, c client.Client, key client.ObjectKey, typ string, status metav1.ConditionStatus, reason string, within time.Duration) *aaav1.AAACluster {
	t.Helper()
	var ac *aaav1.AAACluster
	eventually(t, within, fmt.Sprintf("AAACluster %s %s=%s %s", key, typ, status, reason), func() error {
		ac = &aaav1.AAACluster{}
		if err := c.Get(context.Background(), key, ac); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(ac.Status.Conditions, typ)
		if cond == nil || cond.Status != status || (reason != "" && cond.Reason != reason) || cond.ObservedGeneration != ac.Generation {
			b, _ := json.Marshal(ac.Status.Conditions)
			return fmt.Errorf("conditions: %s", b)
		}
		return nil
	})
	return ac
}

// eventually polls cond every second until it returns nil or within passes; then it fails
// with cond's last error and the cluster's diagnostics.
func eventually(t *testing.T, within time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v\n%s", within, what, err, diagnostics())
		}
		time.Sleep(time.Second)
	}
}

// diagnostics is the cluster's (pods, component logs) with what the AAACluster's tests need
// to read a failure: the pods' CPU and memory as metrics-server saw them (when it runs) and
// the last lines of every policing pod's log.
func diagnostics() string {
	var b strings.Builder
	b.WriteString(cluster.Diagnostics())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := cluster.Kubectl(ctx, "top", "pods", "-n", aaaNS); err == nil {
		fmt.Fprintf(&b, "--- kubectl top pods -n %s\n%s", aaaNS, out)
	}
	if out, err := cluster.Kubectl(ctx, "logs", "-n", aaaNS, "-l", "app.kubernetes.io/component=radius", "--prefix", "--tail=15"); err == nil {
		fmt.Fprintf(&b, "--- policing logs (last 15 lines a pod)\n%s", out)
	}
	return b.String()
}

// policingPod returns the (newest, not terminating) policing pod of dc1; with must, one is
// required.
func policingPod(t *testing.T, c client.Client, must bool) *corev1.Pod {
	t.Helper()
	return policingPodOf(t, c, client.ObjectKey{Namespace: aaaNS, Name: release}, must)
}

// policingPodOf is policingPod of the AAACluster key.
func policingPodOf(t *testing.T, c client.Client, key client.ObjectKey, must bool) *corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(context.Background(), &pods, client.InNamespace(key.Namespace),
		client.MatchingLabels{"aaa.openaaa.io/cluster": key.Name, "aaa.openaaa.io/datacenter": "dc1", "app.kubernetes.io/component": "radius"}); err != nil {
		t.Fatal(err)
	}
	var newest *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if newest == nil || p.CreationTimestamp.After(newest.CreationTimestamp.Time) {
			newest = p
		}
	}
	if newest == nil && must {
		t.Fatalf("no policing pod in %s\n%s", key.Namespace, diagnostics())
	}
	return newest
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

func podState(p *corev1.Pod) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%s phase=%s ready=%v restarts=%d", p.Name, p.Status.Phase, podReady(p), restarts(p))
}

// checkPodSecurity: the policing pod runs as non-root with a read-only root filesystem, no
// privilege escalation and no capabilities — and the kubelet started it so (runAsNonRoot is
// enforced by the kubelet against the image's user).
func checkPodSecurity(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if p.Spec.SecurityContext == nil || p.Spec.SecurityContext.RunAsNonRoot == nil || !*p.Spec.SecurityContext.RunAsNonRoot {
		t.Errorf("pod %s: runAsNonRoot not set", p.Name)
	}
	for _, ctr := range p.Spec.Containers {
		sc := ctr.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || len(sc.Capabilities.Drop) == 0 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("container %s: security context %+v; want read-only root, no privilege escalation, drop ALL", ctr.Name, sc)
		}
	}
	if p.Status.Phase != corev1.PodRunning {
		t.Errorf("pod %s is %s", p.Name, p.Status.Phase)
	}
}

func nodePorts(t *testing.T, c client.Client) (auth, acct int32) {
	t.Helper()
	return nodePortsOf(t, c, client.ObjectKey{Namespace: aaaNS, Name: release + "-dc1-radius"})
}

// nodePortsOf returns the RADIUS NodePorts of the Service key (NodePort, Local).
func nodePortsOf(t *testing.T, c client.Client, key client.ObjectKey) (auth, acct int32) {
	t.Helper()
	svc := &corev1.Service{}
	if err := c.Get(context.Background(), key, svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		t.Errorf("radius Service: type %s, externalTrafficPolicy %s; want NodePort, Local", svc.Spec.Type, svc.Spec.ExternalTrafficPolicy)
	}
	for _, p := range svc.Spec.Ports {
		switch p.Name {
		case "radius-auth":
			auth = p.NodePort
		case "radius-acct":
			acct = p.NodePort
		}
	}
	if auth == 0 || acct == 0 {
		t.Fatalf("radius Service ports: %+v", svc.Spec.Ports)
	}
	return auth, acct
}

// nasRadclient sends one request with radclient from inside the NAS's network namespace (its
// source address is NASIP) and reports whether radclient got an answer.
func nasRadclient(t *testing.T, server, kind, secret string, attrs ...string) (string, bool) {
	t.Helper()
	bin := testenv.LookPath(t, "radclient", "FreeRADIUS's freeradius-utils: make provision")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return radclientRun(clustertest.NASExec(ctx, bin, "-x", "-r", "3", "-t", "2", server, kind, secret), attrs)
}

// hostRadclient sends from the host: the source is the node's own address, no NAS's.
func hostRadclient(t *testing.T, server, kind, secret string, attrs ...string) (string, bool) {
	t.Helper()
	bin := testenv.LookPath(t, "radclient", "FreeRADIUS's freeradius-utils: make provision")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return radclientRun(exec.CommandContext(ctx, bin, "-x", "-r", "2", "-t", "2", server, kind, secret), attrs)
}

func radclientRun(cmd *exec.Cmd, attrs []string) (string, bool) {
	cmd.Stdin = strings.NewReader(strings.Join(attrs, "\n") + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err == nil
}

// adminSessions asks policing's admin API with the token the operator generated (Secret
// <release>-admin-token); the same request without it must get 401 and no session.
func adminSessions(t *testing.T, c client.Client, podIP, user string) []map[string]any {
	t.Helper()
	url := fmt.Sprintf("http://%s:9812/api/v1/sessions?user=%s", podIP, user)
	if code, body := httpGetToken(t, url, ""); code != http.StatusUnauthorized || strings.Contains(body, user) {
		t.Fatalf("admin API without the token: HTTP %d %s; want 401 showing nothing", code, body)
	}
	secret := &corev1.Secret{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: aaaNS, Name: release + "-admin-token"}, secret); err != nil {
		t.Fatalf("the operator's admin token Secret: %v", err)
	}
	var out []map[string]any
	code, body := httpGetToken(t, url, string(secret.Data["token"]))
	if code != http.StatusOK {
		t.Fatalf("admin API with the token: HTTP %d %s", code, body)
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		var wrapped struct {
			Sessions []map[string]any `json:"sessions"`
		}
		if err2 := json.Unmarshal([]byte(body), &wrapped); err2 != nil {
			t.Fatalf("sessions: %v: %s", err, body)
		}
		out = wrapped.Sessions
	}
	return out
}

func httpGetToken(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	hc := http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
