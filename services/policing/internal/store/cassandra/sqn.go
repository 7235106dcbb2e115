package cassandra

import (
	"context"
	"errors"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// maxSQNAttempts bounds the compare-and-set rounds of one NextSQN: a round is lost when
// another node took a SQN of the same subscriber meanwhile, or when Paxos timed out.
const maxSQNAttempts = 16

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
	for range maxSQNAttempts {
		var applied bool
		var err error
		next := floor
		if !known {
			var sub string
			applied, err = st.s.Query("INSERT INTO aka_sqn (subscriber, sqn) VALUES (?, ?) IF NOT EXISTS", subscriber, int64(floor)).
				Consistency(st.cons).SerialConsistency(gocql.Serial).ScanCASContext(ctx, &sub, &cur)
		} else {
			next = max(uint64(cur)+1, floor)
			applied, err = st.s.Query("UPDATE aka_sqn SET sqn = ? WHERE subscriber = ? IF sqn = ?", int64(next), subscriber, cur).
				Consistency(st.cons).SerialConsistency(gocql.Serial).ScanCASContext(ctx, &cur)
		}
		switch {
		case err == nil && applied:
			return next, nil
		case err == nil:
			known = true
		case casUncertain(err) && ctx.Err() == nil:
			known = false
		default:
			return 0, err
		}
	}
	return 0, errSQNContention
}

// casUncertain: a lightweight transaction whose outcome is unknown (Paxos timed out).
func casUncertain(err error) bool {
	var wt *gocql.RequestErrWriteTimeout
	var cu *gocql.RequestErrCASWriteUnknown
	return errors.As(err, &cu) || (errors.As(err, &wt) && wt.WriteType == "CAS")
}
