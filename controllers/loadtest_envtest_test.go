package controllers

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	"github.com/openaaa/openaaa/services/loadgen/summary"
)

// The AAALoadTest tests run on an API server of their own with only the AAALoadTest controller:
// the test plays the AAACluster controller (the cluster's status), the Job controller and the
// kubelet (the Job's pod and its termination message).

var (
	loadTestEnvOnce sync.Once
	loadTestEnvVal  *testEnv
	loadTestEnvErr  error
)

func loadTestEnv(t *testing.T) *testEnv {
	t.Helper()
	assets, _ := requireEnvtest(t, false)
	loadTestEnvOnce.Do(func() {
		loadTestEnvVal, loadTestEnvErr = startEnvWith(assets, []string{filepath.Join("..", "config", "crd", "bases")},
			func(mgr ctrl.Manager, te *testEnv) error {
				te.lt = &AAALoadTestReconciler{
					Client:    interceptor.NewClient(noWatch{mgr.GetClient()}, te.writes.funcs()),
					APIReader: mgr.GetAPIReader(),
					Scheme:    mgr.GetScheme(),
					Recorder:  te.recorder,
					Options:   Options{LoadgenImage: "registry.test/openaaa/aaa-loadgen", Version: "v9.9.9"},
				}
				return te.lt.SetupWithManager(mgr)
			})
	})
	if loadTestEnvErr != nil {
		t.Fatalf("envtest: %v", loadTestEnvErr)
	}
	return loadTestEnvVal
}

func newLoadTest(ns, name, cluster string) *aaav1.AAALoadTest {
	return &aaav1.AAALoadTest{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: aaav1.AAALoadTestSpec{
			Cluster:   aaav1.LoadTestClusterRef{Name: cluster},
			Load:      aaav1.LoadTestLoad{Duration: "30s"},
			SecretRef: aaav1.SecretKeyRef{Name: "nas"},
		},
	}
}

// readyCluster creates an AAACluster with dc1 and dc2 and, playing its controller, reports the
// given data centers ready.
func (te *testEnv) readyCluster(t *testing.T, ns, name string, ready ...string) *aaav1.AAACluster {
	t.Helper()
	c := minimalCluster(ns, name)
	if err := te.c.Create(bg, c); err != nil {
		t.Fatal(err)
	}
	te.setClusterReady(t, c, ready...)
	return c
}

func (te *testEnv) setClusterReady(t *testing.T, c *aaav1.AAACluster, ready ...string) {
	t.Helper()
	eventually(t, wait, "cluster status", func() error {
		cur := &aaav1.AAACluster{}
		if err := te.c.Get(bg, client.ObjectKeyFromObject(c), cur); err != nil {
			return err
		}
		cur.Status.Datacenters = nil
		for _, dc := range cur.Spec.Datacenters {
			cur.Status.Datacenters = append(cur.Status.Datacenters, aaav1.DatacenterStatus{Name: dc.Name, Ready: slices.Contains(ready, dc.Name)})
		}
		return te.c.Status().Update(bg, cur)
	})
}

func (te *testEnv) waitLoadTest(t *testing.T, ns, name, what string, cond func(*aaav1.AAALoadTest) error) *aaav1.AAALoadTest {
	t.Helper()
	lt := &aaav1.AAALoadTest{}
	eventually(t, wait, what, func() error {
		if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: name}, lt); err != nil {
			return err
		}
		return cond(lt)
	})
	return lt
}

// hasCondition checks a condition's status and reason, and that it is of the current generation.
func hasCondition(lt *aaav1.AAALoadTest, typ string, status metav1.ConditionStatus, reason string) error {
	c := meta.FindStatusCondition(lt.Status.Conditions, typ)
	if c == nil || c.Status != status || c.Reason != reason || c.ObservedGeneration != lt.Generation {
		return fmt.Errorf("condition %s: %+v (phase %s), want %s/%s", typ, c, lt.Status.Phase, status, reason)
	}
	return nil
}

func (te *testEnv) waitLoadgenJob(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{}
	eventually(t, wait, "Job "+name+"-loadgen", func() error {
		return te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: name + "-loadgen"}, job)
	})
	return job
}

// runPod plays the Job controller and the kubelet: the Job's pod ran and its load generator
// container terminated with exitCode and message (the termination message).
func (te *testEnv) runPod(t *testing.T, job *batchv1.Job, exitCode int32, message string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name + "-abcde", Labels: job.Spec.Template.Labels},
		Spec:       *job.Spec.Template.Spec.DeepCopy(),
	}
	if err := te.c.Create(bg, pod); err != nil {
		t.Fatalf("create the Job's pod: %v", err)
	}
	now := metav1.Now()
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodSucceeded,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: loadgenContainer, Image: pod.Spec.Containers[0].Image, ImageID: "sha256:0123",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: exitCode, Reason: "Completed", Message: message, StartedAt: now, FinishedAt: now,
			}},
		}},
	}
	if exitCode != 0 {
		pod.Status.Phase = corev1.PodFailed
		pod.Status.ContainerStatuses[0].State.Terminated.Reason = "Error"
	}
	if err := te.c.Status().Update(bg, pod); err != nil {
		t.Fatalf("pod status: %v", err)
	}
}

// endPod runs the Job's pod to exitCode and message (runPod), then ends the Job as that exit
// code says: complete on 0, failed otherwise.
func (te *testEnv) endPod(t *testing.T, job *batchv1.Job, exitCode int32, message string) {
	t.Helper()
	te.runPod(t, job, exitCode, message)
	te.finishJob(t, job, exitCode == 0)
}

// TestLoadTestValidation: the API server rejects invalid AAALoadTests with messages naming the
// field, and any change of the spec.
func TestLoadTestValidation(t *testing.T) {
	te := loadTestEnv(t)
	ns := te.newNamespace(t, "ltvalid")
	cases := []struct {
		name   string
		mutate func(*aaav1.AAALoadTest)
		want   []string
	}{
		{"duration above 1h", func(l *aaav1.AAALoadTest) { l.Spec.Load.Duration = "61m" }, []string{"spec.load.duration", "at most 1h"}},
		{"zero duration", func(l *aaav1.AAALoadTest) { l.Spec.Load.Duration = "0s" }, []string{"spec.load.duration"}},
		{"not a duration", func(l *aaav1.AAALoadTest) { l.Spec.Load.Duration = "ten minutes" }, []string{"spec.load.duration"}},
		{"ramp not shorter than duration", func(l *aaav1.AAALoadTest) { l.Spec.Load.Ramp = "30s" }, []string{"spec.load.ramp", "shorter than spec.load.duration"}},
		{"concurrency too high", func(l *aaav1.AAALoadTest) { l.Spec.Load.Concurrency = 5000 }, []string{"spec.load.concurrency"}},
		{"rate zero", func(l *aaav1.AAALoadTest) { l.Spec.Load.Rate = ptr.To[int32](0) }, []string{"spec.load.rate"}},
		{"unknown distribution", func(l *aaav1.AAALoadTest) { l.Spec.Distribution = "random" }, []string{"spec.distribution"}},
		{"interims in auth mode", func(l *aaav1.AAALoadTest) { l.Spec.Flow = aaav1.LoadTestFlow{Mode: "auth", Interims: ptr.To[int32](3)} },
			[]string{"spec.flow.interims", "auth mode"}},
		{"too many interims", func(l *aaav1.AAALoadTest) { l.Spec.Flow.Interims = ptr.To[int32](1000) }, []string{"spec.flow.interims"}},
		{"NAS timeout too long", func(l *aaav1.AAALoadTest) { l.Spec.NAS.Timeout = "1m" }, []string{"spec.nas.timeout", "between 10ms and 30s"}},
		{"no secret name", func(l *aaav1.AAALoadTest) { l.Spec.SecretRef.Name = "" }, []string{"spec.secretRef.name"}},
		{"invalid datacenter name", func(l *aaav1.AAALoadTest) { l.Spec.Datacenters = []string{"DC_1"} }, []string{"spec.datacenters[0]"}},
		{"user pattern without %d", func(l *aaav1.AAALoadTest) { l.Spec.Users.UserPattern = "user" }, []string{"spec.users.userPattern"}},
		{"no cluster name", func(l *aaav1.AAALoadTest) { l.Spec.Cluster.Name = "" }, []string{"spec.cluster.name"}},
		{"name too long", func(l *aaav1.AAALoadTest) { l.Name = strings.Repeat("x", 53) }, []string{"metadata.name", "at most 52"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lt := newLoadTest(ns, "invalid", "aaa")
			tc.mutate(lt)
			err := te.c.Create(bg, lt)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q: %v", w, err)
				}
			}
		})
	}

	// The samples of config/samples are valid: the full-size one and make cluster-demo's.
	for _, name := range []string{"aaa_v1alpha1_aaaloadtest.yaml", "cluster-demo-loadtest.yaml"} {
		raw, err := os.ReadFile(filepath.Join("..", "config", "samples", name))
		if err != nil {
			t.Fatal(err)
		}
		docs := strings.Split(string(raw), "\n---\n")
		sample := &aaav1.AAALoadTest{}
		if err := yaml.UnmarshalStrict([]byte(docs[len(docs)-1]), sample); err != nil || sample.Kind != "AAALoadTest" {
			t.Fatalf("sample %s: %v", name, err)
		}
		sample.Namespace = ns
		if err := te.c.Create(bg, sample); err != nil {
			t.Errorf("the sample AAALoadTest of %s is rejected: %v", name, err)
		}
	}

	// A valid one is accepted with its defaults, and its spec cannot change.
	lt := newLoadTest(ns, "valid", "aaa")
	if err := te.c.Create(bg, lt); err != nil {
		t.Fatalf("valid AAALoadTest rejected: %v", err)
	}
	if lt.Spec.Distribution != "round-robin" || lt.Spec.Load.Concurrency != 16 || lt.Spec.Flow.Mode != "flow" || lt.Spec.NAS.Timeout != "1s" {
		t.Errorf("defaults: %+v", lt.Spec)
	}
	// The operator writes the status meanwhile: retry on a conflict, on the fresh object.
	eventually(t, wait, "spec change rejected", func() error {
		cur := &aaav1.AAALoadTest{}
		if err := te.c.Get(bg, client.ObjectKeyFromObject(lt), cur); err != nil {
			return err
		}
		cur.Spec.Load.Duration = "10s"
		err := te.c.Update(bg, cur)
		switch {
		case err == nil:
			t.Fatal("spec change accepted")
		case apierrors.IsConflict(err):
			return err
		case !strings.Contains(err.Error(), "spec is immutable"):
			t.Fatalf("spec change: %v", err)
		}
		return nil
	})
}

// TestLoadTestRun: a valid AAALoadTest waits for its cluster, creates the Job with the
// expected pod, and reports the per-DC and total figures of the pod's termination message,
// with conditions, events and printer columns; then it goes quiet.
func TestLoadTestRun(t *testing.T) {
	te := loadTestEnv(t)
	ns := te.newNamespace(t, "ltrun")
	te.createSecret(t, ns, "nas", map[string]string{"secret": "testing123"})
	c := te.readyCluster(t, ns, "aaa") // no data center ready yet

	// A ready policing pod in dc1: aaa-loadgen reads its /metrics.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aaa-dc1-0", Labels: podSelector(c, "dc1")},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "policing", Image: "p"}}},
	}
	if err := te.c.Create(bg, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.2.3", PodIPs: []corev1.PodIP{{IP: "10.1.2.3"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}}
	if err := te.c.Status().Update(bg, pod); err != nil {
		t.Fatal(err)
	}

	lt := newLoadTest(ns, "capacity", "aaa")
	lt.Spec.Load.Concurrency = 32
	lt.Spec.Load.Ramp = "5s"
	if err := te.c.Create(bg, lt); err != nil {
		t.Fatal(err)
	}
	te.waitLoadTest(t, ns, "capacity", "Pending: cluster not ready", func(l *aaav1.AAALoadTest) error {
		if l.Status.Phase != aaav1.LoadTestPending {
			return fmt.Errorf("phase %q", l.Status.Phase)
		}
		return hasCondition(l, aaav1.ConditionReady, metav1.ConditionFalse, ReasonClusterNotReady)
	})
	if ok, _ := te.exists(&batchv1.Job{ObjectMeta: objKey(ns, "capacity-loadgen")}); ok {
		t.Fatal("Job created before the cluster was ready")
	}

	te.setClusterReady(t, c, "dc1", "dc2")
	job := te.waitLoadgenJob(t, ns, "capacity")
	if !metav1.IsControlledBy(job, te.waitLoadTest(t, ns, "capacity", "uid", func(*aaav1.AAALoadTest) error { return nil })) {
		t.Error("the Job is not controlled by the AAALoadTest")
	}
	if ptr.Deref(job.Spec.BackoffLimit, -1) != 0 || ptr.Deref(job.Spec.ActiveDeadlineSeconds, 0) != 30+3+120 || job.Spec.TTLSecondsAfterFinished != nil {
		t.Errorf("Job spec: backoffLimit %v activeDeadlineSeconds %v ttl %v", job.Spec.BackoffLimit, job.Spec.ActiveDeadlineSeconds, job.Spec.TTLSecondsAfterFinished)
	}
	ps := job.Spec.Template.Spec
	if len(ps.Containers) != 1 {
		t.Fatalf("%d containers", len(ps.Containers))
	}
	ctr := ps.Containers[0]
	if ctr.Image != "registry.test/openaaa/aaa-loadgen:v9.9.9" || ctr.TerminationMessagePath != "/dev/termination-log" ||
		ctr.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError || ps.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("container: image %s, termination message %s %s, restart %s", ctr.Image, ctr.TerminationMessagePath, ctr.TerminationMessagePolicy, ps.RestartPolicy)
	}
	sc := ctr.SecurityContext
	if sc == nil || !ptr.Deref(sc.RunAsNonRoot, false) || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		ps.SecurityContext == nil || ps.SecurityContext.SeccompProfile == nil || ps.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("security context: %+v / %+v", sc, ps.SecurityContext)
	}
	args := strings.Join(ctr.Args, " ")
	for _, want := range []string{
		"--target dc1=aaa-dc1-radius." + ns + ".svc:1812/1813",
		"--target dc2=aaa-dc2-radius." + ns + ".svc:1812/1813",
		"--metrics dc1=http://10.1.2.3:9812/metrics",
		"--summary-file /dev/termination-log",
		"--distribution round-robin", "--concurrency 32", "--duration 30s", "--ramp 5s", "--interims 5",
		"--secret-file /etc/aaa-loadgen/secret/secret", "--nas-ip $(POD_IP)",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("args lack %q: %s", want, args)
		}
	}
	if strings.Contains(args, "--metrics dc2") {
		t.Errorf("dc2 has no ready pod, yet its metrics are read: %s", args)
	}
	te.waitLoadTest(t, ns, "capacity", "Running", func(l *aaav1.AAALoadTest) error {
		if l.Status.Phase != aaav1.LoadTestRunning || l.Status.StartTime == nil || l.Status.Job != job.Name {
			return fmt.Errorf("status %+v", l.Status)
		}
		return hasCondition(l, aaav1.ConditionComplete, metav1.ConditionFalse, ReasonRunning)
	})

	// The run ends: the report is in the termination message.
	out1, busy1, wk1 := 14000.0, 12.25, 64.0
	msg, err := summary.Marshal(summary.Summary{
		Seconds: 30, Sent: 300500, Sessions: 21000, SessionsDone: 20990,
		Figures: summary.Figures{IncomingTPS: 10012.34, OutgoingTPS: &out1, WorkersBusy: &busy1, Workers: &wk1,
			AvgAuthMs: 2.5, AvgAcctMs: 4.25, P99Ms: 17.5, Answered: 300370, Timeouts: 130, Accepts: 21000},
		Targets: []summary.Target{
			{Name: "dc1", Figures: summary.Figures{IncomingTPS: 5006.2, OutgoingTPS: &out1, WorkersBusy: &busy1, Workers: &wk1, AvgAuthMs: 2.4, AvgAcctMs: 4.0, P99Ms: 15, Answered: 150185, Timeouts: 65, Accepts: 10500}},
			{Name: "dc2", Figures: summary.Figures{IncomingTPS: 5006.1, AvgAuthMs: 2.6, AvgAcctMs: 4.5, P99Ms: 20, Answered: 150185, Timeouts: 65, Accepts: 10500}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	te.endPod(t, job, 0, string(msg))
	done := te.waitLoadTest(t, ns, "capacity", "Succeeded", func(l *aaav1.AAALoadTest) error {
		if l.Status.Phase != aaav1.LoadTestSucceeded {
			return fmt.Errorf("phase %q: %+v", l.Status.Phase, l.Status.Conditions)
		}
		for _, e := range []error{
			hasCondition(l, aaav1.ConditionComplete, metav1.ConditionTrue, ReasonCompleted),
			hasCondition(l, aaav1.ConditionReady, metav1.ConditionTrue, ReasonCompleted),
			hasCondition(l, aaav1.ConditionFailed, metav1.ConditionFalse, ReasonAsExpected),
		} {
			if e != nil {
				return e
			}
		}
		return nil
	})
	r := done.Status.Report
	if r == nil || r.IncomingTPS != "10012.3" || r.OutgoingTPS != "14000.0" || r.WorkersBusy != "12.2" || r.Workers != "64" ||
		r.AvgAuthMs != "2.500" || r.AvgAcctMs != "4.250" || r.P99Ms != "17.500" || r.Timeouts != 130 || r.Sessions != 21000 || r.Seconds != "30.0" {
		t.Errorf("total report: %+v", r)
	}
	if d := done.Status.Datacenters; len(d) != 2 || d[0].Name != "dc1" || d[0].IncomingTPS != "5006.2" || d[0].OutgoingTPS != "14000.0" ||
		d[1].Name != "dc2" || d[1].P99Ms != "20.000" || d[1].OutgoingTPS != "" || d[1].Accepts != 10500 {
		t.Errorf("per-DC report: %+v", d)
	}
	if done.Status.CompletionTime == nil {
		t.Error("no completionTime")
	}

	// kubectl get: the API server's table of the printer columns.
	cols := te.printerTable(t, ns, "capacity")
	for col, want := range map[string]string{"Phase": "Succeeded", "TPS": "10012.3", "Auth ms": "2.500", "Acct ms": "4.250", "p99 ms": "17.500"} {
		if got := cols[col]; got != want {
			t.Errorf("column %s = %q, want %q (%v)", col, got, want, cols)
		}
	}
	if _, ok := cols["Age"]; !ok {
		t.Errorf("no Age column: %v", cols)
	}

	eventually(t, wait, "events", func() error {
		if !te.recorder.has(ns, "Normal "+ReasonLoadTestStarted) || !te.recorder.has(ns, "Normal "+ReasonCompleted) {
			return joinErr(te.recorder.events(ns))
		}
		return nil
	})

	// Quiet: a finished run writes nothing more, even when its Job or cluster changes.
	writes, _ := te.writes.get(ns)
	events := len(te.recorder.events(ns))
	j := &batchv1.Job{}
	if err := te.c.Get(bg, client.ObjectKeyFromObject(job), j); err != nil {
		t.Fatal(err)
	}
	j.Labels["poke"] = "1"
	if err := te.c.Update(bg, j); err != nil {
		t.Fatal(err)
	}
	te.setClusterReady(t, c, "dc1")
	consistently(t, 3*time.Second, "a finished load test stays quiet", func() error {
		if n, log := te.writes.get(ns); n != writes {
			return fmt.Errorf("%d writes after the run ended: %v", n-writes, log[writes:])
		}
		if n := len(te.recorder.events(ns)); n != events {
			return fmt.Errorf("%d events after the run ended", n-events)
		}
		return nil
	})
}

// printerTable asks the API server for the Table form of an AAALoadTest (what kubectl get
// prints) and returns column name → cell.
func (te *testEnv) printerTable(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	hc, err := rest.HTTPClientFor(te.cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(te.cfg.Host, "/")+"/apis/aaa.openaaa.io/v1alpha1/namespaces/"+ns+"/aaaloadtests/"+name, nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil || len(table.Rows) != 1 {
		t.Fatalf("table: %v: %s", err, body)
	}
	out := map[string]string{}
	for i, c := range table.ColumnDefinitions {
		if i < len(table.Rows[0].Cells) {
			out[c.Name] = fmt.Sprint(table.Rows[0].Cells[i])
		}
	}
	return out
}

// TestLoadTestFailures: a failed Job gives the Failed condition with a reason; an error in
// the summary says what aaa-loadgen could not do; a completed Job without a report is not a
// success; a cluster in another namespace is refused.
func TestLoadTestFailures(t *testing.T) {
	te := loadTestEnv(t)
	ns := te.newNamespace(t, "ltfail")
	te.createSecret(t, ns, "nas", map[string]string{"secret": "testing123"})
	te.readyCluster(t, ns, "aaa", "dc1", "dc2")

	start := func(name string) *batchv1.Job {
		t.Helper()
		if err := te.c.Create(bg, newLoadTest(ns, name, "aaa")); err != nil {
			t.Fatal(err)
		}
		return te.waitLoadgenJob(t, ns, name)
	}
	waitFailed := func(name, reason, inMessage string) {
		t.Helper()
		l := te.waitLoadTest(t, ns, name, name+" Failed/"+reason, func(l *aaav1.AAALoadTest) error {
			if l.Status.Phase != aaav1.LoadTestFailed {
				return fmt.Errorf("phase %q", l.Status.Phase)
			}
			if err := hasCondition(l, aaav1.ConditionFailed, metav1.ConditionTrue, reason); err != nil {
				return err
			}
			return hasCondition(l, aaav1.ConditionReady, metav1.ConditionFalse, reason)
		})
		if m := meta.FindStatusCondition(l.Status.Conditions, aaav1.ConditionFailed).Message; !strings.Contains(m, inMessage) {
			t.Errorf("%s: Failed message %q lacks %q", name, m, inMessage)
		}
		if l.Status.Report != nil || l.Status.CompletionTime == nil {
			t.Errorf("%s: report %+v completionTime %v", name, l.Status.Report, l.Status.CompletionTime)
		}
	}

	// The deadline passed before the pod ended.
	job := start("deadline")
	te.endJob(t, job, false, batchv1.JobReasonDeadlineExceeded)
	waitFailed("deadline", ReasonDeadlineExceeded, "DeadlineExceeded")

	// The pod ends with exitCode and message: the load test fails with reason.
	podFails := func(name string, exitCode int32, message, reason, inMessage string) {
		t.Helper()
		te.endPod(t, start(name), exitCode, message)
		waitFailed(name, reason, inMessage)
	}

	// aaa-loadgen exited 1 without a summary: the kubelet put the end of its log there.
	podFails("crashed", 1, "aaa-loadgen: target aaa-dc1-radius: no such host", ReasonLoadTestJobFailed, "no such host")

	// aaa-loadgen said why in its summary.
	msg, _ := summary.Marshal(summary.Summary{Error: "metrics before the run: connection refused"})
	podFails("refused", 1, string(msg), ReasonLoadgenFailed, "connection refused")

	// The Job completed but the message is no report.
	podFails("garbled", 0, "hello", ReasonReportUnreadable, "no report")

	// Issue 32: the run completed and nothing was answered (policing dropped every request as
	// unknown_client): Failed with a reason naming it, Ready=False, a Warning; the report and
	// policing's drop reasons are in status.
	msg, _ = summary.Marshal(summary.Summary{Seconds: 30, Sent: 1140, Figures: summary.Figures{Timeouts: 1140},
		Dropped: map[string]uint64{"unknown_client": 3553}})
	te.endPod(t, start("unanswered"), 0, string(msg))
	un := te.waitLoadTest(t, ns, "unanswered", "unanswered Failed/NoAnswer", func(l *aaav1.AAALoadTest) error {
		if l.Status.Phase != aaav1.LoadTestFailed {
			return fmt.Errorf("phase %q", l.Status.Phase)
		}
		if err := hasCondition(l, aaav1.ConditionFailed, metav1.ConditionTrue, ReasonNoAnswer); err != nil {
			return err
		}
		return hasCondition(l, aaav1.ConditionReady, metav1.ConditionFalse, ReasonNoAnswer)
	})
	if m := meta.FindStatusCondition(un.Status.Conditions, aaav1.ConditionReady).Message; !strings.Contains(m, "no request was answered") || !strings.Contains(m, "unknown_client=3553") {
		t.Errorf("Ready message %q names neither the cause nor the drops", m)
	}
	if r := un.Status.Report; r == nil || r.Timeouts != 1140 || r.Sent != 1140 || r.DroppedByReason["unknown_client"] != 3553 {
		t.Errorf("report of the failed run: %+v", r)
	}
	if c := un.Spec.SuccessCriteria; c.MinAnsweredRatio != "0.99" || c.MaxTimeoutRatio != "0.01" || c.MaxErrors == nil || *c.MaxErrors != 0 || c.MaxRejectRatio != "0.01" {
		t.Errorf("success criteria not defaulted by the API server: %+v", c)
	}
	eventually(t, wait, "Warning NoAnswer", func() error {
		if !te.recorder.has(ns, "Warning "+ReasonNoAnswer) || te.recorder.has(ns, "Normal "+ReasonCompleted) {
			return joinErr(te.recorder.events(ns))
		}
		return nil
	})

	// A data center the cluster does not have.
	bad := newLoadTest(ns, "nodc", "aaa")
	bad.Spec.Datacenters = []string{"dc9"}
	if err := te.c.Create(bg, bad); err != nil {
		t.Fatal(err)
	}
	waitFailed("nodc", ReasonDatacenterNotInSpec, `"dc9"`)

	// A missing Secret keeps it pending (with a Warning), no Job.
	noSecret := newLoadTest(ns, "nosecret", "aaa")
	noSecret.Spec.SecretRef.Name = "absent"
	if err := te.c.Create(bg, noSecret); err != nil {
		t.Fatal(err)
	}
	te.waitLoadTest(t, ns, "nosecret", "Pending/SecretNotFound", func(l *aaav1.AAALoadTest) error {
		return hasCondition(l, aaav1.ConditionReady, metav1.ConditionFalse, ReasonSecretNotFound)
	})

	// Cross-namespace: refused (the operator runs without --loadtest-allow-cross-namespace).
	other := te.newNamespace(t, "ltother")
	te.createSecret(t, other, "nas", map[string]string{"secret": "testing123"})
	cross := newLoadTest(other, "cross", "aaa")
	cross.Spec.Cluster.Namespace = ns
	if err := te.c.Create(bg, cross); err != nil {
		t.Fatal(err)
	}
	l := te.waitLoadTest(t, other, "cross", "cross-namespace refused", func(l *aaav1.AAALoadTest) error {
		return hasCondition(l, aaav1.ConditionFailed, metav1.ConditionTrue, ReasonCrossNamespace)
	})
	if m := meta.FindStatusCondition(l.Status.Conditions, aaav1.ConditionFailed).Message; !strings.Contains(m, "--loadtest-allow-cross-namespace") {
		t.Errorf("message does not say how to allow it: %s", m)
	}
	if ok, _ := te.exists(&batchv1.Job{ObjectMeta: objKey(other, "cross-loadgen")}); ok {
		t.Error("a Job was created for a refused target")
	}
	eventually(t, wait, "Warning events", func() error {
		if !te.recorder.has(other, "Warning "+ReasonCrossNamespace) || !te.recorder.has(ns, "Warning "+ReasonDeadlineExceeded) {
			return joinErr(append(te.recorder.events(other), te.recorder.events(ns)...))
		}
		return nil
	})
}

// TestLoadTestCRDMissing: an operator started where the AAALoadTest CRD is not installed (CRDs
// managed apart, not yet upgraded) still starts and keeps running, without the controller.
func TestLoadTestCRDMissing(t *testing.T) {
	assets, _ := requireEnvtest(t, false)
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", "aaa.openaaa.io_aaaclusters.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "aaaclusters.yaml"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	te, err := startEnvWith(assets, []string{dir}, func(mgr ctrl.Manager, te *testEnv) error {
		te.lt = &AAALoadTestReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Recorder: te.recorder}
		return te.lt.SetupWithManager(mgr)
	})
	if err != nil {
		t.Fatalf("the operator does not start without the AAALoadTest CRD: %v", err)
	}
	select {
	case <-te.done:
		t.Fatal("the manager stopped")
	case <-time.After(3 * time.Second):
	}
}
