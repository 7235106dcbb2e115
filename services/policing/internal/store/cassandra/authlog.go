package cassandra

import (
	"context"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// AuthRecord is one row of the auth log (the session package's type: the store is a
// session.AuthLogger).
type AuthRecord = session.AuthRecord

// LogAuth appends to the auth log (LOCAL_ONE, 7-day TTL). Handlers that have a
// *cassandra.Store (or *Hybrid) may call it; it is not part of session.Store.
func (st *Store) LogAuth(ctx context.Context, a AuthRecord) error {
	if a.At.IsZero() {
		a.At = st.o.Now()
	}
	day := time.Date(a.At.Year(), a.At.Month(), a.At.Day(), 0, 0, 0, 0, time.UTC)
	start := time.Now()
	err := st.s.Query(st.q.insAuth, a.UserName, day, gocql.UUIDFromTime(a.At), uStr(a.NAS), uStr(a.CallingStationID), uStr(a.Result), uStr(a.Reason)).
		Consistency(st.hcons).ExecContext(ctx)
	st.m.observe("write_auth_log", start, err)
	return err
}
