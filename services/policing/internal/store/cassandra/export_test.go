package cassandra

import (
	"context"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// SetStaleRead makes the accounting path of st read k's row as row with write time wt (row
// nil: absent), as a replica that has not received another DC's latest writes would; undo
// sends reads to Cassandra again.
func SetStaleRead(st *Store, k session.Key, row *session.Session, wt int64) (undo func()) {
	st.staleRead = func(x session.Key) (*session.Session, int64, bool) {
		if x != k {
			return nil, 0, false
		}
		if row == nil {
			return nil, 0, true
		}
		c := *row
		return &c, wt, true
	}
	return func() { st.staleRead = nil }
}

// ReadRow reads k's row as the accounting path does, with its write time.
func ReadRow(ctx context.Context, st *Store, k session.Key) (*session.Session, int64, error) {
	s, m, err := st.readRow(ctx, k, st.cons)
	return s, m.wt, err
}

// ReplayHistoryOnly applies u as the spool replays the history-only copy of a record whose row
// was written and whose history was not (lookups: the copy carries the lookups it was due).
func ReplayHistoryOnly(ctx context.Context, st *Store, u *session.Update, received time.Time, lookups bool) error {
	rec := &record{Kind: u.Kind, Session: u.Session, Received: received, HistoryOnly: true}
	if lookups {
		rec.HistoryLookups = dayLookups | hourLookup
	}
	rec.ID = historyID(rec.Kind, &rec.Session)
	_, err := st.applyRecord(ctx, rec)
	return err
}
