package cassandra

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// maxSQNAttempts bounds the compare-and-set rounds of one NextSQN: a round is lost when
// another node took a SQN of the same subscriber meanwhile, or when Paxos timed out. The
// caller's context bounds the time (eap.roundTimeout).
const maxSQNAttempts = 32

var errSQNContention = errors.New("aka_sqn: too much contention on one subscriber's sequence number")

// NextSQN implements session.SQNCounter with lightweight transactions at SERIAL consistency
// (Paxos over the replicas of every DC: a SQN given in one DC is seen by the next transaction
// in any other; with one DC of three down a majority remains). A transaction that lost to
// another returns the value in force, which the next round compares against; one that timed
// out may or may not have been applied, so the value is read again (at worst a SQN is
// skipped, never given twice). The hybrid store embeds Store: the counter is never cached.
func (st *Store) NextSQN(ctx context.Context, subscriber string, floor uint64) (uint64, error) {
	var cur int64
	known := false // cur is the value in force as of the last transaction
	lost := false  // the last round lost to another node, or timed out
	for attempt := range maxSQNAttempts {
		if lost && !backoff(ctx, attempt) {
			return 0, ctx.Err()
		}
		var applied bool
		var err error
		next := floor
		if !known {
			var sub string
			applied, err = st.s.Query("INSERT INTO aka_sqn (subscriber, sqn) VALUES (?, ?) IF NOT EXISTS", subscriber, int64(floor)).
				Consistency(st.cons).SerialConsistency(gocql.Serial).Idempotent(false).ScanCASContext(ctx, &sub, &cur)
		} else {
			next = max(uint64(cur)+1, floor)
			applied, err = st.s.Query("UPDATE aka_sqn SET sqn = ? WHERE subscriber = ? IF sqn = ?", int64(next), subscriber, cur).
				Consistency(st.cons).SerialConsistency(gocql.Serial).Idempotent(false).ScanCASContext(ctx, &cur)
		}
		switch {
		case err == nil && applied:
			return next, nil
		case err == nil:
			lost = known // an UPDATE lost; a first INSERT only learnt the value in force
			known = true
		case casUncertain(err) && ctx.Err() == nil:
			lost, known = true, false
		default:
			return 0, err
		}
	}
	return 0, errSQNContention
}

// backoff waits a random 0..2^attempt ms (at most 64) before another round: contenders that
// lost to each other in lockstep spread out instead of losing again (four at once on one
// subscriber used up every round on a busy machine). False when ctx ends first.
func backoff(ctx context.Context, attempt int) bool {
	t := time.NewTimer(time.Duration(rand.IntN(1<<min(attempt, 6))+1) * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// casUncertain: a lightweight transaction whose outcome is unknown (Paxos timed out).
func casUncertain(err error) bool {
	var wt *gocql.RequestErrWriteTimeout
	var cu *gocql.RequestErrCASWriteUnknown
	return errors.As(err, &cu) || (errors.As(err, &wt) && wt.WriteType == "CAS")
}
