package cassandra_test

import (
	"errors"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/cassandratest"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/store/cassandra"
)

// rowCacheResults reads openaaa_store_row_cache_total by result.
func rowCacheResults(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, r := range []string{"hit", "miss", "refused", "bypassed"} {
		out[r] = counterValue(t, "openaaa_store_row_cache_total", "result", r)
	}
	return out
}

// applyCounting applies u and returns the requests it sent by kind and the row cache's
// results it counted.
func applyCounting(t *testing.T, st session.Store, u *session.Update, o ...session.WriteOptions) (map[string]uint64, map[string]float64) {
	t.Helper()
	reqs, res := statements(t), rowCacheResults(t)
	if _, err := st.Apply(ctx(t), u, append(o, session.WriteOptions{})[0]); err != nil {
		t.Fatal(err)
	}
	d := statements(t)
	for k, v := range reqs {
		d[k] -= v
	}
	r := rowCacheResults(t)
	for k, v := range res {
		r[k] -= v
	}
	return d, r
}

// tick is an Interim n minutes into a session started at start, as a NAS sends it: its
// Acct-Session-Time is the time since the start.
func tick(nas, id string, start time.Time, n int) *session.Update {
	return interim(nas, id, n, start.Add(time.Duration(n)*time.Minute))
}

// An Interim of a session this node wrote last merges onto the cached row: one request (the
// row and its history), no read; the row holds what the read path would have written, its TTL
// refreshed. What the cache cannot vouch for reads the row: a lookup to refresh, a record
// older than the cached row, a row whose TTL may have run out, a Stop, a Gx CCR.
func TestRowCacheInterimReadsNothing(t *testing.T) {
	cassandratest.Skip(t, cluster)
	clk := &settable{now: t0}
	st := migratedStore(t, cassandra.Options{RowCacheSize: 100, Now: clk.Now,
		Expiry: func(*session.Session) time.Duration { return 25 * time.Minute }})
	k := session.Key{NAS: "nasR", ID: "r1"}
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Minute) }

	if n, r := applyCounting(t, st, start("nasR", "r1", "rita", "10.8.0.1", t0)); n["read_session"] != 1 || r["miss"] != 0 {
		t.Fatalf("Start: requests %v, cache %v; want a read (a Start never asks the cache)", n, r)
	}
	for i := 1; i <= 3; i++ {
		clk.Set(at(5 * i))
		n, r := applyCounting(t, st, tick("nasR", "r1", t0, 5*i))
		if n["read_session"] != 0 || n["write_session"] != 1 || n["write_history"] != 0 || r["hit"] != 1 {
			t.Fatalf("Interim %d: requests %v, cache %v; want one write (row and history) and no read", i, n, r)
		}
	}
	s, err := st.Get(ctx(t), k)
	if err != nil || s.SessionTime != 900 || s.InputOctets != 15000 || s.Updates != 4 || string(s.Class) != "cls" ||
		s.UserName != "rita" || !s.StartTime.Equal(t0) || !s.LastSeen.Equal(at(15)) {
		t.Fatalf("row after the cached Interims: %+v, %v", s, err)
	}
	var ttl int
	if err := st.Session().Query("SELECT TTL(session_time) FROM sessions WHERE nas = 'nasR' AND acct_session_id = 'r1'").Scan(&ttl); err != nil || ttl < 24*60 {
		t.Fatalf("TTL(session_time) = %d, %v: the cached write did not refresh the row's TTL", ttl, err)
	}
	if recs, _ := st.SessionHistory(ctx(t), k); len(recs) != 4 {
		t.Fatalf("history: %d records, want the Start and 3 Interims", len(recs))
	}

	// An older record than the cached row (out of order): read, merged, the row not rolled back.
	n, r := applyCounting(t, st, tick("nasR", "r1", t0, 12))
	if n["read_session"] != 1 || r["refused"] != 1 {
		t.Fatalf("older Interim: requests %v, cache %v; want it refused and the row read", n, r)
	}
	clk.Set(at(35))
	if _, r := applyCounting(t, st, tick("nasR", "r1", t0, 35)); r["hit"] != 1 {
		t.Fatalf("Interim 35 min in: cache %v; want a hit", r)
	}
	// The lookups' TTL runs short (100 min written at the Start, refreshed under 50 left): the
	// write would rewrite them, which the cache cannot vouch for: read after all.
	clk.Set(at(55))
	n, r = applyCounting(t, st, tick("nasR", "r1", t0, 55))
	if n["read_session"] != 1 || n["write_history"] != 1 || r["bypassed"] != 1 {
		t.Fatalf("Interim refreshing the lookups: requests %v, cache %v; want it bypassed: a read, the logged batch, the history", n, r)
	}
	if got, err := st.ByUser(ctx(t), "rita"); err != nil || len(got) != 1 || got[0].SessionTime != 55*60 {
		t.Fatalf("ByUser after the refresh: %+v, %v", got, err)
	}
	// Silent for longer than the row's TTL: the row may be gone; read.
	clk.Set(at(85))
	if n, r := applyCounting(t, st, tick("nasR", "r1", t0, 85)); n["read_session"] != 1 || r["refused"] != 1 {
		t.Fatalf("Interim after the row's TTL: requests %v, cache %v; want it refused", n, r)
	}
	// A Gx CCR-U (NoSpool): Gx counts its requests in the row, which a stale view would roll back.
	clk.Set(at(86))
	if n, _ := applyCounting(t, st, tick("nasR", "r1", t0, 86), session.WriteOptions{NoSpool: true}); n["read_session"] != 1 {
		t.Fatalf("NoSpool Interim: requests %v; want a read", n)
	}
	// A Stop reads (its lookups' deletes need the row), and drops the cached row: a late
	// Interim after it reads, finds the row stopped, and goes to the history only.
	clk.Set(at(90))
	if n, _ := applyCounting(t, st, stop("nasR", "r1", 90, at(90))); n["read_session"] != 1 {
		t.Fatalf("Stop: requests %v; want a read", n)
	}
	if n, r := applyCounting(t, st, tick("nasR", "r1", t0, 88)); n["read_session"] != 1 || r["miss"] != 1 {
		t.Fatalf("late Interim: requests %v, cache %v; want a miss and a read", n, r)
	}
	if _, err := st.Get(ctx(t), k); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("the late Interim revived the session: %v", err)
	}
}

// Two nodes on one keyspace, each with its row cache (any message of a session may land in
// any DC): a cached row that another node has written past since stands in as a stale read
// would, and the write still comes out right — the Interim wins over older writes and loses
// to later ones, a Stop among them, by event time.
func TestRowCacheStaleAcrossNodes(t *testing.T) {
	cassandratest.Skip(t, cluster)
	ks := keyspace(t)
	migrateKS(t, ks)
	a := openStore(t, ks, cassandra.Options{RowCacheSize: 100})
	b := openStore(t, ks, cassandra.Options{RowCacheSize: 100})
	t.Cleanup(func() { a.Close(ctx(t)); b.Close(ctx(t)) })
	c := ctx(t)
	k := session.Key{NAS: "nasS", ID: "x1"}
	mustApply := func(st *cassandra.Store, u *session.Update) {
		t.Helper()
		if _, err := st.Apply(c, u, session.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mustApply(a, start("nasS", "x1", "sam", "10.8.1.1", t0))
	mustApply(a, tick("nasS", "x1", t0, 1))
	mustApply(b, tick("nasS", "x1", t0, 2)) // a's cache is behind now
	if _, r := applyCounting(t, a, tick("nasS", "x1", t0, 3)); r["hit"] != 1 {
		t.Fatalf("cache %v; want a hit on a's row of Interim 1", r)
	}
	s, err := b.Get(c, k)
	if err != nil || s.SessionTime != 180 || s.InputOctets != 3000 || !s.LastSeen.Equal(t0.Add(3*time.Minute)) || s.UserName != "sam" {
		t.Fatalf("row after Interim 3 on a stale cached row: %+v, %v; want Interim 3's counters", s, err)
	}
	// b stops the session; Interim 4, sent before the Stop but delivered late to a, merges onto
	// a's cached row (active): its write is older than the Stop's and loses.
	mustApply(b, stop("nasS", "x1", 5, t0.Add(5*time.Minute)))
	if _, r := applyCounting(t, a, tick("nasS", "x1", t0, 4)); r["hit"] != 1 {
		t.Fatalf("cache %v; want a hit on a's (stale) active row", r)
	}
	if _, err := a.Get(c, k); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("the late Interim revived the stopped session: %v", err)
	}
	if got, err := a.ByUser(c, "sam"); err != nil || len(got) != 0 {
		t.Fatalf("ByUser = %d sessions, %v; want none", len(got), err)
	}
	if recs, _ := a.SessionHistory(c, k); len(recs) != 6 {
		t.Fatalf("history: %d records, want the Start, 4 Interims and the Stop", len(recs))
	}

	// The NAS reuses the id for a new session of the same user, through b; its first Interim
	// lands on a, whose cached row is the old session's: the Interim places its session's
	// start an hour after the cached one, so a reads the row and merges onto the new session.
	t1 := t0.Add(time.Hour)
	mustApply(a, start("nasS", "x2", "sam", "10.8.1.2", t0))
	mustApply(a, tick("nasS", "x2", t0, 1))
	mustApply(b, stop("nasS", "x2", 2, t0.Add(2*time.Minute)))
	mustApply(b, start("nasS", "x2", "sam", "10.8.1.2", t1))
	if _, r := applyCounting(t, a, tick("nasS", "x2", t1, 5)); r["refused"] != 1 {
		t.Fatalf("cache %v; want the old session's row refused", r)
	}
	if s, err := b.Get(c, session.Key{NAS: "nasS", ID: "x2"}); err != nil || !s.StartTime.Equal(t1) || s.SessionTime != 300 {
		t.Fatalf("new session's row: %+v, %v; want its own start %v", s, err, t1)
	}
}
