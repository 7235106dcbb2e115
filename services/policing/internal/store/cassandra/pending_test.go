package cassandra

import (
	"context"
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

func TestPendingSessions(t *testing.T) {
	a, b := session.Key{NAS: "n", ID: "a"}, session.Key{NAS: "n", ID: "b"}
	p := pendingSessions{n: map[session.Key]int{}}
	if p.enqueue(a) {
		t.Fatal("nothing pending: a record goes to Cassandra")
	}
	// a's record failed and went to the spool; Cassandra is failing.
	p.add(a, 1)
	p.setDown(true)
	if !p.enqueue(b) {
		t.Fatal("while Cassandra fails every record goes to the spool")
	}
	// A replayed batch succeeded (a's and b's records): Cassandra works again.
	p.setDown(false)
	p.add(a, -1)
	if !p.enqueue(b) || p.n[b] != 2 {
		t.Fatalf("b still has a record in the spool: it must queue behind it (%v)", p.n)
	}
	if p.enqueue(a) {
		t.Fatal("a has nothing in the spool: straight to Cassandra")
	}
	p.add(b, -2)
	if p.enqueue(b) || len(p.n) != 0 {
		t.Fatalf("counts left: %v", p.n)
	}
	// After a restart with a non-empty spool every record queues until it drained once.
	p.all = true
	if !p.enqueue(a) {
		t.Fatal("unknown spooled sessions: every record queues")
	}
	p.drained()
	p.add(a, -5) // an at-least-once replay may uncount more than was counted
	if p.enqueue(a) || len(p.n) != 0 {
		t.Fatalf("after the drain: %v", p.n)
	}
}

// A failed write that Cassandra may still have applied goes to the spool, whether or not the
// request still waits for it: a timed-out write can have landed (the history of a Stop without
// its row, or the other way round), and a NAS that gives up on the request would leave it half
// applied. The replay is idempotent (content-derived history ids, rows merged by event time).
// A request Cassandra refused as wrong is not spooled.
func TestSpoolOnFailure(t *testing.T) {
	timeout := context.DeadlineExceeded
	var invalid error = invalidRequest{}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{timeout, true},
		{rowError{timeout}, true},
		{rowError{invalid}, false},
		{invalid, false},
		{historyError{timeout}, true},
	} {
		if got := spoolOnFailure(c.err); got != c.want {
			t.Errorf("spoolOnFailure(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// invalidRequest is Cassandra's answer to a wrong statement (gocql.RequestError).
type invalidRequest struct{}

func (invalidRequest) Code() int       { return gocql.ErrCodeInvalid }
func (invalidRequest) Message() string { return "invalid" }
func (invalidRequest) Error() string   { return "invalid" }
