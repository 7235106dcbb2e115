package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openaaa/openaaa/test/cluster/clustertest"
)

// Issue 12 item 4 and issue 13 on the cluster: with Cassandra stopped, a policing pod
// acknowledges the NAS's accounting into its spool (an emptyDir) and is deleted. The pod
// drains instead of dying with its spool: it keeps delivering for its grace period
// (spec.spool.terminationGracePeriodSeconds), so the records reach Cassandra once it returns.
// TestAAAClusterOnCluster calls the two halves around its step 6 (Cassandra lost, the pod
// replaced, Cassandra back).

// spooledRecords is how many accounting Starts the pod acknowledges into its spool.
const spooledRecords = 10

// spoolWhileCassandraDown sends spooledRecords Accounting-Requests (Start) through the NodePort
// while Cassandra is down and returns their Acct-Session-Ids: each was answered, so policing
// owes it to Cassandra.
func spoolWhileCassandraDown(t *testing.T, acct int32) []string {
	t.Helper()
	var ids []string
	for i := range spooledRecords {
		id := fmt.Sprintf("spooled-%d-%02d", time.Now().Unix()%100000, i)
		out, ok := nasRadclient(t, fmt.Sprintf("%s:%d", clustertest.NodeIP, acct), "acct", nasSecret,
			`User-Name = "alice"`, `Acct-Session-Id = "`+id+`"`, `Acct-Status-Type = Start`, `NAS-IP-Address = `+clustertest.NASIP)
		if !ok || !strings.Contains(out, "Accounting-Response") {
			t.Fatalf("Accounting Start %s with Cassandra down: no Accounting-Response (the spool should take it):\n%s", id, out)
		}
		ids = append(ids, id)
	}
	return ids
}

// spooledRecordsDelivered waits, once Cassandra is back, until the deleted pod is gone (it exits
// when its spool is delivered, or is killed at the end of its grace period) and checks that
// every acknowledged record is in Cassandra.
func spooledRecordsDelivered(t *testing.T, ctx context.Context, c client.Client, deleted *corev1.Pod, ids []string) {
	t.Helper()
	start := time.Now()
	eventually(t, 6*time.Minute, "the deleted policing pod gone", func() error {
		err := c.Get(ctx, client.ObjectKeyFromObject(deleted), &corev1.Pod{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("pod %s still terminating", deleted.Name)
	})
	t.Logf("the deleted pod was gone %s after Cassandra's return", time.Since(start).Round(time.Second))
	db := cqlSession(t)
	defer db.Close()
	stored := map[string]bool{}
	it := db.Query("SELECT acct_session_id FROM openaaa.sessions").Iter()
	var id string
	for it.Scan(&id) {
		stored[id] = true
	}
	if err := it.Close(); err != nil {
		t.Fatalf("reading the sessions: %v", err)
	}
	var lost []string
	for _, id := range ids {
		if !stored[id] {
			lost = append(lost, id)
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of the %d records acknowledged into the deleted pod's spool are not in Cassandra: %v",
			len(lost), len(ids), lost)
	}
}
