package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	"github.com/openaaa/openaaa/controllers"
	"github.com/openaaa/openaaa/internal/acctcheck"
	"github.com/openaaa/openaaa/test/addons"
	"github.com/openaaa/openaaa/test/cluster/clustertest"
)

// The managed-Cassandra AAACluster: Cassandra run by the real k8ssandra-operator and
// cass-operator (hack/addons.sh install-k8ssandra), one Cassandra node per data center on the
// single node (soft anti-affinity), static volumes of the local StorageClass.
const (
	managedNS      = "aaa-managed"
	managedRelease = "geo"
	// The managed lane's operator: its release and namespace (parallel_test.go).
	managedOperator   = "managed-openaaa-operator"
	managedOperatorNS = "openaaa-managed-system"
	// managedReadyWithin bounds the whole bring-up: k8ssandra-operator creates the
	// datacenters one after another, and each Cassandra node boots in its pod (a JVM start,
	// a first boot, joining the cluster) on two busy cores.
	managedReadyWithin = 20 * time.Minute
	// managedNASSecret is the NAS client's secret in the sample values.
	managedNASSecret = "change-me"
)

var cassDCGVK = schema.GroupVersionKind{Group: "cassandra.datastax.com", Version: "v1beta1", Kind: "CassandraDatacenter"}

// installK8ssandra installs cass-operator and k8ssandra-operator (and imports the Cassandra
// test images) as a user of the local cluster does: hack/addons.sh install-k8ssandra.
func installK8ssandra(t *testing.T, ctx context.Context) {
	t.Helper()
	start := time.Now()
	if out, err := addons.Script(ctx, "install-k8ssandra", cluster.Kubeconfig); err != nil {
		t.Fatalf("%v%s\n%s", err, out, diagnostics())
	}
	t.Logf("k8ssandra-operator and cass-operator installed in %s", time.Since(start).Round(time.Second))
}

// upState is one observation of the bring-up: what a user sees with kubectl.
type upState struct {
	reason, message string // CassandraReady
	ready           bool   // Ready
	dcs, pods       int    // CassandraDatacenters, Cassandra pods ready
	jobs            int    // migration Jobs
	deployments     int    // policing Deployments
	// initialized: the K8ssandraCluster's CassandraInitialized, read after the Jobs and
	// Deployments (it never turns back: a Job seen before it is True is one made too early).
	initialized bool
}

func (s upState) String() string {
	return fmt.Sprintf("CassandraReady %s %q, Ready %v, %d CassandraDatacenters, %d Cassandra pods ready, CassandraInitialized %v, %d schema Jobs, %d policing Deployments",
		s.reason, s.message, s.ready, s.dcs, s.pods, s.initialized, s.jobs, s.deployments)
}

func observeUp(ctx context.Context, c client.Client, key client.ObjectKey) (upState, error) {
	var s upState
	ac := &aaav1.AAACluster{}
	if err := c.Get(ctx, key, ac); err != nil {
		return s, err
	}
	if cond := meta.FindStatusCondition(ac.Status.Conditions, aaav1.ConditionCassandraReady); cond != nil {
		s.reason, s.message = cond.Reason, cond.Message
		if cond.Status == metav1.ConditionTrue {
			s.reason = "True/" + cond.Reason
		}
	}
	s.ready = meta.IsStatusConditionTrue(ac.Status.Conditions, aaav1.ConditionReady)
	dcs := &unstructured.UnstructuredList{}
	dcs.SetGroupVersionKind(cassDCGVK)
	if err := c.List(ctx, dcs, client.InNamespace(key.Namespace)); err != nil {
		return s, err
	}
	s.dcs = len(dcs.Items)
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(key.Namespace), client.HasLabels{"cassandra.datastax.com/datacenter"}); err != nil {
		return s, err
	}
	for i := range pods.Items {
		if podReady(&pods.Items[i]) {
			s.pods++
		}
	}
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.InNamespace(key.Namespace), client.MatchingLabels{controllers.LabelCluster: key.Name, controllers.LabelComponent: "schema-migration"}); err != nil {
		return s, err
	}
	s.jobs = len(jobs.Items)
	var deps appsv1.DeploymentList
	if err := c.List(ctx, &deps, client.InNamespace(key.Namespace), client.MatchingLabels{"aaa.openaaa.io/cluster": key.Name}); err != nil {
		return s, err
	}
	s.deployments = len(deps.Items)
	k8c := &unstructured.Unstructured{}
	k8c.SetGroupVersionKind(controllers.K8ssandraClusterGVK)
	if err := c.Get(ctx, key, k8c); err != nil && !apierrors.IsNotFound(err) {
		return s, err
	}
	conds, _, _ := unstructured.NestedSlice(k8c.Object, "status", "conditions")
	for _, x := range conds {
		if m, _ := x.(map[string]any); m["type"] == "CassandraInitialized" && m["status"] == "True" {
			s.initialized = true
		}
	}
	return s, nil
}

// TestManagedCassandra: the data center lifecycle of an AAACluster whose Cassandra is
// managed (no `external`), through the real k8ssandra-operator and cass-operator, with what
// the AAACluster says at each step asserted while it happens (managedUp, managed_dc_test.go):
//  1. dc1 comes up: K8ssandraCluster → CassandraDatacenter → Cassandra pod Ready → schema
//     Job → policing; the NAS's flow is in dc1, read there at LOCAL_QUORUM;
//  2. dc2 added: it streams dc1's data (k8ssandra-operator's rebuild) and serves; the flow
//     with each message of a session to the next data center's Service is in both;
//  3. dc2 lost under traffic (its policing, then its Cassandra pods killed, kept gone): the
//     NAS fails over, dc1 holds every record; dc2 back and repaired holds them all;
//  4. dc2 removed from the spec: the keyspace leaves it before its CassandraDatacenter does;
//     k8ssandra-operator v1.26.0 then cannot finish (removeDatacenter) and the AAACluster
//     says so; dc1 holds every record; dc2 put back and repaired holds them too.
//
// At most two data centers at once: the cold `make test` budget. Three at once, one lost:
// TestGeoThreeDatacenters (make test-cluster-geo).
func TestManagedCassandra(t *testing.T) {
	clustertest.Skip(t, cluster)
	t.Parallel() // beside the serial lane: parallel_test.go
	m := managedUp(t, "dc1")
	acked := []string{managedFlow(t, m, []string{"dc1"}, 30*time.Second)}
	m.missingIn(t, "dc1", acked...)

	addDatacenter(t, m, "dc1", "dc2")
	acked = append(acked, managedFlow(t, m, []string{"dc1", "dc2"}, 30*time.Second))
	for _, dc := range []string{"dc1", "dc2"} {
		m.missingIn(t, dc, acked...)
	}
	if t.Failed() {
		return
	}

	acked = append(acked, loseDatacenter(t, m, []string{"dc1", "dc2"}, "dc2", acked, controllers.LabelDC, cassDCLabel))
	m.missingIn(t, "dc2", acked...)

	putBack := removeDatacenter(t, m, "dc2", "dc1")
	m.missingIn(t, "dc1", acked...)
	if putBack {
		m.missingIn(t, "dc2", acked...)
	}
}

// managed is a managed-Cassandra AAACluster that managedUp brought up.
type managed struct {
	ctx              context.Context
	c                client.Client
	key              client.ObjectKey
	root, helm       string
	creds            *corev1.Secret // k8ssandra-operator's superuser
	values, override string         // the sample's values and the data centers over them
}

// managedUp installs k8ssandra-operator, cass-operator and our operator, then the sample's
// AAACluster (config/samples/cluster-managed-values.yaml) with data centers dcs, and follows
// its bring-up: K8ssandraCluster → CassandraDatacenters → Cassandra pods Ready → schema Job
// → policing per DC, with the conditions telling which step it is at all along. Everything
// goes when the test ends.
func managedUp(t *testing.T, dcs ...string) *managed {
	clustertest.Skip(t, cluster)
	root, helm, tag := needOperatorImages(t)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	t.Cleanup(cancel)
	// Only what managed Cassandra needs (cert-manager included: install-k8ssandra installs it
	// for the operators' webhook certificates), not the monitoring add-ons.
	addons.NeedBuiltK8ssandra(t)
	installK8ssandra(t, ctx)
	m := &managed{ctx: ctx, c: aaaClient(t), key: client.ObjectKey{Namespace: managedNS, Name: managedRelease}, root: root, helm: helm,
		values: filepath.Join(root, "config", "samples", "cluster-managed-values.yaml")}
	c, key := m.c, m.key

	mustApply(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managedNS}})
	mustApply(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "subscribers", Namespace: managedNS, Labels: watched},
		Data: map[string]string{"subscribers.yaml": subscribersYAML(loadUsers, "")}})
	// An operator of its own, beside the serial lane's (parallel_test.go).
	installOperatorRelease(t, ctx, helm, root, tag, managedOperator, managedOperatorNS, managedNS, "--set", "crds.enabled=false")
	t.Cleanup(func() {
		runHelm(t, context.Background(), helm, "uninstall", managedOperator, "-n", managedOperatorNS, "--wait", "--timeout", "2m")
	})
	// The values a user of the local cluster writes (docs/local-cluster.md), with the data
	// centers asked for.
	m.override = datacentersOverride(t, m.values, dcs...)
	runHelm(t, ctx, helm, "install", managedRelease, filepath.Join(root, "charts", "aaacluster"), "-n", managedNS, "-f", m.values, "-f", m.override)
	t.Cleanup(func() { uninstallManaged(t, c, helm) })

	// The bring-up, observed every second: each distinct state is logged, and the order of
	// the steps is checked as it happens.
	began := time.Now()
	var seen []upState
	var last upState
	eventually(t, managedReadyWithin, "the managed AAACluster Ready", func() error {
		s, err := observeUp(ctx, c, key)
		if err != nil {
			return err
		}
		if s != last {
			t.Logf("+%s: %s", time.Since(began).Round(time.Second), s)
			seen = append(seen, s)
			last = s
		}
		// The AAACluster's status is written at the end of the reconcile that made the Job,
		// so it may lag the Job: the order is checked on the K8ssandraCluster's own condition.
		if !s.initialized && (s.jobs > 0 || s.deployments > 0) {
			t.Fatalf("schema Job or policing before the K8ssandraCluster was initialized: %s", s)
		}
		if !s.ready {
			return fmt.Errorf("%s", s)
		}
		return nil
	})
	t.Logf("managed AAACluster Ready in %s", time.Since(began).Round(time.Second))
	initializing := false
	for _, s := range seen {
		named := true
		for _, dc := range dcs {
			named = named && strings.Contains(s.message, dc)
		}
		if s.reason == controllers.ReasonCassandraInit && named {
			initializing = true
		}
	}
	if !initializing {
		t.Errorf("CassandraReady never said %s naming each datacenter's progress; seen:\n%v", controllers.ReasonCassandraInit, seen)
	}

	ac := &aaav1.AAACluster{}
	if err := c.Get(ctx, key, ac); err != nil {
		t.Fatal(err)
	}
	var repl []string
	for _, dc := range dcs {
		repl = append(repl, dc+":1")
	}
	if want := strings.Join(repl, ","); ac.Status.Schema == nil || ac.Status.Schema.Replication != want {
		t.Errorf("schema status %+v, want replication %s", ac.Status.Schema, want)
	}
	for _, ds := range ac.Status.Datacenters {
		if !ds.CassandraReady {
			t.Errorf("status.datacenters %s: cassandraReady false in a Ready AAACluster", ds.Name)
		}
	}
	k8c := &unstructured.Unstructured{}
	k8c.SetGroupVersionKind(controllers.K8ssandraClusterGVK)
	if err := c.Get(ctx, key, k8c); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(k8c, ac) {
		t.Errorf("K8ssandraCluster not controlled by the AAACluster")
	}
	m.creds = &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: managedRelease + "-superuser"}, m.creds); err != nil {
		t.Fatalf("k8ssandra-operator's superuser Secret: %v", err)
	}
	if m.creds.Labels[controllers.WatchLabel] != controllers.WatchLabelValue {
		t.Errorf("the superuser Secret is not adopted (label %s): %v", controllers.WatchLabel, m.creds.Labels)
	}
	if t.Failed() {
		t.FailNow()
	}
	return m
}

// managedFlow runs aaa-loadgen from the NAS namespace against the NodePorts of data centers
// dcs, round-robin (each message of a session to the next data center), and returns the file
// of acknowledged accounting records.
func managedFlow(t *testing.T, m *managed, dcs []string, d time.Duration) string {
	t.Helper()
	return startFlow(t, m, dcs, d)()
}

// startFlow starts managedFlow's aaa-loadgen and returns what waits for it to end.
func startFlow(t *testing.T, m *managed, dcs []string, d time.Duration) (wait func() string) {
	t.Helper()
	ctx, c, root := m.ctx, m.c, m.root
	loadgen := filepath.Join(t.TempDir(), "aaa-loadgen")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", loadgen, filepath.Join(root, "services", "loadgen")).CombinedOutput(); err != nil {
		t.Fatalf("building aaa-loadgen: %v\n%s", err, out)
	}
	var targets []string
	for _, dc := range dcs {
		auth, acct := nodePortsOf(t, c, client.ObjectKey{Namespace: managedNS, Name: managedRelease + "-" + dc + "-radius"})
		targets = append(targets, fmt.Sprintf("%s=%s:%d/%d", dc, clustertest.NodeIP, auth, acct))
	}
	acked := filepath.Join(t.TempDir(), "acked")
	report := filepath.Join(t.TempDir(), "report.json")
	lctx, lcancel := context.WithTimeout(ctx, d+2*time.Minute)
	run := clustertest.NASExec(lctx, loadgen, "run", "--quiet", "--target", strings.Join(targets, ","),
		"--distribution", "round-robin", "--failover", "--nas-ip", clustertest.NASIP,
		"--secret", managedNASSecret, "--users", fmt.Sprint(loadUsers), "--framed-ip-base", "198.19.0.1",
		"--concurrency", "8", "--duration", d.String(), "--timeout", "2s", "--retries", "6",
		"--acked-out", acked, "--json-out", report)
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		lcancel()
		t.Fatalf("aaa-loadgen: %v", err)
	}
	return func() string {
		t.Helper()
		defer lcancel()
		if err := run.Wait(); err != nil {
			t.Fatalf("aaa-loadgen: %v\n%s", err, out.String())
		}
		var r struct {
			Sessions      uint64 `json:"sessions"`
			AcctResponses uint64 `json:"acctResponses"`
			Timeouts      uint64 `json:"timeouts"`
		}
		b, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		t.Logf("NAS flow over %s: %d sessions, %d accounting records acknowledged, %d timeouts", strings.Join(dcs, " and "), r.Sessions, r.AcctResponses, r.Timeouts)
		if r.AcctResponses == 0 {
			t.Fatalf("no accounting record acknowledged:\n%s", b)
		}
		return acked
	}
}

// missingIn reads acct_history in data center dc, through its Cassandra pod at LOCAL_QUORUM
// with k8ssandra-operator's superuser, and fails on any record of ackedFiles it lacks.
func (m *managed) missingIn(t *testing.T, dc string, ackedFiles ...string) {
	t.Helper()
	ctx, c, creds := m.ctx, m.c, m.creds
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(managedNS), client.MatchingLabels{"cassandra.datastax.com/datacenter": dc}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 || pods.Items[0].Status.PodIP == "" {
		t.Fatalf("no Cassandra pod in %s", dc)
	}
	auth := gocql.PasswordAuthenticator{Username: string(creds.Data["username"]), Password: string(creds.Data["password"])}
	s, err := acctcheck.Connect(pods.Items[0].Status.PodIP+":9042", dc, "openaaa", auth)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h, err := acctcheck.ReadHistory(s, gocql.LocalQuorum)
	if err != nil {
		t.Fatal(err)
	}
	acked, err := acctcheck.ReadAcked(ackedFiles)
	if err != nil {
		t.Fatal(err)
	}
	if missing, samples := acctcheck.Missing(acked, h); missing > 0 {
		t.Errorf("%s at LOCAL_QUORUM lacks %d acknowledged records: %v", dc, missing, samples)
	} else {
		t.Logf("%s holds every acknowledged record of %d sessions", dc, len(acked))
	}
}

// uninstallManaged removes the AAACluster release and waits until k8ssandra-operator has
// removed its Cassandra (CassandraDatacenters, pods), then the volumes' claims.
func uninstallManaged(t *testing.T, c client.Client, helm string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_ = exec.CommandContext(ctx, helm, "--kubeconfig", cluster.Kubeconfig, "uninstall", managedRelease, "-n", managedNS, "--wait").Run()
	// A CassandraDatacenter k8ssandra-operator no longer tracks (one it failed to remove)
	// outlives its K8ssandraCluster: deleted as its owner would.
	left := &unstructured.Unstructured{}
	left.SetGroupVersionKind(cassDCGVK)
	_ = c.DeleteAllOf(ctx, left, client.InNamespace(managedNS))
	eventually(t, 4*time.Minute, "the managed Cassandra removed", func() error {
		dcs := &unstructured.UnstructuredList{}
		dcs.SetGroupVersionKind(cassDCGVK)
		if err := c.List(ctx, dcs, client.InNamespace(managedNS)); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if n := len(dcs.Items); n > 0 {
			return fmt.Errorf("%d CassandraDatacenters left", n)
		}
		return nil
	})
	_ = c.DeleteAllOf(ctx, &corev1.PersistentVolumeClaim{}, client.InNamespace(managedNS))
}
