package cassandra

import (
	"context"
	"errors"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// replicationWait bounds how long TakeEphemeral looks for a value written in another DC: it
// reaches this DC's replicas asynchronously, usually within the DCs' round-trip time, and the
// peer's next round can be quicker than that. A miss is re-read until then.
var replicationWait = []time.Duration{20 * time.Millisecond, 60 * time.Millisecond, 120 * time.Millisecond}

// PutEphemeral writes value under key in eap_state for ttl (session.Ephemeral; migration
// 0009), at the store's consistency (LOCAL_QUORUM): this DC has it at once, the others when
// it replicates.
func (st *Store) PutEphemeral(ctx context.Context, key, value []byte, ttl time.Duration) error {
	secs := int((ttl + time.Second - 1) / time.Second)
	return st.s.Query("INSERT INTO eap_state (state, value) VALUES (?, ?) USING TTL ?", key, value, max(secs, 1)).
		Consistency(st.cons).ExecContext(ctx)
}

// TakeEphemeral reads and deletes the value under key (session.Ephemeral). Read and delete
// are two statements, not a lightweight transaction (Paxos across DCs would cost more than
// the round it saves): two nodes taking the same key within the replication delay may both
// get it; docs/eap.md says what that means for a replayed State.
func (st *Store) TakeEphemeral(ctx context.Context, key []byte) ([]byte, error) {
	var v []byte
	err := st.s.Query("SELECT value FROM eap_state WHERE state = ?", key).Consistency(st.cons).ScanContext(ctx, &v)
	for i := 0; errors.Is(err, gocql.ErrNotFound) && i < len(replicationWait); i++ {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(replicationWait[i]):
		}
		err = st.s.Query("SELECT value FROM eap_state WHERE state = ?", key).Consistency(st.cons).ScanContext(ctx, &v)
	}
	if errors.Is(err, gocql.ErrNotFound) {
		return nil, session.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := st.s.Query("DELETE FROM eap_state WHERE state = ?", key).Consistency(st.cons).ExecContext(ctx); err != nil {
		return nil, err
	}
	return v, nil
}

// The hybrid store embeds Store: conversations go to Cassandra, never to its local cache.
var (
	_ session.Ephemeral = (*Store)(nil)
	_ session.Ephemeral = (*Hybrid)(nil)
)
