package cassandra

import (
	"context"

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
