// Package cassandra is the Cassandra session store (and, in hybrid.go, the hybrid store: a
// bounded local cache in front of it). By job: write.go (accounting into the session row, its
// lookups and the history), read.go (lookups), ipv6.go (the IPv6 lookup), replay.go (the
// spool), authlog.go.
//
// Data model (schema in internal/migrate/migrations): the sessions table keyed by
// (NAS, Acct-Session-Id), with lookup tables sessions_by_user, sessions_by_framed_ip,
// sessions_by_nas and sessions_by_ipv6 (ipv6.go) written together with the base row in one
// logged batch at the configured consistency (LOCAL_QUORUM); an insert-only accounting history
// (every record) with lookups of its sessions by user, framed IP and hour (write.go:
// historyLookups), and the closed sessions per user, at LOCAL_ONE with a 7-day TTL (TWCS).
// Every row write carries a client timestamp from the record's event time and later than the
// row it merged onto (writeTimestamp), so concurrent or replayed writes never roll a session
// back, and a record older than the Stop never revives it, whatever its DC's replica had seen.
//
// Accounting is never lost: when Cassandra is unreachable or times out, the record goes to
// the local spool (fsync'd) and Apply succeeds; the spool replays in order when Cassandra is
// back, in parallel batches (each session's records in order). A record of a session that has
// records in the spool queues behind them, and so does every record while Cassandra is
// failing (pendingSessions); other records go straight to Cassandra while the spool drains.
package cassandra

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
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
	// RowCacheSize bounds the row cache (rowcache.go): sessions whose row this node wrote
	// last, onto which their next Interim merges without reading the row. 0: every
	// accounting message reads its row.
	RowCacheSize int
	// Spool, when set, takes accounting records Cassandra cannot take. The store closes it.
	Spool          *spool.Spool
	ReplayInterval time.Duration // default 1s
	// RemoteDCs take the spool at shutdown when the local datacenter cannot (drain.go).
	RemoteDCs []RemoteDC
	Log       *slog.Logger
	Metrics   *Metrics // the node's; nil: unregistered ones
	// Now is the clock (tests).
	Now func() time.Time
}

// Store is the Cassandra session store.
type Store struct {
	o     Options
	m     *Metrics
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
	rows     *rowCache // nil: none
	// staleRead, set by tests only, answers the accounting path's read of a row in place of
	// Cassandra: a replica that has not received another DC's latest writes yet.
	staleRead func(session.Key) (*session.Session, int64, bool)
}

// Open connects, checks that the schema is there and starts the spool replayer.
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(metrics.Factory{})
	}
	if o.ReplayInterval <= 0 {
		o.ReplayInterval = config.Default().Session.Cassandra.Spool.ReplayInterval.D()
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
		errLog: rateLimiter{every: 10 * time.Second}, rows: newRowCache(o.RowCacheSize, o.Metrics.rowCacheRequests), m: o.Metrics,
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
	err := st.s.Query("SELECT count(*) FROM system_schema.tables WHERE keyspace_name = ? AND table_name IN ('sessions', 'acct_history', 'sessions_closed_by_user', 'auth_log', 'sessions_by_ipv6')",
		st.o.Conn.Keyspace).Consistency(gocql.One).ScanContext(ctx, &n)
	if err != nil {
		return fmt.Errorf("cassandra store: reading the schema: %w", err)
	}
	if n != 5 {
		return fmt.Errorf("cassandra store: keyspace %s has no (or an old) session schema: run `policing migrate`", st.o.Conn.Keyspace)
	}
	// The newest columns the statements name (migrations 0006, 0007, 0012): without them every
	// accounting write would fail at its first read, not here.
	err = st.s.Query("SELECT count(*) FROM system_schema.columns WHERE keyspace_name = ? AND table_name = 'sessions' AND column_name IN ('monitoring', 'lookups_until', 'gx_throttled')",
		st.o.Conn.Keyspace).Consistency(gocql.One).ScanContext(ctx, &n)
	if err != nil {
		return fmt.Errorf("cassandra store: reading the schema: %w", err)
	}
	if n != 3 {
		return fmt.Errorf("cassandra store: keyspace %s has an old session schema (no sessions.gx_throttled or lookups_until): run `policing migrate`", st.o.Conn.Keyspace)
	}
	return nil
}

// Session returns the driver session (benchmarks, support tools).
func (st *Store) Session() *gocql.Session { return st.s }

type queries struct {
	selSession, insSession, insByUser, delByUser, insByIP, delByIP, selByIP string
	insByNAS, delByNAS, selByNAS, selByUser, insHistory, insHistByUser      string
	insHistByIP, insHistByHour, insClosed, selClosed, selClosedAll, insAuth string
	selHistory, insByIPv6, delByIPv6, selByIPv6                             string
	insByCalling, delByCalling, selByCalling                                string
}

func newQueries() queries {
	n := len(sessionCols)
	return queries{
		selSession: "SELECT " + colList() + ", lookups_until, WRITETIME(state) FROM sessions WHERE nas = ? AND acct_session_id = ?",
		insSession: "INSERT INTO sessions (" + colList("nas", "acct_session_id") + ", lookups_until) VALUES (" + marks(n+3) + ") USING TTL ?",
		insByUser:  "INSERT INTO sessions_by_user (user_name, nas, acct_session_id, framed_ip, start_time) VALUES (?, ?, ?, ?, ?) USING TTL ?",
		delByUser:  "DELETE FROM sessions_by_user WHERE user_name = ? AND nas = ? AND acct_session_id = ?",
		insByIP:    "INSERT INTO sessions_by_framed_ip (framed_ip, nas, acct_session_id, user_name) VALUES (?, ?, ?, ?) USING TTL ? AND TIMESTAMP ?",
		delByIP:    "DELETE FROM sessions_by_framed_ip USING TIMESTAMP ? WHERE framed_ip = ?",
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
		insHistByHour: "INSERT INTO acct_history_by_hour (hour, shard, nas, acct_session_id, id, kind, user_name, framed_ip) " +
			"VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		insClosed:    "INSERT INTO sessions_closed_by_user (" + colList("nas", "acct_session_id") + ") VALUES (" + marks(n+2) + ")",
		selClosed:    "SELECT nas, acct_session_id, " + colList() + " FROM sessions_closed_by_user WHERE user_name = ? LIMIT ?",
		selClosedAll: "SELECT nas, acct_session_id, " + colList() + " FROM sessions_closed_by_user WHERE user_name = ?",
		insAuth: "INSERT INTO auth_log (user_name, day, id, nas, calling_station_id, result, reason) " +
			"VALUES (?, ?, ?, ?, ?, ?, ?)",
		selHistory: "SELECT id, kind, at, " + colList() + " FROM acct_history WHERE nas = ? AND acct_session_id = ?",
		insByIPv6:  "INSERT INTO sessions_by_ipv6 (bucket, prefix, nas, acct_session_id, user_name) VALUES (?, ?, ?, ?, ?) USING TTL ?",
		delByIPv6:  "DELETE FROM sessions_by_ipv6 WHERE bucket = ? AND prefix = ? AND nas = ? AND acct_session_id = ?",
		selByIPv6:  "SELECT prefix, nas, acct_session_id FROM sessions_by_ipv6 WHERE bucket = ?",
		insByCalling: "INSERT INTO sessions_by_calling_station (calling_station_id, nas, acct_session_id, user_name) " +
			"VALUES (?, ?, ?, ?) USING TTL ?",
		delByCalling: "DELETE FROM sessions_by_calling_station WHERE calling_station_id = ? AND nas = ? AND acct_session_id = ?",
		selByCalling: "SELECT nas, acct_session_id FROM sessions_by_calling_station WHERE calling_station_id = ?",
	}
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

// parallel runs f(0), ..., f(n-1), at most limit at once, and returns their errors joined.
func parallel(n, limit int, f func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

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
	_ session.SQNCounter = (*Store)(nil)
)
