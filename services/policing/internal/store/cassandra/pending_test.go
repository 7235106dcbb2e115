package cassandra

import (
	"testing"

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
