package controllers

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
)

// listenTCP opens a TCP listener on loopback that accepts and closes connections for the rest
// of the test (a contact point that answers), and returns its address.
func listenTCP(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	acceptOn(l)
	return l.Addr().String()
}

// closedTCP returns a loopback address where nothing listens.
func closedTCP(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestDialContactPoints(t *testing.T) {
	up, down := listenTCP(t), closedTCP(t)
	if err := DialContactPoints(context.Background(), []string{down, up}, time.Second); err != nil {
		t.Errorf("one contact point answers: %v", err)
	}
	err := DialContactPoints(context.Background(), []string{down, closedTCP(t)}, time.Second)
	if err == nil || !strings.Contains(err.Error(), down) || !strings.Contains(err.Error(), "refused") {
		t.Errorf("no contact point answers: %v; want an error naming %s and why", err, down)
	}
	// host without a port: 9042
	if err := DialContactPoints(context.Background(), []string{"127.0.0.1"}, time.Second); err == nil {
		// something listens on 9042 on this machine (a Cassandra of another test): nothing to check
		t.Log("127.0.0.1:9042 answers here")
	} else if !strings.Contains(err.Error(), "127.0.0.1:9042") {
		t.Errorf("default port: %v", err)
	}
}

// TestExternalCassandraUnreachable: with an external Cassandra that does not answer, the
// AAACluster says so (CassandraReady False, reason CassandraUnreachable, the contact point
// named) and a Warning event is recorded; no migration runs; once a contact point answers,
// CassandraReady turns True by itself (requeue, no object change) and the migration starts.
func TestExternalCassandraUnreachable(t *testing.T) {
	te := sharedEnv(t)
	ns := te.newNamespace(t, "ext-down")
	te.createSecret(t, ns, "cass-creds", map[string]string{"username": "u", "password": "p"})
	addr := closedTCP(t)
	c := minimalCluster(ns, "ext")
	c.Spec.Datacenters = c.Spec.Datacenters[:1]
	c.Spec.Cassandra.External = &aaav1.ExternalCassandra{ContactPoints: []string{addr}, CredentialsSecret: corev1.LocalObjectReference{Name: "cass-creds"}}
	if err := te.c.Create(bg, c); err != nil {
		t.Fatal(err)
	}
	got := te.waitCondition(t, ns, "ext", aaav1.ConditionCassandraReady, metav1.ConditionFalse, ReasonCassandraUnreachable)
	if m := findCondition(got, aaav1.ConditionCassandraReady).Message; !strings.Contains(m, addr) {
		t.Errorf("CassandraReady message does not name the contact point %s: %s", addr, m)
	}
	te.waitCondition(t, ns, "ext", aaav1.ConditionReady, metav1.ConditionFalse, "")
	eventually(t, wait, "a Warning event CassandraUnreachable", func() error {
		if !te.recorder.has(ns, "Warning "+ReasonCassandraUnreachable) {
			return joinErr(te.recorder.events(ns))
		}
		return nil
	})
	if jobs, _ := te.migrationJobs(ns, "ext"); len(jobs) != 0 {
		t.Errorf("a migration Job against an unreachable Cassandra: %v", jobs)
	}

	// Cassandra comes up on the contact point.
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	defer l.Close()
	acceptOn(l)
	te.waitCondition(t, ns, "ext", aaav1.ConditionCassandraReady, metav1.ConditionTrue, ReasonExternalCassandra)
	te.waitMigrationJob(t, ns, "ext", "dc1:3")
}

// acceptOn accepts and closes connections on l until it is closed (a contact point that
// answers).
func acceptOn(l net.Listener) {
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// TestExternalCassandraOutageWithin15s (issue 32, defect 3): a Ready cluster whose external
// Cassandra stops answering shows it — CassandraReady and Ready False, reason
// CassandraUnreachable, the contact point named — within 15 s, although no Kubernetes object
// changed; and shows the recovery as fast.
func TestExternalCassandraOutageWithin15s(t *testing.T) {
	te := sharedEnv(t)
	ns := te.newNamespace(t, "ext-outage")
	te.createSecret(t, ns, "cass-creds", map[string]string{"username": "u", "password": "p"})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	acceptOn(l)
	c := minimalCluster(ns, "ext")
	c.Spec.Datacenters = c.Spec.Datacenters[:1]
	c.Spec.Cassandra.External = &aaav1.ExternalCassandra{ContactPoints: []string{addr}, CredentialsSecret: corev1.LocalObjectReference{Name: "cass-creds"}}
	if err := te.c.Create(bg, c); err != nil {
		t.Fatal(err)
	}
	job := te.waitMigrationJob(t, ns, "ext", "dc1:3")
	// Defect 4: while the first migration runs there is no Deployment, and nothing to warn of.
	time.Sleep(2 * time.Second)
	if te.recorder.has(ns, "Warning "+ReasonUnavailable) {
		t.Errorf("a Warning %s while the first migration runs: %v", ReasonUnavailable, te.recorder.events(ns))
	}
	te.finishJob(t, job, true)
	eventually(t, wait, "Deployment ext-dc1", func() error {
		_, err := te.exists(&appsv1.Deployment{ObjectMeta: objKey(ns, "ext-dc1")})
		return err
	})
	te.markDeploymentsAvailable(t, ns, "ext-dc1")
	te.waitCondition(t, ns, "ext", aaav1.ConditionReady, metav1.ConditionTrue, ReasonReady)
	time.Sleep(2 * time.Second) // the reconciles of becoming ready are over

	within := func(what string, limit time.Duration, cond func(*aaav1.AAACluster) error) {
		t.Helper()
		start := time.Now()
		eventually(t, wait, what, func() error {
			cur := &aaav1.AAACluster{}
			if err := te.c.Get(bg, client.ObjectKey{Namespace: ns, Name: "ext"}, cur); err != nil {
				return err
			}
			return cond(cur)
		})
		took := time.Since(start)
		t.Logf("%s after %.1f s", what, took.Seconds())
		if took > limit {
			t.Errorf("%s took %.1f s, more than %s", what, took.Seconds(), limit)
		}
	}
	is := func(cur *aaav1.AAACluster, typ string, status metav1.ConditionStatus, reason string) error {
		cond := meta.FindStatusCondition(cur.Status.Conditions, typ)
		if cond == nil || cond.Status != status || cond.Reason != reason {
			return fmt.Errorf("%s: %+v, want %s/%s", typ, cond, status, reason)
		}
		return nil
	}

	// Cassandra goes away: nothing in Kubernetes changes.
	l.Close()
	within("the outage on the AAACluster", 15*time.Second, func(cur *aaav1.AAACluster) error {
		if err := is(cur, aaav1.ConditionCassandraReady, metav1.ConditionFalse, ReasonCassandraUnreachable); err != nil {
			return err
		}
		if err := is(cur, aaav1.ConditionReady, metav1.ConditionFalse, ReasonCassandraUnreachable); err != nil {
			return err
		}
		if m := findCondition(cur, aaav1.ConditionReady).Message; !strings.Contains(m, "Cassandra") || !strings.Contains(m, addr) {
			return fmt.Errorf("Ready message names neither the store nor its contact point: %s", m)
		}
		return nil
	})

	// It comes back on the same address.
	l2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	defer l2.Close()
	acceptOn(l2)
	within("the recovery on the AAACluster", 15*time.Second, func(cur *aaav1.AAACluster) error {
		if err := is(cur, aaav1.ConditionCassandraReady, metav1.ConditionTrue, ReasonExternalCassandra); err != nil {
			return err
		}
		return is(cur, aaav1.ConditionReady, metav1.ConditionTrue, ReasonReady)
	})
}

// probeDisagrees: only a dial that contradicts the contact point check's condition enqueues.
func TestProbeDisagrees(t *testing.T) {
	with := func(status metav1.ConditionStatus, reason string) *aaav1.AAACluster {
		return &aaav1.AAACluster{Status: aaav1.AAAClusterStatus{Conditions: []metav1.Condition{{Type: aaav1.ConditionCassandraReady, Status: status, Reason: reason}}}}
	}
	for _, tc := range []struct {
		c         *aaav1.AAACluster
		reachable bool
		want      bool
	}{
		{with(metav1.ConditionTrue, ReasonExternalCassandra), true, false},
		{with(metav1.ConditionTrue, ReasonExternalCassandra), false, true},
		{with(metav1.ConditionFalse, ReasonCassandraUnreachable), false, false},
		{with(metav1.ConditionFalse, ReasonCassandraUnreachable), true, true},
		{with(metav1.ConditionFalse, ReasonCredentialsMissing), true, false},
		{&aaav1.AAACluster{}, false, false},
	} {
		if got := probeDisagrees(tc.c, tc.reachable); got != tc.want {
			t.Errorf("%+v reachable=%v: %v, want %v", tc.c.Status.Conditions, tc.reachable, got, tc.want)
		}
	}
}
