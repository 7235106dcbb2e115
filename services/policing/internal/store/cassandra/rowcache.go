package cassandra

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openaaa/openaaa/services/policing/internal/lru"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// rowCache holds the session rows this node wrote last, so that the next Interim of a session
// can merge onto its row without reading it first: most Interims cost one request instead of
// two (docs/cassandra.md, "The row cache").
//
// A cached row stands in for the read as a replica that missed the last writes of other nodes
// would: the store already orders a session's writes by event time, never by what a read saw
// (writeTimestamp), so an Interim merged onto an older view of its row loses to every later
// write — another node's Interim, a Stop — as it does after a stale read. What a stale view
// could get wrong besides is ruled out before the cache is used (standIn) or by what the write
// turns out to need (applyRecord): a changed lookup, a new session under a reused id, an
// out-of-order record, a row that may have expired.
type rowCache struct {
	c        *lru.Cache[session.Key, cachedRow]
	requests *prometheus.CounterVec // openaaa_store_row_cache_total
}

type cachedRow struct {
	s    *session.Session
	meta rowMeta
	// until: the row's TTL runs out then (zero: no TTL); past it the row may be gone.
	until time.Time
}

// startSlack is how much later than the cached row's start an Interim may place its session's
// start (its event time less Acct-Session-Time): clocks and rounding. Later than that, it
// belongs to a new session under a reused Acct-Session-Id, which the row must tell.
const startSlack = time.Minute

func newRowCache(size int, requests *prometheus.CounterVec) *rowCache {
	if size <= 0 {
		return nil
	}
	return &rowCache{c: lru.New[session.Key, cachedRow](size), requests: requests}
}

// standIn returns the cached row of rec's session, and its metadata, when it may stand in for
// reading the row: an Interim of a live client request (not replayed from the spool, not a
// Gx CCR: Gx counts requests in the row), later than the cached row and of the same session,
// while the row's TTL runs.
func (rc *rowCache) standIn(rec *record, now time.Time) (*session.Session, rowMeta, bool) {
	if rc == nil || !rec.cacheable || rec.Kind != session.KindInterim {
		return nil, rowMeta{}, false
	}
	e, ok := rc.c.Get(rec.Session.Key)
	in := &rec.Session
	switch {
	case !ok:
		rc.requests.WithLabelValues("miss").Inc()
		return nil, rowMeta{}, false
	case e.s.State != session.Active, !e.until.IsZero() && !now.Before(e.until),
		in.LastSeen.Before(e.s.LastSeen), in.SessionTime < e.s.SessionTime,
		in.SessionTime > 0 && in.LastSeen.Add(-time.Duration(in.SessionTime)*time.Second).After(e.s.StartTime.Add(startSlack)):
		rc.requests.WithLabelValues("refused").Inc()
		return nil, rowMeta{}, false
	}
	return clone(e.s), e.meta, true
}

// put records the row a record wrote (s: as merged; wt: its write time; lookupsUntil; ttl: the
// row's, in seconds). A stopped row is dropped: the cache serves Interims of live sessions.
func (rc *rowCache) put(s *session.Session, meta rowMeta, ttl int, now time.Time) {
	if rc == nil {
		return
	}
	if s.State != session.Active {
		rc.c.Remove(s.Key)
		return
	}
	e := cachedRow{s: clone(s), meta: meta}
	if ttl > 0 {
		e.until = now.Add(time.Duration(ttl) * time.Second)
	}
	// Two records of one session applied at once: the later write's row stays.
	rc.c.Put(s.Key, e, func(old cachedRow) bool { return old.meta.wt > meta.wt })
}

// forget drops k: its row is not known here (a failed or spooled write, a late record).
func (rc *rowCache) forget(k session.Key) {
	if rc != nil {
		rc.c.Remove(k)
	}
}
