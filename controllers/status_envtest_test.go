package controllers

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// TestStatusStepErrorHalfway: an API error on the second DC's Deployment, after the first DC
// was reconciled, says Ready=False ReconcileError and nothing else: the second DC keeps what
// was last seen of it, and no Degraded or Warning event is derived from what was not observed.
func TestStatusStepErrorHalfway(t *testing.T) {
	te := sharedEnv(t)
	ns := te.newNamespace(t, "halfway")
	c := te.externalCluster(t, ns, "half")
	if err := te.c.Create(bg, c); err != nil {
		t.Fatal(err)
	}
	te.finishJob(t, te.waitMigrationJob(t, ns, "half", "dc1:3,dc2:3"), true)
	te.markDeploymentsAvailable(t, ns, "half-dc1", "half-dc2")
	te.waitCondition(t, ns, "half", aaav1.ConditionReady, metav1.ConditionTrue, ReasonReady)
	te.waitCondition(t, ns, "half", aaav1.ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected)
	seen := len(te.recorder.events(ns))

	var failed atomic.Int64
	te.writes.setFail(func(verb string, o client.Object) error {
		if _, ok := o.(*appsv1.Deployment); ok && verb == "get" && o.GetNamespace() == ns && o.GetName() == "half-dc2" {
			failed.Add(1)
			return apierrors.NewServiceUnavailable("injected: the API server is busy")
		}
		return nil
	})
	t.Cleanup(func() { te.writes.setFail(nil) })
	te.updateCluster(t, ns, "half", func(c *aaav1.AAACluster) {
		c.Annotations = map[string]string{"test.openaaa.io/poke": "1"} // reconcile now
	})
	got := te.waitCondition(t, ns, "half", aaav1.ConditionReady, metav1.ConditionFalse, ReasonReconcileError)
	if failed.Load() == 0 {
		t.Fatal("the injected error was not hit")
	}
	var problems []string
	for _, dc := range got.Status.Datacenters {
		if !dc.Ready {
			problems = append(problems, fmt.Sprintf("DC %s marked not ready: %+v", dc.Name, dc))
		}
	}
	if got.Status.ReadyDatacenters != "2/2" {
		problems = append(problems, "readyDatacenters "+got.Status.ReadyDatacenters)
	}
	for typ, want := range map[string]metav1.ConditionStatus{aaav1.ConditionDegraded: metav1.ConditionFalse, aaav1.ConditionPolicingReady: metav1.ConditionTrue} {
		if cond := meta.FindStatusCondition(got.Status.Conditions, typ); cond == nil || cond.Status != want {
			problems = append(problems, fmt.Sprintf("%s: %+v, want %s", typ, cond, want))
		}
	}
	if err := joinErr(problems); err != nil {
		t.Fatal(err)
	}

	te.writes.setFail(nil)
	te.waitCondition(t, ns, "half", aaav1.ConditionReady, metav1.ConditionTrue, ReasonReady)
	events := te.recorder.events(ns)[seen:]
	if !slices.Contains(events, "Warning "+ReasonReconcileError) {
		t.Errorf("no Warning %s event for the step error; events: %v", ReasonReconcileError, events)
	}
	for _, e := range events {
		if e == "Warning "+ReasonPartiallyAvailable || e == "Warning "+ReasonUnavailable || e == "Warning "+ReasonDatacenterNotReady {
			t.Errorf("event %q derived from a DC that was not observed; events: %v", e, events)
		}
	}
}

// TestStatusConflictKeepsOtherWriter: the status is written with the resourceVersion it was
// computed from. Computed from a stale copy, the patch conflicts; the retry computes it again
// on the fresh object, so a condition another writer added meanwhile stays, and the step
// error is still said.
func TestStatusConflictKeepsOtherWriter(t *testing.T) {
	te := sharedEnv(t)
	ns := te.newNamespace(t, "race")
	c := minimalCluster(ns, "race")
	c.Spec.Cassandra.External = &aaav1.ExternalCassandra{ContactPoints: []string{"127.0.0.1:1"}, CredentialsSecret: corev1.LocalObjectReference{Name: "absent"}}
	if err := te.c.Create(bg, c); err != nil {
		t.Fatal(err)
	}
	// The chain stops at the missing credentials, without requeueing: the object stays quiet.
	stale := te.waitCondition(t, ns, "race", aaav1.ConditionCassandraReady, metav1.ConditionFalse, ReasonCredentialsMissing)

	other := te.getCluster(t, ns, "race")
	meta.SetStatusCondition(&other.Status.Conditions, metav1.Condition{
		Type: "backup.example.com/Protected", Status: metav1.ConditionTrue, Reason: "Scheduled", Message: "written by another controller",
	})
	if err := te.c.Status().Update(bg, other); err != nil {
		t.Fatal(err)
	}

	st := newState(stale, te.r.Options)
	stepErr := errors.New("injected step error")
	if err := te.r.writeStatus(bg, st, stepErr); err != nil {
		t.Fatalf("writeStatus: %v", err)
	}
	got := te.getCluster(t, ns, "race")
	if meta.FindStatusCondition(got.Status.Conditions, "backup.example.com/Protected") == nil {
		t.Errorf("the other writer's condition was overwritten: %+v", got.Status.Conditions)
	}
	ready := meta.FindStatusCondition(got.Status.Conditions, aaav1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != ReasonReconcileError || ready.Message != stepErr.Error() {
		t.Errorf("Ready: %+v, want False %s %q", ready, ReasonReconcileError, stepErr)
	}
	if cs := meta.FindStatusCondition(got.Status.Conditions, aaav1.ConditionCassandraReady); cs == nil || cs.Reason != ReasonCredentialsMissing {
		t.Errorf("CassandraReady not kept: %+v", cs)
	}
}

// TestLoadTestStatusConflictKeepsOtherWriter: the AAALoadTest writer shares patchStatus, so a
// status computed from a stale copy keeps another writer's condition too.
func TestLoadTestStatusConflictKeepsOtherWriter(t *testing.T) {
	te := loadTestEnv(t)
	ns := te.newNamespace(t, "ltrace")
	if err := te.c.Create(bg, newLoadTest(ns, "lt", "absent")); err != nil {
		t.Fatal(err)
	}
	// Pending on the missing cluster, looked at again only in 30 s.
	stale := te.waitLoadTest(t, ns, "lt", "Pending/ClusterNotFound", func(l *aaav1.AAALoadTest) error {
		return hasCondition(l, aaav1.ConditionReady, metav1.ConditionFalse, ReasonClusterNotFound)
	})
	other := stale.DeepCopy()
	meta.SetStatusCondition(&other.Status.Conditions, metav1.Condition{
		Type: "backup.example.com/Protected", Status: metav1.ConditionTrue, Reason: "Scheduled", Message: "written by another controller",
	})
	if err := te.c.Status().Update(bg, other); err != nil {
		t.Fatal(err)
	}
	o := loadTestOutcome{phase: aaav1.LoadTestPending, reason: ReasonReconcileError, message: "injected step error"}
	if err := te.lt.writeLoadTestStatus(bg, stale, o); err != nil {
		t.Fatalf("writeLoadTestStatus: %v", err)
	}
	got := te.waitLoadTest(t, ns, "lt", "the write", func(l *aaav1.AAALoadTest) error {
		return hasCondition(l, aaav1.ConditionReady, metav1.ConditionFalse, ReasonReconcileError)
	})
	if meta.FindStatusCondition(got.Status.Conditions, "backup.example.com/Protected") == nil {
		t.Errorf("the other writer's condition was overwritten: %+v", got.Status.Conditions)
	}
}
