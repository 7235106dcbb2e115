// Package cassandra is the Cassandra session store (and, in hybrid.go, the hybrid store: a
// bounded local cache in front of it).
//
// Data model (schema in internal/migrate/migrations): the sessions table keyed by
// (NAS, Acct-Session-Id), with lookup tables sessions_by_user, sessions_by_framed_ip and
// sessions_by_nas written together with the base row in one logged batch at the configured
// consistency (LOCAL_QUORUM); an insert-only accounting history with three lookups and the
// closed sessions per user at LOCAL_ONE with a 7-day TTL (TWCS). Every write carries a
// client timestamp that is later than the row it merged onto, so concurrent or replayed
// writes never roll a session back.
//
// Accounting is never lost: when Cassandra is unreachable or times out, the record goes to
// the local spool (fsync'd) and Apply succeeds; the spool replays in order when Cassandra is
// back, in parallel batches (each session's records in order). A record of a session that has
// records in the spool queues behind them, and so does every record while Cassandra is
// failing (pendingSessions); other records go straight to Cassandra while the spool drains.
package cassandra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/spool"
)

// Options configure the store.
type Options struct {
	Conn               ConnOptions
	HistoryConsistency gocql.Consistency // default LOCAL_ONE
	// Expiry gives the TTL of an active session's row and lookups (nil or 0: none): a
	// session whose NAS stops reporting disappears after it.
	Expiry func(*session.Session) time.Duration
	// StoppedTTL keeps stopped rows so that late retransmissions do not revive them.
	StoppedTTL time.Duration
	// Spool, when set, takes accounting records Cassandra cannot take. The store closes it.
	Spool          *spool.Spool
	ReplayInterval time.Duration // default 1s
	// RemoteDCs take the spool at shutdown when the local datacenter cannot (drain.go).
	RemoteDCs []RemoteDC
	Log       *slog.Logger
	// Now is the clock (tests).
	Now func() time.Time
}

// Store is the Cassandra session store.
type Store struct {
	o     Options
	s     *gocql.Session
	log   *slog.Logger
	cons  gocql.Consistency
	hcons gocql.Consistency
	q     queries

	stop     chan struct{}
	stopped  chan struct{}
	closeMu  sync.Once
	replayMu sync.Mutex
	errLog   rateLimiter
	pending  pendingSessions
}

// pendingSessions are the sessions with records in the spool. A new record of such a session
// goes to the spool behind them (its records stay in order). The records of other sessions go
// to the spool too while Cassandra is failing (down: from a failed write until a replayed
// batch succeeds), and straight to Cassandra otherwise: a few timeouts under load do not send
// all accounting to the spool for as long as it takes to drain. After a restart the spooled
// sessions are not known: every record queues until the spool was empty once.
type pendingSessions struct {
	mu   sync.Mutex
	all  bool
	down bool
	n    map[session.Key]int
}

// enqueue reports whether a record of k must go to the spool, and counts it there if so.
func (p *pendingSessions) enqueue(k session.Key) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.all && !p.down && p.n[k] == 0 {
		return false
	}
	p.n[k]++
	return true
}

// add counts a record of k that went to the spool; done uncounts one that left it.
func (p *pendingSessions) add(k session.Key, d int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v := p.n[k] + d; v > 0 {
		p.n[k] = v
	} else {
		delete(p.n, k)
	}
}

// setDown records whether Cassandra is failing.
func (p *pendingSessions) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

// drained: the spool was empty once, so the sessions of a previous run's records are all
// replayed. (The counts stay: a record may be on its way into the spool right now.)
func (p *pendingSessions) drained() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all, p.down = false, false
}

// Open connects, checks that the schema is there and starts the spool replayer.
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ReplayInterval <= 0 {
		o.ReplayInterval = time.Second
	}
	if o.HistoryConsistency == 0 {
		o.HistoryConsistency = gocql.LocalOne
	}
	if o.Conn.Consistency == 0 {
		o.Conn.Consistency = gocql.LocalQuorum
	}
	if o.Conn.Keyspace == "" {
		return nil, errors.New("cassandra store: no keyspace")
	}
	// The driver needs one reachable contact point at start, spool or not.
	sess, err := Connect(ctx, o.Conn)
	if err != nil {
		return nil, explainConnect(ctx, o.Conn, err)
	}
	st := &Store{
		o: o, s: sess, log: o.Log, cons: o.Conn.Consistency, hcons: o.HistoryConsistency,
		q: newQueries(), stop: make(chan struct{}), stopped: make(chan struct{}),
		errLog: rateLimiter{every: 10 * time.Second},
	}
	st.pending.n = map[session.Key]int{}
	st.pending.all = o.Spool != nil && o.Spool.Pending() // left by the previous run
	if err := st.checkSchema(ctx); err != nil {
		sess.Close()
		return nil, err
	}
	go st.replayer()
	return st, nil
}

// explainConnect tells a missing keyspace apart from an unreachable cluster: the driver
// reports both as "no connections were made", and a node waiting for its migration should
// say what it waits for.
func explainConnect(ctx context.Context, o ConnOptions, err error) error {
	ks := o.Keyspace
	o.Keyspace, o.NumConns = "", 1
	s, cerr := Connect(ctx, o)
	if cerr != nil {
		return err
	}
	defer s.Close()
	var n int
	if qerr := s.Query("SELECT count(*) FROM system_schema.keyspaces WHERE keyspace_name = ?", ks).
		Consistency(gocql.One).ScanContext(ctx, &n); qerr == nil && n == 0 {
		return fmt.Errorf("cassandra store: keyspace %s does not exist: run `policing migrate`", ks)
	}
	return err
}

func (st *Store) checkSchema(ctx context.Context) error {
	var n int
	err := st.s.Query("SELECT count(*) FROM system_schema.tables WHERE keyspace_name = ? AND table_name IN ('sessions', 'acct_history', 'sessions_closed_by_user', 'auth_log')",
		st.o.Conn.Keyspace).Consistency(gocql.One).ScanContext(ctx, &n)
	if err != nil {
		return fmt.Errorf("cassandra store: reading the schema: %w", err)
	}
	if n != 4 {
		return fmt.Errorf("cassandra store: keyspace %s has no (or an old) session schema: run `policing migrate`", st.o.Conn.Keyspace)
	}
	return nil
}

// Session returns the driver session (benchmarks, support tools).
func (st *Store) Session() *gocql.Session { return st.s }

type queries struct {
	selSession, insSession, insByUser, delByUser, insByIP, delByIP, selByIP string
	insByNAS, delByNAS, selByNAS, selByUser, insHistory, insHistByUser      string
	insHistByIP, insHistByTime, insClosed, selClosed, selClosedAll, insAuth string
	selHistory                                                              string
}

func newQueries() queries {
	n := len(sessionCols)
	return queries{
		selSession: "SELECT " + colList() + ", WRITETIME(state) FROM sessions WHERE nas = ? AND acct_session_id = ?",
		insSession: "INSERT INTO sessions (" + colList("nas", "acct_session_id") + ") VALUES (" + marks(n+2) + ") USING TTL ?",
		insByUser:  "INSERT INTO sessions_by_user (user_name, nas, acct_session_id, framed_ip, start_time) VALUES (?, ?, ?, ?, ?) USING TTL ?",
		delByUser:  "DELETE FROM sessions_by_user WHERE user_name = ? AND nas = ? AND acct_session_id = ?",
		insByIP:    "INSERT INTO sessions_by_framed_ip (framed_ip, nas, acct_session_id, user_name) VALUES (?, ?, ?, ?) USING TTL ?",
		delByIP:    "DELETE FROM sessions_by_framed_ip WHERE framed_ip = ?",
		selByIP:    "SELECT nas, acct_session_id FROM sessions_by_framed_ip WHERE framed_ip = ?",
		insByNAS:   "INSERT INTO sessions_by_nas (nas, acct_session_id, user_name) VALUES (?, ?, ?) USING TTL ?",
		delByNAS:   "DELETE FROM sessions_by_nas WHERE nas = ? AND acct_session_id = ?",
		selByNAS:   "SELECT acct_session_id FROM sessions_by_nas WHERE nas = ?",
		selByUser:  "SELECT nas, acct_session_id FROM sessions_by_user WHERE user_name = ?",
		insHistory: "INSERT INTO acct_history (" + colList("nas", "acct_session_id", "id", "kind", "at") + ") VALUES (" + marks(n+5) + ")",
		insHistByUser: "INSERT INTO acct_history_by_user (user_name, day, id, nas, acct_session_id, kind, framed_ip) " +
			"VALUES (?, ?, ?, ?, ?, ?, ?)",
		insHistByIP: "INSERT INTO acct_history_by_framed_ip (framed_ip, day, id, nas, acct_session_id, kind, user_name) " +
			"VALUES (?, ?, ?, ?, ?, ?, ?)",
		insHistByTime: "INSERT INTO acct_history_by_time (minute, shard, id, nas, acct_session_id, kind, user_name, framed_ip) " +
			"VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		insClosed:    "INSERT INTO sessions_closed_by_user (" + colList("nas", "acct_session_id") + ") VALUES (" + marks(n+2) + ")",
		selClosed:    "SELECT nas, acct_session_id, " + colList() + " FROM sessions_closed_by_user WHERE user_name = ? LIMIT ?",
		selClosedAll: "SELECT nas, acct_session_id, " + colList() + " FROM sessions_closed_by_user WHERE user_name = ?",
		insAuth: "INSERT INTO auth_log (user_name, day, id, nas, calling_station_id, result, reason) " +
			"VALUES (?, ?, ?, ?, ?, ?, ?)",
		selHistory: "SELECT id, kind, at, " + colList() + " FROM acct_history WHERE nas = ? AND acct_session_id = ?",
	}
}

// record is one accounting message as applied (and as spooled).
type record struct {
	Kind        session.Kind    `json:"kind"`
	Session     session.Session `json:"session"`
	ID          gocql.UUID      `json:"id"`       // the history row's id (idempotent replays)
	Received    time.Time       `json:"received"` // when policing received it
	HistoryOnly bool            `json:"historyOnly,omitempty"`
}

// Apply merges an accounting update into its session (session.Store).
func (st *Store) Apply(ctx context.Context, u *session.Update) error {
	_, err := st.apply(ctx, u)
	return err
}

// apply returns the merged session when it was written to Cassandra (nil when spooled or
// when nothing changed).
func (st *Store) apply(ctx context.Context, u *session.Update) (*session.Session, error) {
	now := st.o.Now()
	rec := &record{Kind: u.Kind, Session: u.Session, Received: now}
	if rec.Session.LastSeen.IsZero() {
		rec.Session.LastSeen = now // what Merge would use: fixed now so a replay merges the same
	}
	rec.ID = historyID(rec.Kind, &rec.Session)
	if st.o.Spool != nil && st.pending.enqueue(rec.Session.Key) {
		err := st.toSpool(rec, nil)
		if err != nil {
			st.pending.add(rec.Session.Key, -1)
		}
		return nil, err
	}
	merged, err := st.applyRecord(ctx, rec)
	if err != nil && st.o.Spool != nil && spoolOnFailure(err, ctx.Err() != nil) {
		// From now on this session's records queue behind this one.
		d := 0
		if !rec.HistoryOnly {
			d = 1
		}
		st.pending.add(rec.Session.Key, d)
		st.pending.setDown(true)
		if err := st.toSpool(rec, err); err != nil {
			st.pending.add(rec.Session.Key, -d)
			return nil, err
		}
		return nil, nil
	}
	return merged, err
}

func (st *Store) toSpool(rec *record, cause error) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("cassandra store: encoding for the spool: %w", err)
	}
	if err := st.o.Spool.Append(b); err != nil {
		if cause != nil {
			return fmt.Errorf("cassandra store: %v; spool: %w", cause, err)
		}
		return err
	}
	if cause != nil && st.errLog.ok() {
		st.log.Warn("cassandra unavailable: accounting goes to the spool", "err", cause)
	}
	return nil
}

// spoolable reports whether err means "Cassandra cannot take it now" (retry later) rather
// than "this request is wrong".
func spoolable(err error) bool {
	var re gocql.RequestError
	if errors.As(err, &re) {
		switch re.Code() {
		case gocql.ErrCodeUnavailable, gocql.ErrCodeOverloaded, gocql.ErrCodeBootstrapping,
			gocql.ErrCodeWriteTimeout, gocql.ErrCodeReadTimeout, gocql.ErrCodeWriteFailure,
			gocql.ErrCodeReadFailure, gocql.ErrCodeServer, gocql.ErrCodeTruncate:
			return true
		}
		return false
	}
	var hist historyError
	if errors.As(err, &hist) {
		return spoolable(hist.err)
	}
	// Driver-side: no connections, timeouts, closed connections, network errors.
	return true
}

// spoolOnFailure reports whether a record whose write failed goes to the spool: when
// Cassandra cannot take it now, and either the request still waits for the outcome or part
// of the record is written already. A request past its deadline is not acknowledged and its
// NAS retransmits; but when its history is in and its row is not, a NAS that gives up would
// leave a Stop in the history of a session that stays active — the rest must follow.
func spoolOnFailure(err error, requestDone bool) bool {
	var partial rowError
	return spoolable(err) && (!requestDone || errors.As(err, &partial))
}

// rowError: the history was written but the session row was not.
type rowError struct{ err error }

func (r rowError) Error() string { return "writing the session row: " + r.err.Error() }
func (r rowError) Unwrap() error { return r.err }

// historyError: the session row was written but the history was not.
type historyError struct{ err error }

func (h historyError) Error() string { return "writing the accounting history: " + h.err.Error() }
func (h historyError) Unwrap() error { return h.err }

func (st *Store) readRow(ctx context.Context, k session.Key, cons gocql.Consistency) (*session.Session, int64, error) {
	var r row
	var wt int64
	start := time.Now()
	err := st.s.Query(st.q.selSession, k.NAS, k.ID).Consistency(cons).ScanContext(ctx, append(r.dest(), &wt)...)
	observe("read_session", start, err)
	if errors.Is(err, gocql.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	s := r.session()
	s.Key = k
	return s, wt, nil
}

// applyRecord reads the row, merges, and writes the row, its lookups and the history.
func (st *Store) applyRecord(ctx context.Context, rec *record) (*session.Session, error) {
	k := rec.Session.Key
	if k.NAS == "" || k.ID == "" {
		return nil, errors.New("cassandra store: accounting update without NAS or Acct-Session-Id")
	}
	old, wt, err := st.readRow(ctx, k, st.cons)
	if err != nil {
		return nil, err
	}
	u := &session.Update{Kind: rec.Kind, Session: rec.Session}
	var merged *session.Session
	// A Start on a stopped row is a new session when the NAS reused the Acct-Session-Id (its
	// Start is later than the Stop); a Start no later than the Stop is that session's own,
	// replayed from a spool or delayed, and must not revive it.
	reused := old != nil && old.State == session.Stopped && rec.Kind == session.KindStart &&
		rec.Session.LastSeen.After(old.StopTime)
	late := old != nil && old.State == session.Stopped && !reused
	switch {
	case old == nil || reused:
		merged = &session.Session{}
		session.Merge(merged, u, rec.Received)
		if old != nil && old.State == session.Stopped {
			old = nil // the NAS reused the id: a new session
		}
	default:
		c := *old
		c.Class = append([]byte(nil), old.Class...)
		merged = &c
		session.Merge(merged, u, rec.Received)
	}
	if late {
		// A late message of a stopped session: history only, the row stays stopped.
		rec.HistoryOnly = true
	}
	hist := merged // the session the history row describes (historyRow)
	if old != nil && sameRow(old, merged) {
		// Nothing to write in the row: a copy of the record that made it, or an older record
		// (replayed from a spool after the session's later ones were applied in another DC).
		// The history is written all the same: a copy lands on its original's row, which the
		// original may have missed (its row write can land while its history write fails); an
		// older record gets its own.
		hist = old
		if !rec.HistoryOnly {
			writesSkipped.Inc()
			rec.HistoryOnly = true
		}
	}
	ts := max(rec.Received.UnixMicro(), wt+1)

	var wg sync.WaitGroup
	var batchErr, histErr error
	if !rec.HistoryOnly {
		wg.Add(1)
		go func() {
			defer wg.Done()
			batchErr = st.writeSession(ctx, old, merged, ts)
		}()
	}
	histErr = st.writeHistory(ctx, rec, hist)
	wg.Wait()
	if batchErr != nil {
		if histErr == nil {
			return nil, rowError{batchErr}
		}
		return nil, batchErr
	}
	if late {
		merged = old
	}
	if histErr != nil {
		if st.o.Spool != nil && spoolable(histErr) {
			// The row is in; only the history is missing: spool just that, even when the
			// request's deadline has passed (the rest of a written record must follow).
			h := *rec
			h.HistoryOnly = true
			return merged, st.toSpool(&h, histErr)
		}
		return nil, historyError{histErr}
	}
	return merged, nil
}

func ttlSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}

func (st *Store) writeSession(ctx context.Context, old, s *session.Session, ts int64) error {
	b := st.s.Batch(gocql.LoggedBatch).Consistency(st.cons).WithTimestamp(ts)
	k := s.Key
	base := append([]any{k.NAS, k.ID}, values(s)...)
	kind := "write_session"
	if s.State == session.Stopped {
		kind = "stop_session"
		b.Query(st.q.insSession, append(base, ttlSeconds(st.o.StoppedTTL))...)
		for _, user := range uniq(s.UserName, oldUser(old)) {
			b.Query(st.q.delByUser, user, k.NAS, k.ID)
		}
		b.Query(st.q.delByNAS, k.NAS, k.ID)
		for _, ip := range uniqIP(s.FramedIP, oldIP(old)) {
			// Another session may hold the address by now (out-of-order Start/Stop).
			var nas, id string
			err := st.s.Query(st.q.selByIP, ipOrNil(ip)).Consistency(st.cons).ScanContext(ctx, &nas, &id)
			if err == nil && nas == k.NAS && id == k.ID {
				b.Query(st.q.delByIP, ipOrNil(ip))
			} else if err != nil && !errors.Is(err, gocql.ErrNotFound) {
				return err
			}
		}
		if s.UserName != "" {
			b.Query(st.q.insClosed, base...)
		}
	} else {
		var ttl int
		if st.o.Expiry != nil {
			ttl = ttlSeconds(st.o.Expiry(s))
		}
		b.Query(st.q.insSession, append(base, ttl)...)
		// Lookups: written when new or changed, or to refresh their TTL.
		fresh := old == nil || ttl > 0
		if s.UserName != "" && (fresh || old.UserName != s.UserName || old.FramedIP != s.FramedIP || !old.StartTime.Equal(s.StartTime)) {
			b.Query(st.q.insByUser, s.UserName, k.NAS, k.ID, uIP(s.FramedIP), uTime(s.StartTime), ttl)
		}
		if u := oldUser(old); u != "" && u != s.UserName {
			b.Query(st.q.delByUser, u, k.NAS, k.ID)
		}
		if s.FramedIP.IsValid() && (fresh || old.FramedIP != s.FramedIP || old.UserName != s.UserName) {
			b.Query(st.q.insByIP, ipOrNil(s.FramedIP), k.NAS, k.ID, uStr(s.UserName), ttl)
		}
		if ip := oldIP(old); ip.IsValid() && ip != s.FramedIP {
			b.Query(st.q.delByIP, ipOrNil(ip))
		}
		if fresh || old.UserName != s.UserName {
			b.Query(st.q.insByNAS, k.NAS, k.ID, uStr(s.UserName), ttl)
		}
	}
	start := time.Now()
	err := b.ExecContext(ctx)
	observe(kind, start, err)
	return err
}

func oldUser(s *session.Session) string {
	if s == nil {
		return ""
	}
	return s.UserName
}

func oldIP(s *session.Session) netip.Addr {
	if s == nil {
		return netip.Addr{}
	}
	return s.FramedIP
}

func uniq(a, b string) []string {
	var out []string
	if a != "" {
		out = append(out, a)
	}
	if b != "" && b != a {
		out = append(out, b)
	}
	return out
}

func uniqIP(a, b netip.Addr) []netip.Addr {
	var out []netip.Addr
	if a.IsValid() {
		out = append(out, a)
	}
	if b.IsValid() && b != a {
		out = append(out, b)
	}
	return out
}

// writeHistory inserts the record into acct_history and its lookups (LOCAL_ONE, in parallel).
func (st *Store) writeHistory(ctx context.Context, rec *record, s *session.Session) error {
	s = historyRow(rec.Kind, &rec.Session, s)
	k := s.Key
	at := rec.Session.LastSeen
	day := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
	minute := at.UTC().Truncate(time.Minute)
	h := fnv.New32a()
	h.Write([]byte(k.NAS))
	h.Write([]byte(k.ID))
	shard := int(h.Sum32() % 16)
	kind := rec.Kind.String()
	type stmt struct {
		q    string
		args []any
	}
	stmts := []stmt{{st.q.insHistory, append([]any{k.NAS, k.ID, rec.ID, kind, at}, values(s)...)}}
	if s.UserName != "" {
		stmts = append(stmts, stmt{st.q.insHistByUser, []any{s.UserName, day, rec.ID, k.NAS, k.ID, kind, uIP(s.FramedIP)}})
	}
	if s.FramedIP.IsValid() {
		stmts = append(stmts, stmt{st.q.insHistByIP, []any{ipOrNil(s.FramedIP), day, rec.ID, k.NAS, k.ID, kind, uStr(s.UserName)}})
	}
	stmts = append(stmts, stmt{st.q.insHistByTime, []any{minute, shard, rec.ID, k.NAS, k.ID, kind, uStr(s.UserName), uIP(s.FramedIP)}})
	errs := make([]error, len(stmts))
	var wg sync.WaitGroup
	for i, x := range stmts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			errs[i] = st.s.Query(x.q, x.args...).Consistency(st.hcons).WithTimestamp(rec.Received.UnixMicro()).ExecContext(ctx)
			observe("write_history", start, errs[i])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// CloseNAS closes every active session of a NAS (Accounting-On/Off).
func (st *Store) CloseNAS(ctx context.Context, nas string, at time.Time, cause uint32) (int, error) {
	ids, err := st.nasIDs(ctx, nas)
	if err != nil {
		return 0, err
	}
	sem := make(chan struct{}, 16)
	var mu sync.Mutex
	var errs []error
	n := 0
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := st.Apply(ctx, &session.Update{Kind: session.KindStop, Session: session.Session{
				Key: session.Key{NAS: nas, ID: id}, LastSeen: at, TerminateCause: cause,
			}})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			n++
		}()
	}
	wg.Wait()
	return n, errors.Join(errs...)
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
	observe("lookup_nas", start, err)
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

// getMany reads the active sessions of keys in parallel (bounded).
func (st *Store) getMany(ctx context.Context, keys []session.Key, get func(context.Context, session.Key) (*session.Session, error)) ([]*session.Session, error) {
	out := make([]*session.Session, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s, err := get(ctx, k)
			if errors.Is(err, session.ErrNotFound) {
				err = nil
			}
			out[i], errs[i] = s, err
		}()
	}
	wg.Wait()
	res := out[:0]
	for _, s := range out {
		if s != nil {
			res = append(res, s)
		}
	}
	return res, errors.Join(errs...)
}

func (st *Store) userKeys(ctx context.Context, user string) ([]session.Key, error) {
	start := time.Now()
	it := st.s.Query(st.q.selByUser, user).Consistency(st.cons).IterContext(ctx)
	var keys []session.Key
	var k session.Key
	for it.Scan(&k.NAS, &k.ID) {
		keys = append(keys, k)
	}
	err := it.Close()
	observe("lookup_user", start, err)
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

func (st *Store) framedIPKey(ctx context.Context, ip netip.Addr) (session.Key, error) {
	var k session.Key
	start := time.Now()
	err := st.s.Query(st.q.selByIP, ipOrNil(ip)).Consistency(st.cons).ScanContext(ctx, &k.NAS, &k.ID)
	observe("lookup_framed_ip", start, err)
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
		s := r.session()
		s.Key = k
		out = append(out, s)
	}
	err := it.Close()
	observe("read_history", start, err)
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
		h.Session = r.session()
		h.Session.Key = k
		h.At = h.At.UTC()
		out = append(out, h)
	}
	return out, it.Close()
}

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
	observe("write_auth_log", start, err)
	return err
}

// Ready reports whether the store can take writes now: Cassandra answers, or the spool has
// room.
func (st *Store) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var v string
	err := st.s.Query("SELECT release_version FROM system.local").Consistency(gocql.One).ScanContext(ctx, &v)
	if err == nil {
		return nil
	}
	if st.o.Spool != nil {
		return nil // accounting goes to the spool meanwhile; auth reads what it can
	}
	return fmt.Errorf("cassandra: %w", err)
}

// ReplayNow replays the spool once (also done every ReplayInterval in the background) and
// returns how many records went to Cassandra.
func (st *Store) ReplayNow(ctx context.Context) (int, error) {
	if st.o.Spool == nil {
		return 0, nil
	}
	st.replayMu.Lock()
	defer st.replayMu.Unlock()
	n, err := st.o.Spool.ReplayBatch(replayBatch, func(recs [][]byte) error { return st.replayBatch(ctx, recs) })
	if st.o.Spool.Records() == 0 {
		st.pending.drained()
	}
	return n, err
}

// Replay in batches of up to replayBatch records, the sessions of a batch in parallel (at
// most replayConcurrency at once), each session's records in order.
const (
	replayBatch       = 256
	replayConcurrency = 16
)

func (st *Store) replayBatch(ctx context.Context, recs [][]byte) error {
	var order []session.Key
	groups := map[session.Key][]*record{}
	counted := map[session.Key]int{} // records that hold their session back (see apply)
	for _, b := range recs {
		rec := &record{}
		if err := json.Unmarshal(b, rec); err != nil {
			st.log.Error("spool: undecodable record skipped", "err", err, "record", string(b))
			spoolUndecodable.Inc()
			continue
		}
		k := rec.Session.Key
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], rec)
		if !rec.HistoryOnly {
			counted[k]++
		}
	}
	errs := make([]error, len(order))
	sem := make(chan struct{}, replayConcurrency)
	var wg sync.WaitGroup
	for i, k := range order {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			for _, rec := range groups[k] {
				rctx, cancel := context.WithTimeout(ctx, st.o.Conn.Timeout+time.Second)
				_, err := st.applyRecord(rctx, rec)
				cancel()
				if err != nil {
					errs[i] = err
					return // the batch is replayed again: nothing of it is uncounted
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// The whole batch is in Cassandra: Cassandra works, and the batch's sessions no longer
	// wait for these records.
	st.pending.setDown(false)
	for k, n := range counted {
		st.pending.add(k, -n)
	}
	return nil
}

func (st *Store) replayer() {
	defer close(st.stopped)
	t := time.NewTicker(st.o.ReplayInterval)
	defer t.Stop()
	for {
		select {
		case <-st.stop:
			return
		case <-t.C:
		}
		if st.o.Spool == nil || !st.o.Spool.Pending() {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-st.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		n, err := st.ReplayNow(ctx)
		cancel()
		if n > 0 {
			st.log.Info("spool: replayed accounting records to Cassandra", "records", n, "left", st.o.Spool.Records())
		}
		if err != nil && st.errLog.ok() {
			st.log.Warn("spool: replay paused: Cassandra still unavailable", "err", err, "left", st.o.Spool.Records())
		}
	}
}

// Close stops the replayer, delivers the spool to any datacenter that takes it until ctx
// ends (drain.go; at most closeDrain when ctx has no deadline), closes the spool and the
// driver. It fails when records are left.
func (st *Store) Close(ctx context.Context) error {
	var err error
	st.closeMu.Do(func() {
		close(st.stop)
		<-st.stopped
		if st.o.Spool != nil {
			if _, ok := ctx.Deadline(); !ok {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, closeDrain)
				defer cancel()
			}
			err = errors.Join(st.drain(ctx), st.o.Spool.Close())
		}
		st.s.Close()
	})
	return err
}

// closeDrain bounds the delivery of the spool by a Close without a deadline (a node that
// failed to start, tools, tests): the records stay on disk for the next start.
const closeDrain = 5 * time.Second

// rateLimiter lets one log line through per interval.
type rateLimiter struct {
	mu    sync.Mutex
	every time.Duration
	last  time.Time
}

func (r *rateLimiter) ok() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.last) < r.every {
		return false
	}
	r.last = time.Now()
	return true
}

var (
	_ session.Store      = (*Store)(nil)
	_ session.AuthLogger = (*Store)(nil)
)
