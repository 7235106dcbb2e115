// Package acctcheck reads the accounting history back from Cassandra: what the multi-DC
// end-to-end test (test/e2e) and make bench-geo (hack/acct-check) check the records a load
// generator got an Accounting-Response for against.
package acctcheck

import (
	"fmt"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// Key is a session: its NAS and Acct-Session-Id (the partition of acct_history).
type Key struct{ NAS, ID string }

func (k Key) String() string { return k.NAS + "/" + k.ID }

// Records are a session's history rows, in all and by kind.
type Records struct{ Rows, Starts, Interims, Stops int }

// ReadHistory reads acct_history at cons: per session its rows, in all and by kind. A record
// has one row whatever happens to it (its id is made of its content: a retransmission or a
// spool replay writes the same row again), so the rows by kind are the records by kind.
func ReadHistory(s *gocql.Session, cons gocql.Consistency) (map[Key]*Records, error) {
	it := s.Query("SELECT nas, acct_session_id, kind FROM acct_history").Consistency(cons).PageSize(1000).Idempotent(true).Iter()
	h := map[Key]*Records{}
	var k Key
	var kind string
	for it.Scan(&k.NAS, &k.ID, &kind) {
		r := h[k]
		if r == nil {
			r = &Records{}
			h[k] = r
		}
		r.Rows++
		switch kind {
		case "start":
			r.Starts++
		case "interim":
			r.Interims++
		case "stop":
			r.Stops++
		}
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("reading acct_history: %w", err)
	}
	return h, nil
}

// Connect opens a driver session to the node at contact (host:port) only, in datacenter dc:
// that DC's view of the data.
func Connect(contact, dc, keyspace string) (*gocql.Session, error) {
	c := gocql.NewCluster(contact)
	c.Keyspace = keyspace
	c.Timeout = 20 * time.Second
	c.ConnectTimeout = 10 * time.Second
	c.PoolConfig.HostSelectionPolicy = gocql.DCAwareRoundRobinPolicy(dc)
	c.HostFilter = gocql.WhiteListHostFilter(contact)
	// A full scan on a busy node may time out a page: ask again rather than fail the check.
	c.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 5}
	s, err := c.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", contact, err)
	}
	return s, nil
}
