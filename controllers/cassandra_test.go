package controllers

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
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
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	te.waitCondition(t, ns, "ext", aaav1.ConditionCassandraReady, metav1.ConditionTrue, ReasonExternalCassandra)
	te.waitMigrationJob(t, ns, "ext", "dc1:3")
}
