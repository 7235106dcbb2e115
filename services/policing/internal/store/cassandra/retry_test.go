package cassandra

import (
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// TestWritesFailOverToAnotherHost: the driver retries a request on the next host of its plan
// (a remote data center's node when the local one is gone) only if the request is
// idempotent; before, none of ours was, so a write to a dead local node went to the spool of a
// pod that could die with its data center (TestGeoThreeDatacenters lost acknowledged Stops).
func TestWritesFailOverToAnotherHost(t *testing.T) {
	c, err := NewCluster(ConnOptions{ContactPoints: []string{"127.0.0.1"}, LocalDC: "dc1", Keyspace: "openaaa"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.DefaultIdempotence {
		t.Error("queries are not idempotent by default: the driver never retries them on another host")
	}
	rp, ok := c.RetryPolicy.(*gocql.SimpleRetryPolicy)
	if !ok || rp.NumRetries < 1 || rp.GetRetryType(gocql.ErrTimeoutNoResponse) != gocql.RetryNextHost {
		t.Errorf("retry policy %#v: want at least one retry on the next host", c.RetryPolicy)
	}
	// Batches: the driver's default covers queries only; execBatch marks their entries.
	b := &gocql.Batch{Entries: []gocql.BatchEntry{{Stmt: "INSERT"}, {Stmt: "UPDATE"}}}
	markIdempotent(b)
	if !b.IsIdempotent() {
		t.Error("a session batch is not idempotent: the driver would not retry it")
	}
}
