package cassandra

import (
	"context"
	"errors"
	"hash/fnv"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// record is one accounting message as applied (and as spooled).
type record struct {
	Kind        session.Kind    `json:"kind"`
	Session     session.Session `json:"session"`
	ID          gocql.UUID      `json:"id"`       // the history row's id (idempotent replays)
	Received    time.Time       `json:"received"` // when policing received it
	HistoryOnly bool            `json:"historyOnly,omitempty"`
	// HistoryLookups: the history-only copy of a record (spooled when its row was written
	// but its history was not) still writes the history lookups it was due (historyLookups):
	// its replay reads the row it already merged into, from which that can no longer be told.
	HistoryLookups lookupSet `json:"historyLookups,omitempty"`
	// Quorum: the row is written at QUORUM across data centers, not at the configured
	// (local) consistency — the Start of a session that must not spool (WriteOptions.NoSpool: a
	// Gx CCR-I) is on replicas of two DCs before Apply returns, so losing the DC that wrote
	// it does not lose the session. Never spooled, never set in the spool.
	Quorum bool `json:"-"`
	// Push: a change the policy server pushed (session.WriteOptions.Push), not counted among
	// the client's requests in the row's updates.
	Push bool `json:"push,omitempty"`
	// cacheable: a client's record as it arrives (not a Gx CCR, not replayed from the spool),
	// which the row cache may serve (rowCache.standIn).
	cacheable bool
	// created: applying it wrote a new session's row (session.Result.Created).
	created bool
}

// options are the write options the record was taken with. The policy's Disconnect reason
// travels in the record's session, where the spool has always kept it.
func (r *record) options() session.WriteOptions {
	return session.WriteOptions{Push: r.Push, DisconnectReason: r.Session.DisconnectReason}
}

// Apply merges an accounting update into its session (session.Store).
func (st *Store) Apply(ctx context.Context, u *session.Update, o session.WriteOptions) (session.Result, error) {
	_, res, err := st.apply(ctx, u, o)
	return res, err
}

// apply returns the merged session when it was written to Cassandra (nil when spooled or
// when nothing changed), and what the write did.
func (st *Store) apply(ctx context.Context, u *session.Update, o session.WriteOptions) (*session.Session, session.Result, error) {
	now := st.o.Now()
	rec := &record{Kind: u.Kind, Session: u.Session, Received: now, Push: o.Push}
	rec.Session.DisconnectReason = o.DisconnectReason
	if rec.Session.LastSeen.IsZero() {
		rec.Session.LastSeen = now // what Merge would use: fixed now so a replay merges the same
	}
	rec.ID = historyID(rec.Kind, &rec.Session)
	merged, err := st.applyUpdate(ctx, rec, o.NoSpool)
	// Spooled (merged nil), it is not known yet whether it creates its session.
	return merged, session.Result{Created: err == nil && merged != nil && rec.created}, err
}

// applyUpdate writes a record of an update, or spools it; noSpool: never spooled
// (session.WriteOptions.NoSpool).
func (st *Store) applyUpdate(ctx context.Context, rec *record, noSpool bool) (*session.Session, error) {
	if noSpool {
		// The session's creation, the one write whose loss no later write repairs (a CCR-U
		// or CCR-T lost with its DC leaves the session; the next CCR or the expiry mends it).
		// Reads and the other writes stay local: QUORUM on every CCR would add a cross-DC
		// round trip to each, and needs both surviving DCs' replicas while one DC is down.
		rec.Quorum = rec.Kind == session.KindStart
		return st.applyRecord(ctx, rec)
	}
	rec.cacheable = true
	if st.o.Spool != nil && st.pending.enqueue(rec.Session.Key) {
		st.rows.forget(rec.Session.Key)
		err := st.toSpool(rec, nil)
		if err != nil {
			st.pending.add(rec.Session.Key, -1)
		}
		return nil, err
	}
	merged, err := st.applyRecord(ctx, rec)
	if err != nil && st.o.Spool != nil && spoolOnFailure(err) {
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

// rowError: the history was written but the session row was not.
type rowError struct{ err error }

func (r rowError) Error() string { return "writing the session row: " + r.err.Error() }

func (r rowError) Unwrap() error { return r.err }

// historyError: the session row was written but the history was not.
type historyError struct{ err error }

func (h historyError) Error() string { return "writing the accounting history: " + h.err.Error() }

func (h historyError) Unwrap() error { return h.err }

// applyRecord merges the record onto its row — the row cache's, or else the row read from
// Cassandra — and writes the row, its lookups and the history.
func (st *Store) applyRecord(ctx context.Context, rec *record) (merged *session.Session, err error) {
	k := rec.Session.Key
	if k.NAS == "" || k.ID == "" {
		return nil, errors.New("cassandra store: accounting update without NAS or Acct-Session-Id")
	}
	// A failed write may have landed in part: the row is not known here any more.
	defer func() {
		if err != nil {
			st.rows.forget(k)
		}
	}()
	if old, meta, ok := st.rows.standIn(rec, st.o.Now()); ok {
		if merged, done, err := st.applyOnto(ctx, rec, old, meta, true); done {
			return merged, err
		}
	}
	old, meta, err := st.readRow(ctx, k, st.cons)
	if st.staleRead != nil {
		if s, w, ok := st.staleRead(k); ok {
			old, meta, err = s, rowMeta{wt: w}, nil
		}
	}
	if err != nil {
		return nil, err
	}
	merged, _, err = st.applyOnto(ctx, rec, old, meta, false)
	return merged, err
}

// applyOnto merges the record onto old (its row as read, or as cached: fromCache) and writes.
// From the cache it writes only the row alone, with its history: an Interim that would change a
// lookup, or refresh them, comes back undone (done false) to be applied onto the row read.
func (st *Store) applyOnto(ctx context.Context, rec *record, old *session.Session, meta rowMeta, fromCache bool) (merged *session.Session, done bool, err error) {
	wt := meta.wt
	u := &session.Update{Kind: rec.Kind, Session: rec.Session}
	// A stopped row takes a new session only by session.Reopens (a Start later than the
	// Stop); any other record of it is late and goes to the history only.
	reused := old != nil && old.State == session.Stopped && session.Reopens(old.StopTime, u, rec.Received)
	late := old != nil && old.State == session.Stopped && !reused
	rec.created = old == nil || reused
	switch {
	case rec.created:
		merged = &session.Session{}
		session.Merge(merged, u, rec.options(), rec.Received)
		if old != nil && old.State == session.Stopped {
			old = nil // the NAS reused the id: a new session
		}
	default:
		c := *old
		c.Class = append([]byte(nil), old.Class...)
		merged = &c
		session.Merge(merged, u, rec.options(), rec.Received)
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
			st.m.writesSkipped.Inc()
			rec.HistoryOnly = true
		}
	}
	lookups := rec.HistoryLookups | historyLookups(old, hist, rec.Session.LastSeen)
	ts := writeTimestamp(rec, wt)
	// The framed-IP lookup is one row per address that another session can claim at the
	// same moment (a superseding Start, and the Stop it sends to the old session): it stays
	// in arrival order. Readers check the session it names (ByFramedIP, the Stop's delete).
	ipTS := max(rec.Received.UnixMicro(), wt+1)

	var batchErr, histErr error
	var rw rowWrite // the row's write (none when history only)
	if rec.HistoryOnly {
		histErr = st.writeHistory(ctx, rec, hist, lookups)
	} else {
		cons := st.cons
		if rec.Quorum {
			cons = gocql.Quorum
		}
		var b *gocql.Batch
		b, rw, batchErr = st.sessionBatch(ctx, cons, old, merged, meta.lookupsUntil, rec.Received, ts, ipTS)
		if fromCache {
			if batchErr != nil || len(b.Entries) != 1 {
				// A lookup to write or refresh: what the cache knows of them may be stale.
				st.m.rowCacheRequests.WithLabelValues("bypassed").Inc()
				return nil, false, nil
			}
			st.m.rowCacheRequests.WithLabelValues("hit").Inc()
		}
		switch {
		case batchErr != nil:
		case len(b.Entries) == 1:
			// The row alone (an Interim that changes no lookup): one partition, so its
			// history goes in the same request, an unlogged batch at the row's consistency —
			// one request per message instead of two, and still no batchlog. The row write is
			// atomic by itself; the history's inserts are idempotent, and the record is
			// written again whole if the request fails (spool, the NAS's retransmission).
			b.Type = gocql.UnloggedBatch
			st.historyQueries(b, rec, hist, lookups)
			batchErr = st.execBatch(ctx, b, "write_session")
			if batchErr != nil {
				histErr = batchErr
			}
		default:
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				batchErr = st.execBatch(ctx, b, batchKind(merged))
			}()
			histErr = st.writeHistory(ctx, rec, hist, lookups)
			wg.Wait()
		}
	}
	switch {
	case batchErr != nil:
		if histErr == nil {
			return nil, true, rowError{batchErr}
		}
		return nil, true, batchErr
	case late:
		st.rows.forget(rec.Session.Key)
		merged = old
	case !rec.HistoryOnly:
		st.rows.put(merged, rowMeta{wt: ts, lookupsUntil: rw.lookupsUntil}, rw.ttl, st.o.Now())
	}
	if histErr != nil {
		if st.o.Spool != nil && spoolable(histErr) {
			// The row is in; only the history is missing: spool just that, even when the
			// request's deadline has passed (the rest of a written record must follow).
			h := *rec
			h.HistoryOnly, h.HistoryLookups = true, lookups
			return merged, true, st.toSpool(&h, histErr)
		}
		return nil, true, historyError{histErr}
	}
	return merged, true, nil
}

// stopLead puts a Stop's write after every write of its session's earlier events, even in
// the same second (Event-Timestamp has whole seconds) and after the +1 µs steps of writes that
// merged onto each other.
const stopLead = time.Millisecond

// writeTimestamp is the Cassandra write time of a record's row: its event time (no later than
// its arrival: a NAS clock ahead must not pin rows in the future), a Stop stopLead later, and
// after the row it merged onto (wt) so that what it merged wins.
//
// The event time, not the arrival: a record older than the Stop can be processed after it
// in another DC — queued in an overloaded DC, or replayed from a spool when a DC comes back —
// on a replica that has not received the Stop yet (LOCAL_* consistency). Its read misses the
// Stop, so the checks on the row cannot catch it; with the arrival time as write time its
// "active" won Cassandra's last-write-wins over the Stop once the replicas converged, and the
// session came back from the dead. With the event time the Stop's cells stay the newest.
func writeTimestamp(rec *record, wt int64) int64 {
	at := rec.Session.LastSeen
	if at.IsZero() || at.After(rec.Received) {
		at = rec.Received
	}
	if rec.Kind == session.KindStop {
		at = at.Add(stopLead)
	}
	return max(at.UnixMicro(), wt+1)
}

func ttlSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}

// Lookups outlive their row: written with lookupTTLFactor × the row's TTL, and written again
// only when what is left of that is less than lookupRefresh × the row's TTL (or when they
// change). An Interim that refreshes the row's TTL therefore writes the row's one partition —
// no logged batch across the lookups' partitions, no batchlog — on most Interims, and the
// lookups still live at least one row TTL longer than the row. What outlives an expired row
// names a row that is gone: readers check the session a lookup names (Get, CloseNAS).
const (
	lookupTTLFactor = 4
	lookupRefresh   = 2
)

// lookupsDue reports whether the lookups must be written again to outlive the row's new TTL.
func lookupsDue(until, now time.Time, ttl int) bool {
	return ttl > 0 && until.Before(now.Add(lookupRefresh*time.Duration(ttl)*time.Second))
}

func batchKind(s *session.Session) string {
	if s.State == session.Stopped {
		return "stop_session"
	}
	return "write_session"
}

func (st *Store) execBatch(ctx context.Context, b *gocql.Batch, kind string) error {
	markIdempotent(b)
	start := time.Now()
	err := b.ExecContext(ctx)
	st.m.observe(kind, start, err)
	return err
}

// markIdempotent marks a batch's entries idempotent (the driver's DefaultIdempotence covers
// queries only): ours are timestamped, unconditional writes, retried on the next host
// (conn.go) like single queries.
func markIdempotent(b *gocql.Batch) {
	for i := range b.Entries {
		b.Entries[i].Idempotent = true
	}
}

// rowWrite is what a session batch writes in the row besides the session.
type rowWrite struct {
	lookupsUntil time.Time // until when the lookups live
	ttl          int       // the row's TTL, in seconds (0: none)
}

// sessionBatch builds the logged batch of a session's row and the lookups it changes or
// refreshes (lookupsUntil: until when its lookups live, read with the row; now: the record's
// arrival). The Stop's framed-IP lookup is read here: the only read of the write path's own.
func (st *Store) sessionBatch(ctx context.Context, cons gocql.Consistency, old, s *session.Session, lookupsUntil, now time.Time, ts, ipTS int64) (*gocql.Batch, rowWrite, error) {
	b := st.s.Batch(gocql.LoggedBatch).Consistency(cons).WithTimestamp(ts)
	k := s.Key
	base := append([]any{k.NAS, k.ID}, values(s)...)
	if s.State == session.Stopped {
		b.Query(st.q.insSession, append(base, unset, ttlSeconds(st.o.StoppedTTL))...)
		for _, user := range uniq(s.UserName, oldUser(old)) {
			b.Query(st.q.delByUser, user, k.NAS, k.ID)
		}
		for _, id := range uniq(s.CallingStationID, oldCalling(old)) {
			b.Query(st.q.delByCalling, id, k.NAS, k.ID)
		}
		if k.NAS != session.GxNAS {
			b.Query(st.q.delByNAS, k.NAS, k.ID)
		}
		for _, ip := range uniqIP(s.FramedIP, oldIP(old)) {
			// Another session may hold the address by now (out-of-order Start/Stop).
			var nas, id string
			start := time.Now()
			err := st.s.Query(st.q.selByIP, ipOrNil(ip)).Consistency(cons).ScanContext(ctx, &nas, &id)
			st.m.observe("lookup_framed_ip", start, err)
			if err == nil && nas == k.NAS && id == k.ID {
				b.Query(st.q.delByIP, ipTS, ipOrNil(ip))
			} else if err != nil && !errors.Is(err, gocql.ErrNotFound) {
				return nil, rowWrite{}, err
			}
		}
		st.ipv6Writes(b, old, s, false, 0)
		if s.UserName != "" {
			b.Query(st.q.insClosed, base...)
		}
	} else {
		var rowTTL int
		if st.o.Expiry != nil {
			rowTTL = ttlSeconds(st.o.Expiry(s))
		}
		// Lookups: written when new or changed, or when their TTL runs short (lookupsDue);
		// lookupTTL is the TTL of a lookup written now.
		fresh := old == nil || lookupsDue(lookupsUntil, now, rowTTL)
		lookupTTL := rowTTL
		switch {
		case rowTTL == 0: // no expiry: lookups without a TTL
		case fresh:
			lookupTTL = lookupTTLFactor * rowTTL
			lookupsUntil = now.Add(time.Duration(lookupTTL) * time.Second)
		default: // a changed lookup lives as long as the others
			lookupTTL = max(int(lookupsUntil.Sub(now)/time.Second), rowTTL)
		}
		b.Query(st.q.insSession, append(base, uTime(lookupsUntil), rowTTL)...)
		if s.UserName != "" && (fresh || old.UserName != s.UserName || old.FramedIP != s.FramedIP || !old.StartTime.Equal(s.StartTime)) {
			b.Query(st.q.insByUser, s.UserName, k.NAS, k.ID, uIP(s.FramedIP), uTime(s.StartTime), lookupTTL)
		}
		if u := oldUser(old); u != "" && u != s.UserName {
			b.Query(st.q.delByUser, u, k.NAS, k.ID)
		}
		if s.FramedIP.IsValid() && (fresh || old.FramedIP != s.FramedIP || old.UserName != s.UserName) {
			b.Query(st.q.insByIP, ipOrNil(s.FramedIP), k.NAS, k.ID, uStr(s.UserName), lookupTTL, ipTS)
		}
		if ip := oldIP(old); ip.IsValid() && ip != s.FramedIP {
			b.Query(st.q.delByIP, ipTS, ipOrNil(ip))
		}
		if s.CallingStationID != "" && (fresh || old.CallingStationID != s.CallingStationID || old.UserName != s.UserName) {
			b.Query(st.q.insByCalling, s.CallingStationID, k.NAS, k.ID, uStr(s.UserName), lookupTTL)
		}
		if c := oldCalling(old); c != "" && c != s.CallingStationID {
			b.Query(st.q.delByCalling, c, k.NAS, k.ID)
		}
		if k.NAS != session.GxNAS && (fresh || old.UserName != s.UserName) {
			b.Query(st.q.insByNAS, k.NAS, k.ID, uStr(s.UserName), lookupTTL)
		}
		st.ipv6Writes(b, old, s, fresh, lookupTTL)
		return b, rowWrite{lookupsUntil: lookupsUntil, ttl: rowTTL}, nil
	}
	return b, rowWrite{lookupsUntil: lookupsUntil}, nil
}

func oldUser(s *session.Session) string {
	if s == nil {
		return ""
	}
	return s.UserName
}

func oldCalling(s *session.Session) string {
	if s == nil {
		return ""
	}
	return s.CallingStationID
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

// writeHistory inserts the record into acct_history and its lookups in one unlogged batch
// (historyConsistency): one request instead of one per table, Cassandra's coordinator sends
// each insert to its partition's replicas. Unlogged: the inserts are idempotent (content-
// derived ids), and a record whose batch failed in part is written again whole (spool, NAS
// retransmission).
func (st *Store) writeHistory(ctx context.Context, rec *record, s *session.Session, lookups lookupSet) error {
	b := st.s.Batch(gocql.UnloggedBatch).Consistency(st.hcons).WithTimestamp(rec.Received.UnixMicro())
	st.historyQueries(b, rec, s, lookups)
	return st.execBatch(ctx, b, "write_history")
}

// historyLookups reports which of the history's lookups a record (at: its event time) writes.
// They name sessions, not records — acct_history_by_user and _by_framed_ip a session of a day,
// acct_history_by_hour a session of an hour, each by the record that listed it — and
// acct_history holds every record of a session. So a session's first record of a day writes
// the day's lookups, its first of an hour the hour's (no row before it, or the row last seen
// on another day or hour), and so does a record that changes its user or address; most
// Interims write neither: one partition, acct_history, besides the row, where they wrote four.
func historyLookups(old, s *session.Session, at time.Time) lookupSet {
	if old == nil || old.UserName != s.UserName || old.FramedIP != s.FramedIP {
		return dayLookups | hourLookup
	}
	var l lookupSet
	if utcDay(old.LastSeen) != utcDay(at) {
		l |= dayLookups
	}
	if !old.LastSeen.Truncate(time.Hour).Equal(at.Truncate(time.Hour)) {
		l |= hourLookup
	}
	return l
}

// lookupSet: the history lookups a record writes (historyLookups).
type lookupSet uint8

const (
	dayLookups lookupSet = 1 << iota // acct_history_by_user, acct_history_by_framed_ip
	hourLookup                       // acct_history_by_hour
)

func utcDay(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// historyQueries adds a record's insert into acct_history to b, and into the lookups it is due
// (historyLookups).
func (st *Store) historyQueries(b *gocql.Batch, rec *record, s *session.Session, lookups lookupSet) {
	s = historyRow(rec.Kind, &rec.Session, s)
	k := s.Key
	at := rec.Session.LastSeen
	kind := rec.Kind.String()
	b.Query(st.q.insHistory, append([]any{k.NAS, k.ID, rec.ID, kind, at}, values(s)...)...)
	if lookups&dayLookups != 0 {
		day := utcDay(at)
		if s.UserName != "" {
			b.Query(st.q.insHistByUser, s.UserName, day, rec.ID, k.NAS, k.ID, kind, uIP(s.FramedIP))
		}
		if s.FramedIP.IsValid() {
			b.Query(st.q.insHistByIP, ipOrNil(s.FramedIP), day, rec.ID, k.NAS, k.ID, kind, uStr(s.UserName))
		}
	}
	if lookups&hourLookup != 0 {
		// 16 shards per hour keep a busy hour's partitions small.
		h := fnv.New32a()
		h.Write([]byte(k.NAS))
		h.Write([]byte(k.ID))
		shard := int(h.Sum32() % 16)
		b.Query(st.q.insHistByHour, at.UTC().Truncate(time.Hour), shard, k.NAS, k.ID, rec.ID, kind, uStr(s.UserName), uIP(s.FramedIP))
	}
}

// CloseNAS closes every active session of a NAS (Accounting-On/Off).
func (st *Store) CloseNAS(ctx context.Context, nas string, at time.Time, cause uint32) (int, error) {
	ids, err := st.nasIDs(ctx, nas)
	if err != nil {
		return 0, err
	}
	var n atomic.Int64
	err = parallel(len(ids), 16, func(i int) error {
		k := session.Key{NAS: nas, ID: ids[i]}
		// A lookup outlives its row (lookupTTLFactor): a session whose row expired is not
		// closed again, which would write a Stop for it.
		if _, err := st.Get(ctx, k); errors.Is(err, session.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		_, err := st.Apply(ctx, &session.Update{Kind: session.KindStop, Session: session.Session{
			Key: k, LastSeen: at, TerminateCause: cause,
		}}, session.WriteOptions{})
		if err == nil {
			n.Add(1)
		}
		return err
	})
	return int(n.Load()), err
}
