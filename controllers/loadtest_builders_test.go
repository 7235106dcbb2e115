package controllers

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"layeh.com/radius"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	"github.com/openaaa/openaaa/services/loadgen/summary"
)

func testLoadTest() *aaav1.AAALoadTest {
	return &aaav1.AAALoadTest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tests", Name: "lt", Generation: 1},
		Spec: aaav1.AAALoadTestSpec{
			Cluster:   aaav1.LoadTestClusterRef{Name: "aaa", Namespace: "prod"},
			Load:      aaav1.LoadTestLoad{Duration: "5m", Rate: ptr.To[int32](7000), MaxSessions: ptr.To[int64](1000)},
			SecretRef: aaav1.SecretKeyRef{Name: "nas", Key: "shared"},
			NAS:       aaav1.LoadTestNAS{Timeout: "500ms", Retries: ptr.To[int32](3), IPAddress: "192.0.2.7", RequireMessageAuthenticator: true},
			Flow:      aaav1.LoadTestFlow{Mode: "flow", AuthMethod: "chap"},
		},
	}
}

func argValue(args []string, flag string) []string {
	var out []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			out = append(out, args[i+1])
		}
	}
	return out
}

func TestLoadTestDefaults(t *testing.T) {
	s := loadTestDefaults(aaav1.AAALoadTestSpec{Flow: aaav1.LoadTestFlow{Mode: "auth"}}, Options{LoadgenImage: "reg.example/lg", Version: "v1.2.3"})
	if *s.Flow.Interims != 0 || s.Distribution != "round-robin" || s.Load.Concurrency != 16 || s.NAS.Timeout != "1s" || *s.NAS.Retries != 2 ||
		s.SecretRef.Key != "secret" || !*s.ServerMetrics || s.Image.Repository != "reg.example/lg" || s.Image.Tag != "v1.2.3" || s.Image.PullPolicy != corev1.PullIfNotPresent {
		t.Errorf("defaults: %+v", s)
	}
	if s := loadTestDefaults(aaav1.AAALoadTestSpec{}, Options{Version: "dev"}); s.Image.Repository != DefaultLoadgenImage || s.Image.Tag != "latest" || *s.Flow.Interims != 5 {
		t.Errorf("image of a dev build: %s:%s", s.Image.Repository, s.Image.Tag)
	}
	if s := loadTestDefaults(aaav1.AAALoadTestSpec{}, Options{LoadgenImage: "host:5000/lg:pinned", Version: "v1"}); s.Image.Repository != "host:5000/lg" || s.Image.Tag != "pinned" {
		t.Errorf("flag with a tag: %s:%s", s.Image.Repository, s.Image.Tag)
	}
}

// TestBuildLoadgenJob: one pod against the Services of the selected data centers of a cluster
// in another namespace (allowed), open loop, the per-pod metrics addresses, a bounded run.
func TestBuildLoadgenJob(t *testing.T) {
	lt := testLoadTest()
	c := minimalCluster("prod", "aaa")
	c.Spec.Radius.AuthPort, c.Spec.Radius.AcctPort = 11812, 11813
	cspec := withDefaults(c.Spec, Options{})
	spec := loadTestDefaults(lt.Spec, Options{Version: "v1"})
	dcs, err := loadTestDatacenters(spec, cspec)
	if err != nil || !slices.Equal(dcs, []string{"dc1", "dc2"}) {
		t.Fatalf("datacenters %v %v", dcs, err)
	}
	job, err := buildLoadgenJob(lt, spec, c, cspec, dcs, map[string][]string{"dc1": {"10.0.0.5:9812", "10.0.0.6:9812"}})
	if err != nil {
		t.Fatal(err)
	}
	if job.Namespace != "tests" || job.Name != "lt-loadgen" || job.Labels[LabelLoadTest] != "lt" || job.Labels[LabelCluster] != "aaa" {
		t.Errorf("meta: %s/%s %v", job.Namespace, job.Name, job.Labels)
	}
	// 5 min + 4 × 500 ms + 120 s
	if *job.Spec.ActiveDeadlineSeconds != 422 || *job.Spec.BackoffLimit != 0 || job.Spec.TTLSecondsAfterFinished != nil {
		t.Errorf("bounds: deadline %d backoff %d", *job.Spec.ActiveDeadlineSeconds, *job.Spec.BackoffLimit)
	}
	ps := job.Spec.Template.Spec
	ctr := ps.Containers[0]
	if !ptr.Deref(ps.SecurityContext.RunAsNonRoot, false) || *ps.AutomountServiceAccountToken || ps.RestartPolicy != corev1.RestartPolicyNever ||
		!*ctr.SecurityContext.ReadOnlyRootFilesystem || *ctr.SecurityContext.AllowPrivilegeEscalation || ctr.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("security: %+v %+v", ps.SecurityContext, ctr.SecurityContext)
	}
	if v := ps.Volumes[0].Secret; v == nil || v.SecretName != "nas" || v.Items[0].Key != "shared" {
		t.Errorf("secret volume: %+v", ps.Volumes)
	}
	args := ctr.Args
	for flag, want := range map[string][]string{
		"--target":         {"dc1=aaa-dc1-radius.prod.svc:11812/11813", "dc2=aaa-dc2-radius.prod.svc:11812/11813"},
		"--metrics":        {"dc1=http://10.0.0.5:9812/metrics", "dc1=http://10.0.0.6:9812/metrics"},
		"--rate":           {"7000"},
		"--sessions":       {"1000"},
		"--auth":           {"chap"},
		"--timeout":        {"500ms"},
		"--retries":        {"3"},
		"--nas-ip":         {"192.0.2.7"},
		"--secret-file":    {"/etc/aaa-loadgen/secret/shared"},
		"--summary-file":   {"/dev/termination-log"},
		"--duration":       {"5m"},
		"--interims":       {"5"},
		"--distribution":   {"round-robin"},
		"--users":          {"10000"},
		"--user-pattern":   {"user%05d"},
		"--framed-ip-base": {"10.0.0.1"},
	} {
		if got := argValue(args, flag); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", flag, got, want)
		}
	}
	if !slices.Contains(args, "--require-reply-ma") || slices.Contains(args, "--ramp") || !slices.Contains(args, "--metrics-best-effort") {
		t.Errorf("args: %v", args)
	}
	// A memory limit that grows with the workers and data centers.
	mem := ctr.Resources.Limits[corev1.ResourceMemory]
	spec.Load.Concurrency = 512
	big, _ := buildLoadgenJob(lt, spec, c, cspec, dcs, nil)
	bigMem := big.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
	if mem.Cmp(bigMem) >= 0 || mem.Value() < 64<<20 {
		t.Errorf("memory %s for 16 workers, %s for 512", mem.String(), bigMem.String())
	}
	// No server metrics when asked so; a subset of data centers; an unknown one is an error.
	spec.ServerMetrics = ptr.To(false)
	spec.Datacenters = []string{"dc2"}
	dcs, _ = loadTestDatacenters(spec, cspec)
	j, _ := buildLoadgenJob(lt, spec, c, cspec, dcs, map[string][]string{"dc2": {"10.0.0.9:9812"}})
	if a := j.Spec.Template.Spec.Containers[0].Args; len(argValue(a, "--metrics")) != 0 || slices.Contains(a, "--metrics-best-effort") || !slices.Equal(argValue(a, "--target"), []string{"dc2=aaa-dc2-radius.prod.svc:11812/11813"}) {
		t.Errorf("dc2 only, no metrics: %v", a)
	}
	spec.Datacenters = []string{"dc3"}
	if _, err := loadTestDatacenters(spec, cspec); err == nil || !strings.Contains(err.Error(), "spec.datacenters") {
		t.Errorf("unknown data center: %v", err)
	}
	spec.Load.Duration = "soon"
	if _, err := buildLoadgenJob(lt, spec, c, cspec, dcs, nil); err == nil {
		t.Error("an unparsable duration built a Job")
	}
}

func TestReadyPodAddresses(t *testing.T) {
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Status: corev1.PodStatus{PodIP: "10.0.0.2", Conditions: ready}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.PodStatus{PodIP: "10.0.0.1", Conditions: ready}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Status: corev1.PodStatus{PodIP: "10.0.0.3"}}, // not ready
		{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Status: corev1.PodStatus{Conditions: ready}}, // no IP
		{ObjectMeta: metav1.ObjectMeta{Name: "e", DeletionTimestamp: ptr.To(metav1.Now())}, Status: corev1.PodStatus{PodIP: "10.0.0.5", Conditions: ready}},
	}
	if got := readyPodAddresses(pods, 9812); !slices.Equal(got, []string{"10.0.0.1:9812", "10.0.0.2:9812"}) {
		t.Errorf("addresses %v", got)
	}
}

func terminated(name string, created time.Time, code int32, msg string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "sidecar", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: "not me"}}},
			{Name: loadgenContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: msg}}},
		}},
	}
}

func TestLoadgenMessage(t *testing.T) {
	t0 := time.Unix(1000, 0)
	if got := loadgenMessage([]corev1.Pod{terminated("late", t0.Add(time.Minute), 1, "second failure"), terminated("early", t0, 1, "first failure")}); got != "second failure" {
		t.Errorf("failed pods: %q, want the last one's", got)
	}
	if got := loadgenMessage([]corev1.Pod{terminated("late", t0.Add(time.Minute), 1, "failure"), terminated("early", t0, 0, "report")}); got != "report" {
		t.Errorf("with a successful pod: %q", got)
	}
	if got := loadgenMessage([]corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "pending"}}}); got != "" {
		t.Errorf("no terminated container: %q", got)
	}
}

func endedJob(failed bool, reason string) *batchv1.Job {
	ended := metav1.NewTime(time.Unix(2000, 0))
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "lt-loadgen"}}
	if failed {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, Message: "it failed", LastTransitionTime: ended}}
	} else {
		j.Status.CompletionTime = &ended
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	}
	return j
}

// TestLoadTestFromJob: the outcome of an ended Job from its termination message.
func TestLoadTestFromJob(t *testing.T) {
	report, _ := summary.Marshal(summary.Summary{Seconds: 12.34, Sent: 1000, Figures: summary.Figures{IncomingTPS: 1, Answered: 1000}})
	// Issue 32: nothing answered, all timeouts, policing dropped them as unknown_client.
	unanswered, _ := summary.Marshal(summary.Summary{Seconds: 30, Sent: 1140, Figures: summary.Figures{Timeouts: 1140},
		Dropped: map[string]uint64{"unknown_client": 3553}})
	errSummary, _ := summary.Marshal(summary.Summary{Error: "empty shared secret"})
	for _, tc := range []struct {
		name           string
		failed         bool
		jobReason, msg string
		phase, reason  string
		inMessage      string
	}{
		{"report", false, "", string(report), aaav1.LoadTestSucceeded, ReasonCompleted, "12.3 s"},
		{"no answer", false, "", string(unanswered), aaav1.LoadTestFailed, ReasonNoAnswer, "no request was answered: 1140 sent, 1140 timeouts, 0 errors; policing dropped unknown_client=3553"},
		{"no report", false, "", "", aaav1.LoadTestFailed, ReasonReportUnreadable, "no report"},
		{"summary error", true, batchv1.JobReasonBackoffLimitExceeded, string(errSummary), aaav1.LoadTestFailed, ReasonLoadgenFailed, "empty shared secret"},
		{"log tail", true, batchv1.JobReasonBackoffLimitExceeded, "panic: boom\n", aaav1.LoadTestFailed, ReasonLoadTestJobFailed, "aaa-loadgen: panic: boom"},
		{"deadline", true, batchv1.JobReasonDeadlineExceeded, "", aaav1.LoadTestFailed, ReasonDeadlineExceeded, "DeadlineExceeded"},
		{"other job failure", true, "PodFailurePolicy", "", aaav1.LoadTestFailed, ReasonLoadTestJobFailed, "it failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := endedJob(tc.failed, tc.jobReason)
			_, failed, reason, message := jobOutcome(job)
			o := loadTestFromJob(job, failed, reason, message, tc.msg, aaav1.LoadTestSuccessCriteria{})
			if o.phase != tc.phase || o.reason != tc.reason || !strings.Contains(o.message, tc.inMessage) {
				t.Errorf("outcome %+v, want %s/%s with %q", o, tc.phase, tc.reason, tc.inMessage)
			}
			if o.completionTime == nil || o.completionTime.Unix() != 2000 {
				t.Errorf("completion time %v, want the Job's end", o.completionTime)
			}
			if (o.summary != nil) != (tc.phase == aaav1.LoadTestSucceeded || tc.reason == ReasonNoAnswer) {
				t.Errorf("summary %v", o.summary)
			}
		})
	}
}

// TestLoadTestReport: the per-DC and total figures of the status from a summary.
func TestLoadTestReport(t *testing.T) {
	out, busy := 20500.04, 7.06
	s := &summary.Summary{Seconds: 60.04, Sent: 610000, Sessions: 86000, SessionsDone: 85990,
		Figures: summary.Figures{IncomingTPS: 10123.456, OutgoingTPS: &out, WorkersBusy: &busy, AvgAuthMs: 4.0004, AvgAcctMs: 6.1236, P99Ms: 25, Answered: 607400, Timeouts: 2600, Errors: 3, Accepts: 86000, Rejects: 12},
		Targets: []summary.Target{{Name: "dc1", Figures: summary.Figures{IncomingTPS: 5061.7}}, {Name: "dc2", Figures: summary.Figures{IncomingTPS: 5061.75, Timeouts: 2600}}}}
	total, dcs := loadTestReport(s)
	if total.IncomingTPS != "10123.5" || total.OutgoingTPS != "20500.0" || total.WorkersBusy != "7.1" || total.Workers != "" || total.AvgAuthMs != "4.000" ||
		total.AvgAcctMs != "6.124" || total.P99Ms != "25.000" || total.Timeouts != 2600 || total.Errors != 3 || total.Rejects != 12 || total.Seconds != "60.0" ||
		total.Sent != 610000 || total.SessionsCompleted != 85990 {
		t.Errorf("total %+v", total)
	}
	if len(dcs) != 2 || dcs[0].Name != "dc1" || dcs[0].IncomingTPS != "5061.7" || dcs[0].OutgoingTPS != "" || dcs[1].IncomingTPS != "5061.8" || dcs[1].Timeouts != 2600 {
		t.Errorf("per DC %+v", dcs)
	}
}

// TestComputeLoadTestStatus: conditions per phase with observedGeneration; a finished run
// keeps its times; an unchanged outcome gives an equal status (no write).
func TestComputeLoadTestStatus(t *testing.T) {
	lt := testLoadTest()
	start := metav1.NewTime(time.Unix(1000, 0))
	running := computeLoadTestStatus(lt, loadTestOutcome{phase: aaav1.LoadTestRunning, reason: ReasonRunning, job: "lt-loadgen", startTime: &start})
	check := func(s aaav1.AAALoadTestStatus, typ string, status metav1.ConditionStatus, reason string) {
		t.Helper()
		c := meta.FindStatusCondition(s.Conditions, typ)
		if c == nil || c.Status != status || c.Reason != reason || c.ObservedGeneration != 1 {
			t.Errorf("%s: %+v, want %s/%s", typ, c, status, reason)
		}
	}
	check(running, aaav1.ConditionReady, metav1.ConditionFalse, ReasonRunning)
	check(running, aaav1.ConditionComplete, metav1.ConditionFalse, ReasonRunning)
	check(running, aaav1.ConditionFailed, metav1.ConditionFalse, ReasonAsExpected)
	if running.Phase != aaav1.LoadTestRunning || running.Job != "lt-loadgen" || !running.StartTime.Equal(&start) || running.ObservedGeneration != 1 {
		t.Errorf("running %+v", running)
	}
	lt.Status = running
	if again := computeLoadTestStatus(lt, loadTestOutcome{phase: aaav1.LoadTestRunning, reason: ReasonRunning, job: "lt-loadgen", startTime: &start}); !equalStatus(again, running) {
		t.Error("the same outcome changed the status")
	}
	end := metav1.NewTime(time.Unix(2000, 0))
	later := metav1.NewTime(time.Unix(3000, 0))
	ok := computeLoadTestStatus(lt, loadTestOutcome{phase: aaav1.LoadTestSucceeded, reason: ReasonCompleted, message: "done", startTime: &later, completionTime: &end,
		summary: &summary.Summary{Figures: summary.Figures{IncomingTPS: 5}}})
	check(ok, aaav1.ConditionReady, metav1.ConditionTrue, ReasonCompleted)
	check(ok, aaav1.ConditionComplete, metav1.ConditionTrue, ReasonCompleted)
	check(ok, aaav1.ConditionFailed, metav1.ConditionFalse, ReasonAsExpected)
	if ok.Report == nil || ok.Report.IncomingTPS != "5.0" || !ok.StartTime.Equal(&start) || !ok.CompletionTime.Equal(&end) {
		t.Errorf("succeeded %+v", ok)
	}
	bad := computeLoadTestStatus(lt, loadTestOutcome{phase: aaav1.LoadTestFailed, reason: ReasonCrossNamespace, message: "refused", completionTime: &end})
	check(bad, aaav1.ConditionReady, metav1.ConditionFalse, ReasonCrossNamespace)
	check(bad, aaav1.ConditionFailed, metav1.ConditionTrue, ReasonCrossNamespace)
	check(bad, aaav1.ConditionComplete, metav1.ConditionFalse, ReasonCrossNamespace)
	if bad.Report != nil {
		t.Error("a failed run has a report")
	}
}

func equalStatus(a, b aaav1.AAALoadTestStatus) bool {
	return a.Phase == b.Phase && a.Job == b.Job && len(a.Conditions) == len(b.Conditions) &&
		slices.EqualFunc(a.Conditions, b.Conditions, func(x, y metav1.Condition) bool { return x == y })
}

// buildLoadgen builds aaa-loadgen from this tree (the Go build cache makes it quick).
func buildLoadgen(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "aaa-loadgen")
	build := exec.Command("go", "build", "-o", exe, "./services/loadgen")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}

// TestLoadgenAcceptsJobArgs: aaa-loadgen, built from this tree, parses every argument the
// operator gives it (the trailing --help stops it before it runs: exit 0; an unknown flag or
// a bad value exits 1).
func TestLoadgenAcceptsJobArgs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds aaa-loadgen")
	}
	exe := buildLoadgen(t)
	lt := testLoadTest()
	c := minimalCluster("prod", "aaa")
	cspec := withDefaults(c.Spec, Options{})
	for _, mutate := range []func(*aaav1.AAALoadTestSpec){
		func(*aaav1.AAALoadTestSpec) {},
		func(s *aaav1.AAALoadTestSpec) {
			s.Load.Rate, s.Load.MaxSessions, s.Load.Ramp = nil, nil, "10s"
			s.NAS.IPAddress, s.NAS.RequireMessageAuthenticator = "", false
			s.Flow = aaav1.LoadTestFlow{Mode: "auth"}
			s.Distribution = "sticky"
		},
	} {
		spec := lt.Spec
		mutate(&spec)
		spec = loadTestDefaults(spec, Options{})
		job, err := buildLoadgenJob(lt, spec, c, cspec, []string{"dc1", "dc2"}, map[string][]string{"dc2": {"10.0.0.1:9812"}})
		if err != nil {
			t.Fatal(err)
		}
		args := append(slices.Clone(job.Spec.Template.Spec.Containers[0].Args), "--help")
		if out, err := exec.Command(exe, args...).CombinedOutput(); err != nil {
			t.Errorf("aaa-loadgen %v: %v\n%s", args, err, out)
		}
	}
}

// TestLoadTestReconcileError: an API error while starting the run (here: listing the policing
// pods) is returned for a retry and said in the status (Ready=False, ReconcileError), on a fake
// client.
func TestLoadTestReconcileError(t *testing.T) {
	lt := newLoadTest("ns", "lt", "aaa")
	lt.Generation = 1
	c := minimalCluster("ns", "aaa")
	c.Status.Datacenters = []aaav1.DatacenterStatus{{Name: "dc1", Ready: true}, {Name: "dc2", Ready: true}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nas"}, Data: map[string][]byte{"secret": []byte("s")}}
	cl := fake.NewClientBuilder().WithScheme(testScheme).WithObjects(lt, c, secret).WithStatusSubresource(lt, c).Build()
	failing := interceptor.NewClient(fake.NewClientBuilder().WithScheme(testScheme).Build(), interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("pods is forbidden")
		},
	})
	r := &AAALoadTestReconciler{Client: cl, APIReader: failing, Scheme: testScheme, Options: Options{Version: "v1"}}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(lt)})
	if err == nil || !strings.Contains(err.Error(), "pods is forbidden") {
		t.Fatalf("Reconcile: %v", err)
	}
	got := &aaav1.AAALoadTest{}
	if err := cl.Get(context.Background(), client.ObjectKeyFromObject(lt), got); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, aaav1.ConditionReady)
	if got.Status.Phase != aaav1.LoadTestPending || cond == nil || cond.Reason != ReasonReconcileError || !strings.Contains(cond.Message, "forbidden") {
		t.Errorf("status %+v", got.Status)
	}
	if err := cl.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "lt-loadgen"}, &batchv1.Job{}); err == nil {
		t.Error("a Job was created although the pods could not be listed")
	}
}

// TestLoadTestCrossNamespaceAllowed: with --loadtest-allow-cross-namespace the Job runs in the
// AAALoadTest's namespace against the Services of the cluster's (fake client).
func TestLoadTestCrossNamespaceAllowed(t *testing.T) {
	lt := newLoadTest("tests", "lt", "aaa")
	lt.Spec.Cluster.Namespace = "prod"
	c := minimalCluster("prod", "aaa")
	c.Status.Datacenters = []aaav1.DatacenterStatus{{Name: "dc1", Ready: true}, {Name: "dc2", Ready: true}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tests", Name: "nas"}, Data: map[string][]byte{"secret": []byte("s")}}
	cl := fake.NewClientBuilder().WithScheme(testScheme).WithObjects(lt, c, secret).WithStatusSubresource(lt, c).Build()
	for _, allowed := range []bool{false, true} {
		r := &AAALoadTestReconciler{Client: cl, APIReader: cl, Scheme: testScheme, Options: Options{AllowCrossNamespaceLoadTests: allowed}}
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(lt)}); err != nil {
			t.Fatal(err)
		}
		got := &aaav1.AAALoadTest{}
		if err := cl.Get(context.Background(), client.ObjectKeyFromObject(lt), got); err != nil {
			t.Fatal(err)
		}
		job := &batchv1.Job{}
		jobErr := cl.Get(context.Background(), client.ObjectKey{Namespace: "tests", Name: "lt-loadgen"}, job)
		if !allowed {
			if got.Status.Phase != aaav1.LoadTestFailed || jobErr == nil {
				t.Fatalf("refused: phase %s, Job %v", got.Status.Phase, jobErr)
			}
			// A refused run is final: start again from a fresh status.
			got.Status = aaav1.AAALoadTestStatus{}
			if err := cl.Status().Update(context.Background(), got); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got.Status.Phase != aaav1.LoadTestRunning || jobErr != nil {
			t.Fatalf("allowed: phase %s, Job %v", got.Status.Phase, jobErr)
		}
		if tg := argValue(job.Spec.Template.Spec.Containers[0].Args, "--target"); !slices.Equal(tg, []string{"dc1=aaa-dc1-radius.prod.svc:1812/1813", "dc2=aaa-dc2-radius.prod.svc:1812/1813"}) {
			t.Errorf("targets %v", tg)
		}
	}
}

// TestLoadgenReportReachesStatus: the whole data path without Kubernetes. aaa-loadgen, built
// from the tree, runs with the Job's arguments (the targets pointed at two local RADIUS
// servers, the termination log at a file) and its summary, read as the operator reads a
// termination message, becomes the status report of both data centers.
func TestLoadgenReportReachesStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs aaa-loadgen")
	}
	exe := buildLoadgen(t)
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("testing123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var addrs []string
	var answered [2]atomic.Int64
	for i := range 2 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &radius.PacketServer{SecretSource: radius.StaticSecretSource([]byte("testing123")),
			Handler: radius.HandlerFunc(func(w radius.ResponseWriter, r *radius.Request) {
				code := radius.CodeAccessAccept
				if r.Code == radius.CodeAccountingRequest {
					code = radius.CodeAccountingResponse
				}
				answered[i].Add(1)
				w.Write(r.Response(code))
			})}
		go srv.Serve(pc)
		t.Cleanup(func() { srv.Shutdown(context.Background()) })
		addrs = append(addrs, pc.LocalAddr().String())
	}
	lt := testLoadTest()
	lt.Spec.Load = aaav1.LoadTestLoad{Duration: "1s", Concurrency: 2}
	lt.Spec.NAS.RequireMessageAuthenticator = false
	c := minimalCluster("prod", "aaa")
	spec := loadTestDefaults(lt.Spec, Options{})
	job, err := buildLoadgenJob(lt, spec, c, withDefaults(c.Spec, Options{}), []string{"dc1", "dc2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	summaryFile := filepath.Join(dir, "termination-log")
	args := slices.Clone(job.Spec.Template.Spec.Containers[0].Args)
	target := 0
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--target":
			name, _, _ := strings.Cut(args[i+1], "=")
			args[i+1] = name + "=" + addrs[target] + "/" + strings.Split(addrs[target], ":")[1]
			target++
		case "--summary-file":
			args[i+1] = summaryFile
		case "--secret-file":
			args[i+1] = secretFile
		}
	}
	if out, err := exec.Command(exe, args...).CombinedOutput(); err != nil {
		t.Fatalf("aaa-loadgen: %v\n%s", err, out)
	}
	msg, err := os.ReadFile(summaryFile)
	if err != nil {
		t.Fatal(err)
	}
	ended := endedJob(false, "")
	o := loadTestFromJob(ended, false, "", "", string(msg), aaav1.LoadTestSuccessCriteria{})
	if o.phase != aaav1.LoadTestSucceeded {
		t.Fatalf("outcome %+v from %s", o, msg)
	}
	st := computeLoadTestStatus(lt, o)
	if st.Report == nil || st.Report.Accepts == 0 || st.Report.Answered == 0 || st.Report.IncomingTPS == "0.0" || len(st.Datacenters) != 2 {
		t.Fatalf("status %+v from %s", st, msg)
	}
	var sum int64
	for i, d := range st.Datacenters {
		// The servers may have answered a request or two in flight at the end, not counted.
		if want := answered[i].Load(); d.Name != []string{"dc1", "dc2"}[i] || d.Answered == 0 || d.Answered > want || want-d.Answered > 2 || d.AvgAcctMs == "0.000" {
			t.Errorf("%s: %+v; its server answered %d", d.Name, d.LoadTestFigures, want)
		}
		sum += d.Answered
	}
	if sum != st.Report.Answered {
		t.Errorf("data centers answered %d, the total says %d", sum, st.Report.Answered)
	}
}

// TestLoadTestVerdict: spec.successCriteria (defaults: 99% answered, 1% timeouts, no errors,
// 1% rejects) against a run's figures; the reason names the first criterion missed and the
// message the figures and policing's drops.
func TestLoadTestVerdict(t *testing.T) {
	ok := summary.Summary{Sent: 10000, Figures: summary.Figures{Answered: 9950, Timeouts: 50, Accepts: 1000, Rejects: 5}}
	with := func(f func(*summary.Summary)) *summary.Summary { s := ok; f(&s); return &s }
	three := int64(3)
	for _, tc := range []struct {
		name      string
		crit      aaav1.LoadTestSuccessCriteria
		s         *summary.Summary
		reason    string
		inMessage string
	}{
		{"defaults pass", aaav1.LoadTestSuccessCriteria{}, &ok, "", ""},
		{"nothing sent", aaav1.LoadTestSuccessCriteria{}, &summary.Summary{}, ReasonNothingSent, "sent no request"},
		{"no answer", aaav1.LoadTestSuccessCriteria{}, with(func(s *summary.Summary) {
			s.Answered, s.Timeouts, s.Accepts, s.Rejects = 0, 10000, 0, 0
			s.Dropped = map[string]uint64{"unknown_client": 3553, "bad_authenticator": 2}
		}), ReasonNoAnswer, "policing dropped unknown_client=3553, bad_authenticator=2 (unknown_client: the load generator's pod address is not a client"},
		{"no answer, no metrics", aaav1.LoadTestSuccessCriteria{}, with(func(s *summary.Summary) { s.Answered, s.Timeouts = 0, 10000 }),
			ReasonNoAnswer, "policing reported no drops"},
		{"answered below", aaav1.LoadTestSuccessCriteria{}, with(func(s *summary.Summary) { s.Answered, s.Timeouts = 9800, 200 }), ReasonAnsweredBelowMinimum, "98.0% of the requests answered (9800 of 10000 that ended), below spec.successCriteria.minAnsweredRatio 0.99"},
		// Requests in flight when the run ended (here 1000: sent, neither answered nor timed out) do not count.
		{"in flight at the end", aaav1.LoadTestSuccessCriteria{}, with(func(s *summary.Summary) { s.Answered, s.Timeouts = 8950, 50 }), "", ""},
		{"answered below, lowered", aaav1.LoadTestSuccessCriteria{MinAnsweredRatio: "0.9", MaxTimeoutRatio: "0.1"}, with(func(s *summary.Summary) { s.Answered, s.Timeouts = 9800, 200 }), "", ""},
		{"timeouts above", aaav1.LoadTestSuccessCriteria{MinAnsweredRatio: "0"}, with(func(s *summary.Summary) { s.Answered, s.Timeouts = 9700, 300 }), ReasonTimeoutsAboveMaximum, "3.0% of the requests timed out (300 of 10000 that ended)"},
		{"errors above", aaav1.LoadTestSuccessCriteria{}, with(func(s *summary.Summary) { s.Errors = 1 }), ReasonErrorsAboveMaximum, "1 invalid replies or socket errors, above spec.successCriteria.maxErrors 0"},
		{"errors allowed", aaav1.LoadTestSuccessCriteria{MaxErrors: &three}, with(func(s *summary.Summary) { s.Errors = 3 }), "", ""},
		{"rejects above", aaav1.LoadTestSuccessCriteria{}, with(func(s *summary.Summary) { s.Rejects = 500 }), ReasonRejectsAboveMaximum, "33.3% of the Access-Requests rejected (500 of 1500)"},
		{"rejects allowed", aaav1.LoadTestSuccessCriteria{MaxRejectRatio: "1"}, with(func(s *summary.Summary) { s.Accepts = 0 }), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg := loadTestVerdict(tc.crit, tc.s)
			if reason != tc.reason || !strings.Contains(msg, tc.inMessage) {
				t.Errorf("verdict %q %q, want %q with %q", reason, msg, tc.reason, tc.inMessage)
			}
		})
	}
}

// A run that missed its criteria is Failed with its report (and policing's drops) in status.
func TestComputeLoadTestStatusFailedKeepsReport(t *testing.T) {
	lt := testLoadTest()
	end := metav1.NewTime(time.Unix(2000, 0))
	st := computeLoadTestStatus(lt, loadTestOutcome{phase: aaav1.LoadTestFailed, reason: ReasonNoAnswer, message: "no request was answered", completionTime: &end,
		summary: &summary.Summary{Sent: 1140, Figures: summary.Figures{Timeouts: 1140}, Dropped: map[string]uint64{"unknown_client": 3553}}})
	if c := meta.FindStatusCondition(st.Conditions, aaav1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonNoAnswer {
		t.Errorf("Ready %+v", c)
	}
	if st.Report == nil || st.Report.Timeouts != 1140 || st.Report.DroppedByReason["unknown_client"] != 3553 {
		t.Errorf("report %+v", st.Report)
	}
}
