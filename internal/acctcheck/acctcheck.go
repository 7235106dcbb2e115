// Package acctcheck reads the accounting history back from Cassandra: what the multi-DC
// end-to-end test (test/e2e) and make bench-geo (hack/acct-check) check the records a load
// generator got an Accounting-Response for against.
package acctcheck

import (
	"bufio"
	"fmt"
	"os"
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
// that DC's view of the data. auth may be nil (a cluster without authentication).
func Connect(contact, dc, keyspace string, auth gocql.Authenticator) (*gocql.Session, error) {
	c := gocql.NewCluster(contact)
	c.Authenticator = auth
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

// ReadAcked sums the sessions' acknowledged records over files of `aaa-loadgen run
// --acked-out` ("Acct-Session-Id starts interims stops" a line), by Acct-Session-Id.
func ReadAcked(files []string) (map[string]*Records, error) {
	out := map[string]*Records{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		line := 0
		for sc.Scan() {
			line++
			var id string
			var r Records
			if _, err := fmt.Sscanf(sc.Text(), "%s %d %d %d", &id, &r.Starts, &r.Interims, &r.Stops); err != nil {
				fh.Close()
				return nil, fmt.Errorf("%s:%d: %q: want \"id starts interims stops\"", f, line, sc.Text())
			}
			a := out[id]
			if a == nil {
				a = &Records{}
				out[id] = a
			}
			a.Starts, a.Interims, a.Stops = a.Starts+r.Starts, a.Interims+r.Interims, a.Stops+r.Stops
		}
		err = sc.Err()
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return out, nil
}

// Missing counts the acknowledged records that h lacks (sessions matched by Acct-Session-Id:
// the generator's ids are unique per run) and names up to 10 of their sessions.
func Missing(acked map[string]*Records, h map[Key]*Records) (int, []string) {
	stored := map[string]Records{}
	for k, r := range h {
		s := stored[k.ID]
		s.Starts, s.Interims, s.Stops = s.Starts+r.Starts, s.Interims+r.Interims, s.Stops+r.Stops
		stored[k.ID] = s
	}
	missing := 0
	var samples []string
	for id, a := range acked {
		s := stored[id]
		n := max(a.Starts-s.Starts, 0) + max(a.Interims-s.Interims, 0) + max(a.Stops-s.Stops, 0)
		if n > 0 {
			missing += n
			if len(samples) < 10 {
				samples = append(samples, fmt.Sprintf("%s: acknowledged %d/%d/%d, stored %d/%d/%d", id, a.Starts, a.Interims, a.Stops, s.Starts, s.Interims, s.Stops))
			}
		}
	}
	return missing, samples
}
