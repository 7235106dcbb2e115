package cassandra

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// rowMeta is what the accounting path reads of a row besides the session.
type rowMeta struct {
	wt           int64     // WRITETIME(state): the next write goes after it
	lookupsUntil time.Time // until when the session's lookups live (zero: unknown, or no TTL)
}

func (st *Store) readRow(ctx context.Context, k session.Key, cons gocql.Consistency) (*session.Session, rowMeta, error) {
	var r row
	var m rowMeta
	start := time.Now()
	err := st.s.Query(st.q.selSession, k.NAS, k.ID).Consistency(cons).ScanContext(ctx, append(r.dest(), &m.lookupsUntil, &m.wt)...)
	st.m.observe("read_session", start, err)
	if errors.Is(err, gocql.ErrNotFound) {
		return nil, rowMeta{}, nil
	}
	if err != nil {
		return nil, rowMeta{}, err
	}
	return r.session(k), m, nil
}

func (st *Store) nasIDs(ctx context.Context, nas string) ([]string, error) {
	start := time.Now()
	it := st.s.Query(st.q.selByNAS, nas).Consistency(st.cons).PageSize(5000).IterContext(ctx)
	var ids []string
	var id string
	for it.Scan(&id) {
		ids = append(ids, id)
	}
	err := it.Close()
	st.m.observe("lookup_nas", start, err)
	return ids, err
}

// Get returns an active session by key.
func (st *Store) Get(ctx context.Context, k session.Key) (*session.Session, error) {
	s, _, err := st.readRow(ctx, k, st.cons)
	if err != nil {
		return nil, err
	}
	if s == nil || s.State != session.Active {
		return nil, session.ErrNotFound
	}
	return s, nil
}

// GetWide reads a session, active or stopped, at QUORUM: a majority of every DC's replicas
// together (session.WideGetter).
func (st *Store) GetWide(ctx context.Context, k session.Key) (*session.Session, error) {
	s, _, err := st.readRow(ctx, k, gocql.Quorum)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, session.ErrNotFound
	}
	return s, nil
}

// getMany reads the active sessions of keys in parallel (bounded).
func (st *Store) getMany(ctx context.Context, keys []session.Key, get func(context.Context, session.Key) (*session.Session, error)) ([]*session.Session, error) {
	out := make([]*session.Session, len(keys))
	err := parallel(len(keys), 16, func(i int) error {
		s, err := get(ctx, keys[i])
		if errors.Is(err, session.ErrNotFound) {
			return nil
		}
		out[i] = s
		return err
	})
	res := out[:0]
	for _, s := range out {
		if s != nil {
			res = append(res, s)
		}
	}
	return res, err
}

func (st *Store) userKeys(ctx context.Context, user string) ([]session.Key, error) {
	return st.lookupKeys(ctx, st.q.selByUser, user, "lookup_user")
}

// lookupKeys reads the session keys of a lookup table's partition (q selects nas,
// acct_session_id by its key).
func (st *Store) lookupKeys(ctx context.Context, q, key, kind string) ([]session.Key, error) {
	start := time.Now()
	it := st.s.Query(q, key).Consistency(st.cons).IterContext(ctx)
	var keys []session.Key
	var k session.Key
	for it.Scan(&k.NAS, &k.ID) {
		keys = append(keys, k)
	}
	err := it.Close()
	st.m.observe(kind, start, err)
	return keys, err
}

// ByUser returns the active sessions of a user.
func (st *Store) ByUser(ctx context.Context, user string) ([]*session.Session, error) {
	keys, err := st.userKeys(ctx, user)
	if err != nil {
		return nil, err
	}
	return st.getMany(ctx, keys, st.Get)
}

func (st *Store) callingKeys(ctx context.Context, id string) ([]session.Key, error) {
	return st.lookupKeys(ctx, st.q.selByCalling, id, "lookup_calling_station")
}

// ByCallingStation returns the active sessions whose Calling-Station-Id is id.
func (st *Store) ByCallingStation(ctx context.Context, id string) ([]*session.Session, error) {
	keys, err := st.callingKeys(ctx, id)
	if err != nil {
		return nil, err
	}
	out, err := st.getMany(ctx, keys, st.Get)
	return withCalling(out, id), err
}

// withCalling keeps the sessions whose Calling-Station-Id is id: a lookup row may outlive a
// change of the session's (its delete and the new row race in another DC).
func withCalling(in []*session.Session, id string) []*session.Session {
	return slices.DeleteFunc(in, func(s *session.Session) bool { return s.CallingStationID != id })
}

func (st *Store) framedIPKey(ctx context.Context, ip netip.Addr) (session.Key, error) {
	var k session.Key
	start := time.Now()
	err := st.s.Query(st.q.selByIP, ipOrNil(ip)).Consistency(st.cons).ScanContext(ctx, &k.NAS, &k.ID)
	st.m.observe("lookup_framed_ip", start, err)
	if errors.Is(err, gocql.ErrNotFound) {
		return k, session.ErrNotFound
	}
	return k, err
}

// ByFramedIP returns the active session holding a framed IP.
func (st *Store) ByFramedIP(ctx context.Context, ip netip.Addr) (*session.Session, error) {
	if !ip.IsValid() {
		return nil, session.ErrNotFound
	}
	k, err := st.framedIPKey(ctx, ip)
	if err != nil {
		return nil, err
	}
	s, err := st.Get(ctx, k)
	if err == nil && s.FramedIP != ip {
		return nil, session.ErrNotFound
	}
	return s, err
}

// ByNAS returns the active sessions of a NAS.
func (st *Store) ByNAS(ctx context.Context, nas string) ([]*session.Session, error) {
	ids, err := st.nasIDs(ctx, nas)
	if err != nil {
		return nil, err
	}
	keys := make([]session.Key, len(ids))
	for i, id := range ids {
		keys[i] = session.Key{NAS: nas, ID: id}
	}
	return st.getMany(ctx, keys, st.Get)
}

// History returns the most recent closed sessions of a user, newest first.
func (st *Store) History(ctx context.Context, user string, limit int) ([]*session.Session, error) {
	start := time.Now()
	var q *gocql.Query
	if limit > 0 {
		q = st.s.Query(st.q.selClosed, user, limit)
	} else {
		q = st.s.Query(st.q.selClosedAll, user)
	}
	it := q.Consistency(st.hcons).IterContext(ctx)
	var out []*session.Session
	for {
		var r row
		var k session.Key
		if !it.Scan(append([]any{&k.NAS, &k.ID}, r.dest()...)...) {
			break
		}
		out = append(out, r.session(k))
	}
	err := it.Close()
	st.m.observe("read_history", start, err)
	return out, err
}

// HistoryRecord is one row of the accounting history.
type HistoryRecord struct {
	ID      gocql.UUID
	Kind    string
	At      time.Time
	Session *session.Session // the session with the record's own time, counters and state
}

// SessionHistory returns every accounting record of a session, oldest first (support tools,
// tests).
func (st *Store) SessionHistory(ctx context.Context, k session.Key) ([]HistoryRecord, error) {
	it := st.s.Query(st.q.selHistory, k.NAS, k.ID).Consistency(st.hcons).IterContext(ctx)
	var out []HistoryRecord
	for {
		var r row
		var h HistoryRecord
		if !it.Scan(append([]any{&h.ID, &h.Kind, &h.At}, r.dest()...)...) {
			break
		}
		h.Session = r.session(k)
		h.At = h.At.UTC()
		out = append(out, h)
	}
	return out, it.Close()
}
