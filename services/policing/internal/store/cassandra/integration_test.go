package cassandra_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/openaaa/openaaa/internal/cassandratest"
	"github.com/openaaa/openaaa/services/policing/internal/aaa"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/migrate"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/spool"
	"github.com/openaaa/openaaa/services/policing/internal/store/cassandra"
	"github.com/openaaa/openaaa/services/policing/internal/store/storetest"
)

var cluster *cassandratest.Cluster

func TestMain(m *testing.M) {
	if os.Getenv(cassandratest.ChildEnv) == "migrate" {
		// A second process for the concurrent-migration test.
		args := strings.Fields(os.Getenv("MIGRATE_ARGS"))
		os.Exit(migrate.Main(context.Background(), args, os.Stdout, os.Stderr))
	}
	os.Exit(cassandratest.Main(m, 1, &cluster))
}

var ksSeq atomic.Int64

// keyspace returns a fresh keyspace name for one test.
func keyspace(t *testing.T) string {
	return fmt.Sprintf("t%d_%d", time.Now().Unix()%100000, ksSeq.Add(1))
}

func conn(ks string, node int) cassandra.ConnOptions {
	return cassandra.ConnOptions{
		ContactPoints: []string{cluster.ContactPoint(node)}, LocalDC: cluster.DC(node), Keyspace: ks,
		Timeout: 3 * time.Second, ConnectTimeout: 5 * time.Second, NumConns: 1,
	}
}

func migrateKS(t *testing.T, ks string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Schema changes wait for the node's schema agreement: several seconds on a machine busy
	// with make test's other lanes, where the stores' 3 s request timeout failed a CREATE
	// TABLE (TestEphemeral, 2026-11-27).
	c := conn(ks, 1)
	c.Timeout = 20 * time.Second
	if _, err := migrate.Run(ctx, migrate.Options{Conn: c}); err != nil {
		t.Fatalf("migrate %s: %v", ks, err)
	}
}

// testRegistry holds the metrics of the stores (openStore) and spools these tests open;
// statements and counterValue read it.
var (
	testRegistry = prometheus.NewRegistry()
	testMetrics  = cassandra.NewMetrics(metrics.With(testRegistry))
	testSpool    = spool.NewMetrics(metrics.With(testRegistry))
)

func openStore(t *testing.T, ks string, o cassandra.Options) *cassandra.Store {
	t.Helper()
	if o.Conn.Keyspace == "" {
		o.Conn = conn(ks, 1)
	}
	if o.Metrics == nil {
		o.Metrics = testMetrics
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := cassandra.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// migratedStore opens a store on a fresh migrated keyspace, closed when the test ends.
func migratedStore(t *testing.T, o cassandra.Options) *cassandra.Store {
	t.Helper()
	ks := keyspace(t)
	migrateKS(t, ks)
	st := openStore(t, ks, o)
	t.Cleanup(func() { st.Close(context.Background()) })
	return st
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func start(nas, id, user, ip string, at time.Time) *session.Update {
	return &session.Update{Kind: session.KindStart, Session: session.Session{
		Key: session.Key{NAS: nas, ID: id}, UserName: user, FramedIP: netip.MustParseAddr(ip),
		NASIPAddress: netip.MustParseAddr("192.0.2.1"), Class: []byte("cls"), StartTime: at, LastSeen: at,
		CallingStationID: "aa-bb", InterimInterval: 600,
	}}
}

func interim(nas, id string, n int, at time.Time) *session.Update {
	return &session.Update{Kind: session.KindInterim, Session: session.Session{
		Key: session.Key{NAS: nas, ID: id}, LastSeen: at, SessionTime: uint32(60 * n),
		InputOctets: uint64(1000 * n), OutputOctets: uint64(2000 * n),
	}}
}

func stop(nas, id string, n int, at time.Time) *session.Update {
	u := interim(nas, id, n, at)
	u.Kind = session.KindStop
	u.Session.TerminateCause = 1
	return u
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	return c
}

func TestSessionFlowAndLookups(t *testing.T) {
	cassandratest.Skip(t, cluster)
	st := migratedStore(t, cassandra.Options{})
	c := ctx(t)

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	apply := func(u *session.Update) {
		t.Helper()
		if _, err := st.Apply(c, u, session.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	apply(start("nas1", "s1", "alice", "10.0.0.1", t0))
	apply(start("nas1", "s2", "alice", "10.0.0.2", t0))
	apply(start("nas2", "s3", "bob", "10.0.0.3", t0))
	for i := 1; i <= 5; i++ {
		apply(interim("nas1", "s1", i, t0.Add(time.Duration(i)*time.Minute)))
	}
	s, err := st.Get(c, session.Key{NAS: "nas1", ID: "s1"})
	must(err)
	if s.Updates != 6 || s.SessionTime != 300 || s.InputOctets != 5000 || s.UserName != "alice" ||
		string(s.Class) != "cls" || s.State != session.Active || !s.StartTime.Equal(t0) ||
		s.FramedIP != netip.MustParseAddr("10.0.0.1") || s.InterimInterval != 600 {
		t.Fatalf("after start + 5 interims: %+v", s)
	}
	if got, err := st.ByUser(c, "alice"); err != nil || len(got) != 2 {
		t.Fatalf("ByUser(alice) = %d sessions, %v", len(got), err)
	}
	if got, err := st.ByFramedIP(c, netip.MustParseAddr("10.0.0.3")); err != nil || got.ID != "s3" {
		t.Fatalf("ByFramedIP = %v, %v", got, err)
	}
	if got, err := st.ByNAS(c, "nas1"); err != nil || len(got) != 2 {
		t.Fatalf("ByNAS(nas1) = %d, %v", len(got), err)
	}

	apply(stop("nas1", "s1", 6, t0.Add(6*time.Minute)))
	if _, err := st.Get(c, session.Key{NAS: "nas1", ID: "s1"}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Get after Stop: %v", err)
	}
	if _, err := st.ByFramedIP(c, netip.MustParseAddr("10.0.0.1")); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("framed IP not freed: %v", err)
	}
	if got, _ := st.ByUser(c, "alice"); len(got) != 1 || got[0].ID != "s2" {
		t.Fatalf("ByUser after stop: %v", got)
	}
	if got, _ := st.ByNAS(c, "nas1"); len(got) != 1 {
		t.Fatalf("ByNAS after stop: %d", len(got))
	}
	// A late interim (sent between the 4th and the 5th, delayed on the way) does not bring the
	// stopped session back; a late copy of the 4th is the 4th's record, not a new one.
	apply(interim("nas1", "s1", 4, t0.Add(4*time.Minute+30*time.Second)))
	apply(interim("nas1", "s1", 4, t0.Add(4*time.Minute)))
	if _, err := st.Get(c, session.Key{NAS: "nas1", ID: "s1"}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("late interim revived the session: %v", err)
	}
	h, err := st.History(c, "alice", 10)
	must(err)
	if len(h) != 1 || h[0].ID != "s1" || h[0].State != session.Stopped || h[0].TerminateCause != 1 ||
		h[0].SessionTime != 360 || !h[0].StopTime.Equal(t0.Add(6*time.Minute)) {
		t.Fatalf("History = %+v", h)
	}
	recs, err := st.SessionHistory(c, session.Key{NAS: "nas1", ID: "s1"})
	must(err)
	var kinds []string
	for _, r := range recs {
		kinds = append(kinds, r.Kind)
	}
	if got := strings.Join(kinds, ","); got != "start,interim,interim,interim,interim,interim,interim,stop" { // in event order
		t.Fatalf("history kinds = %s", got)
	}
	// The support engineer's lookups: a user's or an address's sessions of a day, each by its
	// first record of the day (every record is in acct_history); by time, every record.
	count := func(q string, args ...any) (n int) {
		t.Helper()
		must(st.Session().Query(q, args...).Scan(&n))
		return n
	}
	if n := count("SELECT count(*) FROM acct_history_by_user WHERE user_name = ? AND day = ?", "alice", t0); n != 2 { // s1, s2
		t.Fatalf("acct_history_by_user(alice) = %d rows, want 2", n)
	}
	var kind string
	must(st.Session().Query("SELECT kind FROM acct_history_by_framed_ip WHERE framed_ip = ? AND day = ?", "10.0.0.1", t0).Scan(&kind))
	if n := count("SELECT count(*) FROM acct_history_by_framed_ip WHERE framed_ip = ? AND day = ?", "10.0.0.1", t0); n != 1 || kind != "start" {
		t.Fatalf("acct_history_by_framed_ip(10.0.0.1) = %d rows (%s), want 1 (the start)", n, kind)
	}
	// By hour: each session once (s1's 8 records and its late ones are within 12:00-13:00).
	if n := count("SELECT count(*) FROM acct_history_by_hour WHERE hour = ? AND shard IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)", t0); n != 3 {
		t.Fatalf("acct_history_by_hour(12:00) = %d rows, want 3 (s1, s2, s3)", n)
	}
	apply(interim("nas2", "s3", 1, t0.Add(time.Hour+time.Minute)))
	if n := count("SELECT count(*) FROM acct_history_by_hour WHERE hour = ? AND shard IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)", t0.Add(time.Hour)); n != 1 {
		t.Fatalf("acct_history_by_hour(13:00) = %d rows, want 1 (s3)", n)
	}
	// A session that runs past midnight is listed on both days: its first Interim of the new
	// day writes the lookups again; an address change lists it under the new address.
	day2 := time.Date(t0.Year(), t0.Month(), t0.Day()+1, 0, 0, 0, 0, time.UTC)
	apply(interim("nas1", "s2", 1, day2.Add(time.Minute)))
	apply(interim("nas1", "s2", 2, day2.Add(2*time.Minute)))
	if n := count("SELECT count(*) FROM acct_history_by_user WHERE user_name = ? AND day = ?", "alice", day2); n != 1 {
		t.Fatalf("acct_history_by_user(alice, next day) = %d rows, want 1", n)
	}
	moved := interim("nas1", "s2", 3, day2.Add(3*time.Minute))
	moved.Session.FramedIP = netip.MustParseAddr("10.0.0.22")
	apply(moved)
	if n := count("SELECT count(*) FROM acct_history_by_framed_ip WHERE framed_ip = ? AND day = ?", "10.0.0.22", day2); n != 1 {
		t.Fatalf("acct_history_by_framed_ip(new address) = %d rows, want 1", n)
	}
	if n := count("SELECT count(*) FROM acct_history_by_user WHERE user_name = ? AND day = ?", "alice", day2); n != 2 {
		t.Fatalf("acct_history_by_user(alice, next day) after the address change = %d rows, want 2", n)
	}
}

// The history-only copy of a Start, spooled because its row was written and its history was
// not, writes the lookups the Start was due, though its replay reads the row it made.
func TestHistoryOnlyReplayKeepsItsLookups(t *testing.T) {
	cassandratest.Skip(t, cluster)
	st := migratedStore(t, cassandra.Options{})
	c := ctx(t)
	count := func(user string) (n int) {
		t.Helper()
		if err := st.Session().Query("SELECT count(*) FROM acct_history_by_user WHERE user_name = ? AND day = ?", user, t0).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, lookups := range []bool{false, true} {
		user := fmt.Sprintf("dave-%v", lookups)
		u := start("nas1", "h-"+user, user, "10.0.3.1", t0)
		if _, err := st.Apply(c, u, session.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		// As if the history had not been written: its lookup deleted just after it, so that
		// the replay's write (a later timestamp) is not under the tombstone.
		del := time.Now().UnixMicro()
		if err := st.Session().Query("DELETE FROM acct_history_by_user USING TIMESTAMP ? WHERE user_name = ? AND day = ?", del, user, t0).Exec(); err != nil {
			t.Fatal(err)
		}
		if n := count(user); n != 0 {
			t.Fatalf("lookup not deleted: %d rows", n)
		}
		time.Sleep(2 * time.Millisecond)
		if err := cassandra.ReplayHistoryOnly(c, st, start("nas1", "h-"+user, user, "10.0.3.1", t0), time.Now(), lookups); err != nil {
			t.Fatal(err)
		}
		want := 0
		if lookups {
			want = 1
		}
		if n := count(user); n != want {
			t.Fatalf("history-only replay (lookups %v): %d rows in acct_history_by_user, want %d", lookups, n, want)
		}
	}
}

func TestHistoryTTLAndAuthLog(t *testing.T) {
	cassandratest.Skip(t, cluster)
	ks := keyspace(t)
	migrateKS(t, ks)
	st := openStore(t, ks, cassandra.Options{Expiry: func(*session.Session) time.Duration { return 25 * time.Minute }})
	defer st.Close(context.Background())
	c := ctx(t)
	now := time.Now().UTC()
	if _, err := st.Apply(c, start("nas1", "s1", "carol", "10.0.1.1", now), session.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := st.LogAuth(c, cassandra.AuthRecord{UserName: "carol", NAS: "nas1", Result: "accept", At: now}); err != nil {
		t.Fatal(err)
	}
	week := 7 * 24 * 3600
	check := func(q string, lo, hi int, args ...any) {
		t.Helper()
		var ttl int
		if err := st.Session().Query(q, args...).Scan(&ttl); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if ttl < lo || ttl > hi {
			t.Fatalf("%s: TTL %d not in [%d, %d]", q, ttl, lo, hi)
		}
	}
	check("SELECT TTL(kind) FROM acct_history WHERE nas = 'nas1' AND acct_session_id = 's1'", week-120, week)
	check("SELECT TTL(kind) FROM acct_history_by_user WHERE user_name = 'carol' AND day = ?", week-120, week, now)
	check("SELECT TTL(result) FROM auth_log WHERE user_name = 'carol' AND day = ?", week-120, week, now)
	// The active row lives for the expiry; the lookups four times as long (refreshed when
	// less than twice the row's is left: TestInterimWritesItsRowOnly).
	check("SELECT TTL(state) FROM sessions WHERE nas = 'nas1' AND acct_session_id = 's1'", 25*60-120, 25*60)
	check("SELECT TTL(user_name) FROM sessions_by_framed_ip WHERE framed_ip = '10.0.1.1'", 4*25*60-120, 4*25*60)
	// The table options: TWCS and a 7-day default TTL on every history table.
	for _, tbl := range []string{"acct_history", "acct_history_by_user", "acct_history_by_framed_ip", "acct_history_by_time", "acct_history_by_hour", "sessions_closed_by_user", "auth_log"} {
		var ttl int
		var comp map[string]string
		if err := st.Session().Query("SELECT default_time_to_live, compaction FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?", ks, tbl).Scan(&ttl, &comp); err != nil {
			t.Fatal(err)
		}
		if ttl != week || !strings.HasSuffix(comp["class"], "TimeWindowCompactionStrategy") {
			t.Fatalf("%s: ttl %d, compaction %v", tbl, ttl, comp["class"])
		}
	}
	// No materialized views, no secondary indexes.
	var n int
	if err := st.Session().Query("SELECT count(*) FROM system_schema.views WHERE keyspace_name = ?", ks).Scan(&n); err != nil || n != 0 {
		t.Fatalf("views: %d %v", n, err)
	}
	if err := st.Session().Query("SELECT count(*) FROM system_schema.indexes WHERE keyspace_name = ?", ks).Scan(&n); err != nil || n != 0 {
		t.Fatalf("indexes: %d %v", n, err)
	}
}

func TestAccountingOnClosesNAS(t *testing.T) {
	cassandratest.Skip(t, cluster)
	st := migratedStore(t, cassandra.Options{})
	c := ctx(t)
	for i := range 5 {
		if _, err := st.Apply(c, start("nasA", fmt.Sprintf("a%d", i), fmt.Sprintf("u%d", i), fmt.Sprintf("10.1.0.%d", i+1), t0), session.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Apply(c, start("nasB", "b0", "u0", "10.2.0.1", t0), session.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := st.CloseNAS(c, "nasA", t0.Add(time.Hour), 11)
	if err != nil || n != 5 {
		t.Fatalf("CloseNAS = %d, %v", n, err)
	}
	if got, _ := st.ByNAS(c, "nasA"); len(got) != 0 {
		t.Fatalf("nasA still has %d sessions", len(got))
	}
	if got, _ := st.ByUser(c, "u0"); len(got) != 1 || got[0].NAS != "nasB" {
		t.Fatalf("u0 sessions = %v", got)
	}
	h, _ := st.History(c, "u3", 0)
	if len(h) != 1 || h[0].TerminateCause != 11 || !h[0].StopTime.Equal(t0.Add(time.Hour)) {
		t.Fatalf("history of u3 = %+v", h)
	}
}

// A new Start of a line, once stored, supersedes the older session whose Stop was lost
// (aaa.Supersede, through the store's lookups): the old row leaves the lookups and goes to the closed
// sessions, and the framed-IP lookup points at the new session.
func TestSupersedeStale(t *testing.T) {
	cassandratest.Skip(t, cluster)
	st := migratedStore(t, cassandra.Options{})
	c := ctx(t)
	if _, err := st.Apply(c, start("nas1", "old", "alice", "10.0.0.1", t0), session.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, other := range []*session.Update{
		start("nas2", "vrf", "alice", "10.0.0.1", t0.Add(time.Minute)), // same address on another NAS
		start("nas1", "bob", "bob", "10.0.0.1", t0.Add(time.Minute)),   // ... or for another user
	} {
		if closed, err := aaa.Supersede(c, st, other); err != nil || len(closed) != 0 {
			t.Fatalf("%s superseded %v, %v", other.Session.ID, closed, err)
		}
	}
	u := start("nas1", "new", "alice", "10.0.0.1", t0.Add(time.Hour))
	if _, err := st.Apply(c, u, session.WriteOptions{}); err != nil { // superseding follows the write
		t.Fatal(err)
	}
	closed, err := aaa.Supersede(c, st, u)
	if err != nil || len(closed) != 1 || closed[0] != (session.Key{NAS: "nas1", ID: "old"}) {
		t.Fatalf("Supersede = %v, %v", closed, err)
	}
	if _, err := st.Get(c, session.Key{NAS: "nas1", ID: "old"}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("old session still active: %v", err)
	}
	if got, err := st.ByFramedIP(c, netip.MustParseAddr("10.0.0.1")); err != nil || got.ID != "new" {
		t.Fatalf("ByFramedIP = %v, %v", got, err)
	}
	if got, _ := st.ByUser(c, "alice"); len(got) != 1 || got[0].ID != "new" {
		t.Fatalf("ByUser = %v", got)
	}
	if got, _ := st.ByNAS(c, "nas1"); len(got) != 1 || got[0].ID != "new" {
		t.Fatalf("ByNAS = %v", got)
	}
	h, err := st.History(c, "alice", 0)
	if err != nil || len(h) != 1 || h[0].ID != "old" || !h[0].StopTime.Equal(t0.Add(time.Hour)) || h[0].TerminateCause != 0 {
		t.Fatalf("History = %+v, %v", h, err)
	}
	// A late Interim of the superseded session does not revive it.
	if _, err := st.Apply(c, interim("nas1", "old", 1, t0.Add(30*time.Minute)), session.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(c, session.Key{NAS: "nas1", ID: "old"}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("late Interim revived the superseded session: %v", err)
	}
}

// statements counts the requests sent to Cassandra by kind (the statement latency histogram).
func statements(t *testing.T) map[string]uint64 {
	t.Helper()
	mfs, err := testRegistry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "openaaa_store_statement_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" {
					n[l.GetValue()] += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return n
}

// An Interim that changes no lookup writes its row and its history in one request, and no
// lookup; the lookups, written with four times the row's TTL, are written again once less
// than twice the row's TTL is left (issue 17: CQL requests per message, no batchlog per
// Interim). Before, every Interim rewrote every lookup to refresh its TTL, in a logged batch
// across five partitions, with the history in a second request.
func TestInterimWritesItsRowOnly(t *testing.T) {
	cassandratest.Skip(t, cluster)
	clock := time.Now().UTC().Truncate(time.Second)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	st := migratedStore(t, cassandra.Options{Expiry: func(*session.Session) time.Duration { return 25 * time.Minute }, Now: now})
	c := ctx(t)
	q := func(stmt string, dest ...any) {
		t.Helper()
		if err := st.Session().Query(stmt).Scan(dest...); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	lookupWritten := func() (user, ip, nas int64) {
		q("SELECT WRITETIME(framed_ip) FROM sessions_by_user WHERE user_name = 'dave'", &user)
		q("SELECT WRITETIME(user_name) FROM sessions_by_framed_ip WHERE framed_ip = '10.0.9.1'", &ip)
		q("SELECT WRITETIME(user_name) FROM sessions_by_nas WHERE nas = 'nas9'", &nas)
		return
	}
	apply := func(u *session.Update) map[string]uint64 {
		t.Helper()
		before := statements(t)
		if _, err := st.Apply(c, u, session.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		d := statements(t)
		for k, v := range before {
			d[k] -= v
		}
		return d
	}

	at := clock
	n := apply(start("nas9", "s9", "dave", "10.0.9.1", at))
	if n["read_session"] != 1 || n["write_session"] != 1 || n["write_history"] != 1 {
		t.Fatalf("Start: requests %v; want a read, the row's logged batch with its lookups, the history", n)
	}
	var until time.Time
	q("SELECT lookups_until FROM sessions WHERE nas = 'nas9' AND acct_session_id = 's9'", &until)
	if !until.Equal(at.Add(100 * time.Minute)) {
		t.Fatalf("lookups_until %v; want the Start + 4 × 25 min", until)
	}
	u0, i0, n0 := lookupWritten()

	for i := 1; i <= 3; i++ {
		advance(10 * time.Minute)
		n = apply(interim("nas9", "s9", i, clock))
		if n["read_session"] != 1 || n["write_session"] != 1 || n["write_history"] != 0 {
			t.Fatalf("Interim %d: requests %v; want a read and one write (row and history)", i, n)
		}
	}
	if u, i, nn := lookupWritten(); u != u0 || i != i0 || nn != n0 {
		t.Fatal("an Interim within the lookups' TTL wrote them again")
	}
	var records int
	q("SELECT count(*) FROM acct_history WHERE nas = 'nas9' AND acct_session_id = 's9'", &records)
	if records != 4 {
		t.Fatalf("acct_history: %d records; want the Start and 3 Interims", records)
	}
	s, err := st.Get(c, session.Key{NAS: "nas9", ID: "s9"})
	if err != nil || s.InputOctets != 3000 || s.Updates != 4 || string(s.Class) != "cls" {
		t.Fatalf("row after the Interims: %+v, %v", s, err)
	}

	// 60 min after the Start less than 2 × 25 min of the lookups' 100 is left: written again.
	advance(40 * time.Minute)
	n = apply(interim("nas9", "s9", 7, clock))
	if n["write_session"] != 1 || n["write_history"] != 1 {
		t.Fatalf("Interim refreshing the lookups: requests %v; want the logged batch and the history", n)
	}
	if u, i, nn := lookupWritten(); u == u0 || i == i0 || nn == n0 {
		t.Fatal("the lookups were not written again when their TTL ran short")
	}
	q("SELECT lookups_until FROM sessions WHERE nas = 'nas9' AND acct_session_id = 's9'", &until)
	if !until.Equal(clock.Add(100 * time.Minute)) {
		t.Fatalf("lookups_until %v; want %v", until, clock.Add(100*time.Minute))
	}
	if got, err := st.ByFramedIP(c, netip.MustParseAddr("10.0.9.1")); err != nil || got.ID != "s9" {
		t.Fatalf("ByFramedIP: %+v, %v", got, err)
	}
}

// A lookup outlives its row (TestInterimWritesItsRowOnly): Accounting-On does not write a
// Stop for a session whose row is gone.
func TestAccountingOnSkipsExpiredRows(t *testing.T) {
	cassandratest.Skip(t, cluster)
	st := migratedStore(t, cassandra.Options{})
	c := ctx(t)
	if _, err := st.Apply(c, start("nasX", "live", "erin", "10.3.0.1", t0), session.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	// What a row that expired leaves behind: its by-NAS lookup only.
	if err := st.Session().Query("INSERT INTO sessions_by_nas (nas, acct_session_id, user_name) VALUES ('nasX', 'expired', 'frank')").Exec(); err != nil {
		t.Fatal(err)
	}
	n, err := st.CloseNAS(c, "nasX", t0.Add(time.Hour), 11)
	if err != nil || n != 1 {
		t.Fatalf("CloseNAS = %d, %v; want the live session only", n, err)
	}
	var rows int
	if err := st.Session().Query("SELECT count(*) FROM sessions WHERE nas = 'nasX' AND acct_session_id = 'expired'").Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("the expired session got a row (%d, %v): a Stop was written for it", rows, err)
	}
}

// counterValue sums the series of a metric whose labels include the given name, value pairs.
func counterValue(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := testRegistry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabels(m, labels) {
				sum += metricValue(m)
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
			return l.GetName() == pairs[i] && l.GetValue() == pairs[i+1]
		}) {
			return false
		}
	}
	return true
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return 0
}

// A Gx row written before gx_throttled (migration 0012) marked the throttle with
// disconnect_reason 'quota': it reads as throttled, and its next write sets gx_throttled. A
// RADIUS row's reason stays its own.
func TestLegacyGxThrottle(t *testing.T) {
	cassandratest.Skip(t, cluster)
	st := migratedStore(t, cassandra.Options{})
	c := ctx(t)
	gx := session.Key{NAS: session.GxNAS, ID: "pgw;legacy;1"}
	if _, err := st.Apply(c, &session.Update{Kind: session.KindStart, Session: session.Session{Key: gx, UserName: "imsi9",
		StartTime: t0, LastSeen: t0}}, session.WriteOptions{NoSpool: true}); err != nil {
		t.Fatal(err)
	}
	// What a CCR-U that used the quota wrote before 0012.
	if err := st.Session().Query("UPDATE sessions SET disconnect_reason = 'quota' WHERE nas = ? AND acct_session_id = ?", gx.NAS, gx.ID).Exec(); err != nil {
		t.Fatal(err)
	}
	if s, err := st.Get(c, gx); err != nil || !s.GxThrottled || s.DisconnectReason != "" {
		t.Fatalf("legacy Gx row = %+v, %v; want throttled, no disconnect reason", s, err)
	}
	if _, err := st.Apply(c, &session.Update{Kind: session.KindInterim, Session: session.Session{Key: gx, LastSeen: t0.Add(time.Minute),
		OutputOctets: 10}}, session.WriteOptions{NoSpool: true}); err != nil {
		t.Fatal(err)
	}
	var throttled bool
	if err := st.Session().Query("SELECT gx_throttled FROM sessions WHERE nas = ? AND acct_session_id = ?", gx.NAS, gx.ID).Scan(&throttled); err != nil || !throttled {
		t.Fatalf("gx_throttled after the next write = %v, %v; want true", throttled, err)
	}
	radius := start("nas1", "r9", "imsi9", "10.9.0.9", t0)
	if _, err := st.Apply(c, radius, session.WriteOptions{DisconnectReason: "quota"}); err != nil {
		t.Fatal(err)
	}
	if s, err := st.Get(c, radius.Session.Key); err != nil || s.GxThrottled || s.DisconnectReason != "quota" {
		t.Fatalf("RADIUS row = %+v, %v; want its disconnect reason, not throttled", s, err)
	}
}

func TestNoOpWriteSkipped(t *testing.T) {
	cassandratest.Skip(t, cluster)
	st := migratedStore(t, cassandra.Options{})
	c := ctx(t)
	if _, err := st.Apply(c, start("nas1", "s1", "dave", "10.3.0.1", t0), session.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(c, interim("nas1", "s1", 1, t0.Add(time.Minute)), session.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	var wt1, wt2 int64
	q := "SELECT WRITETIME(state) FROM sessions WHERE nas = 'nas1' AND acct_session_id = 's1'"
	if err := st.Session().Query(q).Scan(&wt1); err != nil {
		t.Fatal(err)
	}
	skipped := counterValue(t, "openaaa_store_writes_skipped_total")
	// The same interim again (a retransmission the RADIUS layer did not catch): no write.
	if _, err := st.Apply(c, interim("nas1", "s1", 1, t0.Add(time.Minute)), session.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, "openaaa_store_writes_skipped_total"); got != skipped+1 {
		t.Fatalf("writes skipped %v -> %v", skipped, got)
	}
	if err := st.Session().Query(q).Scan(&wt2); err != nil {
		t.Fatal(err)
	}
	if wt1 != wt2 {
		t.Fatalf("the row was written again: writetime %d -> %d", wt1, wt2)
	}
	recs, _ := st.SessionHistory(c, session.Key{NAS: "nas1", ID: "s1"})
	if len(recs) != 2 {
		t.Fatalf("history has %d records, want 2", len(recs))
	}
	// A copy of a record whose row write landed but whose history write did not (both timed
	// out; the batch went through the batchlog): the copy fills the history in, once.
	if err := st.Session().Query("DELETE FROM acct_history WHERE nas = 'nas1' AND acct_session_id = 's1' AND id = ?",
		recs[1].ID).Exec(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(c, interim("nas1", "s1", 1, t0.Add(time.Minute)), session.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.SessionHistory(c, session.Key{NAS: "nas1", ID: "s1"}); len(got) != 2 || got[1].ID != recs[1].ID ||
		got[1].Kind != "interim" || got[1].Session.SessionTime != 60 || got[1].Session.Updates != recs[1].Session.Updates {
		t.Fatalf("history after the copy: %+v, want the lost interim back as it was: %+v", got, recs)
	}
	if err := st.Session().Query(q).Scan(&wt2); err != nil || wt2 != wt1 {
		t.Fatalf("the row was written again: writetime %d -> %d (%v)", wt1, wt2, err)
	}

	// An older record after a newer one (a spool replayed after the session's next messages
	// were applied in another DC): the row is not rolled back nor rewritten, but the record
	// is history all the same.
	if _, err := st.Apply(c, interim("nas1", "s1", 3, t0.Add(3*time.Minute)), session.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(c, interim("nas1", "s1", 2, t0.Add(2*time.Minute)), session.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(c, session.Key{NAS: "nas1", ID: "s1"})
	if err != nil || got.SessionTime != 180 {
		t.Fatalf("row after an older interim: %+v, %v; want session time 180", got, err)
	}
	recs, _ = st.SessionHistory(c, session.Key{NAS: "nas1", ID: "s1"})
	if len(recs) != 4 {
		t.Fatalf("history has %d records, want 4: the older interim's record was dropped", len(recs))
	}
	// In event order, each with its own counters (not the later interim's).
	for i, want := range []uint32{0, 60, 120, 180} {
		if got := recs[i].Session.SessionTime; got != want {
			t.Errorf("history record %d (%s at %v): session time %d, want %d", i, recs[i].Kind, recs[i].At, got, want)
		}
	}
}

// Two stores on the same keyspace play two policing nodes (DCs): a hybrid cache in one must
// not make the next message of a session wrong when it lands on the other.
func TestHybridAcrossNodes(t *testing.T) {
	cassandratest.Skip(t, cluster)
	ks := keyspace(t)
	migrateKS(t, ks)
	a := cassandra.NewHybrid(openStore(t, ks, cassandra.Options{}), 100, time.Minute)
	b := cassandra.NewHybrid(openStore(t, ks, cassandra.Options{}), 100, time.Minute)
	defer a.Close(context.Background())
	defer b.Close(context.Background())
	c := ctx(t)
	k := session.Key{NAS: "nas1", ID: "h1"}
	steps := []struct {
		h *cassandra.Hybrid
		u *session.Update
	}{
		{a, start("nas1", "h1", "erin", "10.4.0.1", t0)},
		{b, interim("nas1", "h1", 1, t0.Add(time.Minute))},
		{a, interim("nas1", "h1", 2, t0.Add(2*time.Minute))},
		{b, interim("nas1", "h1", 3, t0.Add(3*time.Minute))},
		{a, interim("nas1", "h1", 4, t0.Add(4*time.Minute))},
	}
	for i, s := range steps {
		if _, err := s.h.Apply(c, s.u, session.WriteOptions{}); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	hits := counterValue(t, "openaaa_cache_requests_total")
	got, err := a.Get(c, k) // fresh in a's cache: no Cassandra read
	if err != nil || got.Updates != 5 || got.SessionTime != 240 || string(got.Class) != "cls" {
		t.Fatalf("a.Get = %+v, %v", got, err)
	}
	if counterValue(t, "openaaa_cache_requests_total") != hits+1 {
		t.Fatal("cache look-up not counted")
	}
	// Stop through b: a's cached entry is now stale; its next read is cut short by the TTL in
	// production; here the stop on b is seen by a's accounting path at once.
	if _, err := b.Apply(c, stop("nas1", "h1", 5, t0.Add(5*time.Minute)), session.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(c, interim("nas1", "h1", 4, t0.Add(4*time.Minute)), session.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(c, k); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("a still sees the stopped session: %v", err)
	}
	// The late copy of the 4th interim is stored once: start, 4 interims, stop.
	direct, _ := b.Store.SessionHistory(c, k)
	if len(direct) != 6 {
		t.Fatalf("history has %d records, want 6", len(direct))
	}
}

// The cluster's node is stopped: accounting goes to the spool and is acknowledged; policing
// restarts (the store is closed and opened again); Cassandra comes back; the spool replays
// in order and nothing is lost.
func TestSpoolFillAndReplayAcrossRestart(t *testing.T) {
	cassandratest.Skip(t, cluster)
	ks := keyspace(t)
	migrateKS(t, ks)
	dir := t.TempDir()
	open := func() *cassandra.Store {
		sp, err := spool.Open(spool.Options{Dir: dir, MaxBytes: 64 << 20, Metrics: testSpool})
		if err != nil {
			t.Fatal(err)
		}
		return openStore(t, ks, cassandra.Options{Spool: sp, ReplayInterval: 200 * time.Millisecond})
	}
	st := open()
	c := ctx(t)
	const sessions = 20
	for i := range sessions {
		if _, err := st.Apply(c, start("nas1", fmt.Sprint(i), fmt.Sprintf("user%d", i), fmt.Sprintf("10.5.0.%d", i+1), t0), session.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	t.Log("stopping Cassandra")
	if err := cluster.Kill(1); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			_ = cluster.Restart(1)
		}
	}()
	// Accounting keeps being acknowledged: 2 interims and a stop per session.
	for i := range sessions {
		for n := 1; n <= 2; n++ {
			if _, err := st.Apply(c, interim("nas1", fmt.Sprint(i), n, t0.Add(time.Duration(n)*time.Minute)), session.WriteOptions{}); err != nil {
				t.Fatalf("interim while Cassandra is down: %v", err)
			}
		}
		if _, err := st.Apply(c, stop("nas1", fmt.Sprint(i), 3, t0.Add(3*time.Minute)), session.WriteOptions{}); err != nil {
			t.Fatalf("stop while Cassandra is down: %v", err)
		}
	}
	t.Logf("%d records spooled in %s", 3*sessions, time.Since(began))
	if got := counterValue(t, "openaaa_spool_records"); got != 3*sessions {
		t.Fatalf("spool depth metric = %v, want %d", got, 3*sessions)
	}
	if err := st.Ready(c); err != nil {
		t.Fatalf("not ready while the spool has room: %v", err)
	}
	// policing restarts while Cassandra is still down.
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_ = st.Close(closeCtx)
	cancel()
	t.Log("restarting Cassandra")
	if err := cluster.Restart(1); err != nil {
		t.Fatal(err)
	}
	restarted = true
	t.Logf("Cassandra back after %s", time.Since(began))
	st = open()
	defer st.Close(context.Background())
	deadline := time.Now().Add(60 * time.Second)
	for counterValue(t, "openaaa_spool_records") > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if got := counterValue(t, "openaaa_spool_records"); got != 0 {
		t.Fatalf("spool not drained: %v records left", got)
	}
	t.Logf("spool replayed after %s", time.Since(began))
	for i := range sessions {
		k := session.Key{NAS: "nas1", ID: fmt.Sprint(i)}
		if _, err := st.Get(c, k); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("session %d still active after its spooled stop: %v", i, err)
		}
		recs, err := st.SessionHistory(c, k)
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, r := range recs {
			kinds = append(kinds, r.Kind)
		}
		if got := strings.Join(kinds, ","); got != "start,interim,interim,stop" {
			t.Fatalf("session %d history = %s", i, got)
		}
		h, _ := st.History(c, fmt.Sprintf("user%d", i), 1)
		if len(h) != 1 || h[0].Updates != 4 || h[0].SessionTime != 180 {
			t.Fatalf("session %d closed = %+v", i, h)
		}
	}
}

func runMigrate(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code := migrate.Main(c, append([]string{"--contact-points", cluster.ContactPoint(1), "--local-dc", "dc1"}, args...), &out, &out)
	return out.String(), code
}

func TestMigrations(t *testing.T) {
	cassandratest.Skip(t, cluster)
	ks := keyspace(t)
	sess, err := cassandra.Connect(ctx(t), conn("", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()

	out, code := runMigrate(t, "--keyspace", ks, "--dry-run")
	if code != 0 || !strings.Contains(out, "create with replication dc1:1") || !strings.Contains(out, "0002_history: apply") {
		t.Fatalf("dry run (%d):\n%s", code, out)
	}
	var n int
	if err := sess.Query("SELECT count(*) FROM system_schema.keyspaces WHERE keyspace_name = ?", ks).Scan(&n); err != nil || n != 0 {
		t.Fatalf("dry run created the keyspace (%d, %v)", n, err)
	}

	all := migrationCount(t)
	out, code = runMigrate(t, "--keyspace", ks)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("applied %d migration(s)", all)) {
		t.Fatalf("first run (%d):\n%s", code, out)
	}
	type rec struct {
		status, checksum string
		at               time.Time
	}
	read := func() map[int]rec {
		m := map[int]rec{}
		it := sess.Query(fmt.Sprintf("SELECT version, status, checksum, applied_at FROM %s.schema_migrations", ks)).Iter()
		var v int
		var r rec
		for it.Scan(&v, &r.status, &r.checksum, &r.at) {
			m[v] = r
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := read()
	if len(before) != all {
		t.Fatalf("schema_migrations = %+v, want %d", before, all)
	}
	for v, r := range before {
		if r.status != "applied" {
			t.Fatalf("schema_migrations %d: %+v", v, r)
		}
	}
	out, code = runMigrate(t, "--keyspace", ks)
	if code != 0 || !strings.Contains(out, "nothing applied") {
		t.Fatalf("second run (%d):\n%s", code, out)
	}
	if after := read(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("second run changed schema_migrations:\n%v\n%v", before, after)
	}
	out, code = runMigrate(t, "--keyspace", ks, "--replication", "dc1:3")
	if code == 0 || !strings.Contains(out, "more than the 1 node(s) of dc1") {
		t.Fatalf("RF above the nodes accepted (%d):\n%s", code, out)
	}
	out, code = runMigrate(t, "--keyspace", ks, "--replication", "dc9:1")
	if code == 0 || !strings.Contains(out, "dc9 has no node") {
		t.Fatalf("unknown DC accepted (%d):\n%s", code, out)
	}
}

func TestFailedMigrationLeavesARecord(t *testing.T) {
	cassandratest.Skip(t, cluster)
	ks := keyspace(t)
	fsys := fstest.MapFS{
		"migrations/0001_ok.cql":  {Data: []byte("CREATE TABLE IF NOT EXISTS a (k text PRIMARY KEY);")},
		"migrations/0002_bad.cql": {Data: []byte("CREATE TABLE IF NOT EXISTS b (k text PRIMARY KEY);\nCREATE TABLE c (k nosuchtype PRIMARY KEY);")},
	}
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	_, err := migrate.Run(c, migrate.Options{Conn: conn(ks, 1), FS: fsys, Out: &out})
	if err == nil || !strings.Contains(err.Error(), "migration 0002_bad failed: statement 2 of 2") {
		t.Fatalf("err = %v\n%s", err, out.String())
	}
	sess, err := cassandra.Connect(c, conn(ks, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var status, errText string
	if err := sess.Query("SELECT status, error FROM schema_migrations WHERE version = 2").Scan(&status, &errText); err != nil {
		t.Fatal(err)
	}
	if status != "failed" || !strings.Contains(errText, "nosuchtype") {
		t.Fatalf("record: %s %q", status, errText)
	}
	if err := sess.Query("SELECT status FROM schema_migrations WHERE version = 1").Scan(&status); err != nil || status != "applied" {
		t.Fatalf("version 1: %s %v", status, err)
	}
	// The lease was released: a fixed migration set goes through at once.
	fsys["migrations/0002_bad.cql"] = &fstest.MapFile{Data: []byte("CREATE TABLE IF NOT EXISTS b (k text PRIMARY KEY);")}
	out.Reset()
	if _, err := migrate.Run(c, migrate.Options{Conn: conn(ks, 1), FS: fsys, Out: &out, LeaseWait: 5 * time.Second}); err != nil {
		t.Fatalf("retry: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "0002_bad: retry (failed before)") {
		t.Fatalf("retry output:\n%s", out.String())
	}
}

// Two processes (the Jobs of two DCs starting at once): one applies, the other waits for the
// lease and finds nothing to do.
func TestConcurrentMigrationsOneApplies(t *testing.T) {
	cassandratest.Skip(t, cluster)
	ks := keyspace(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := fmt.Sprintf("--contact-points %s --local-dc dc1 --keyspace %s", cluster.ContactPoint(1), ks)
	var wg sync.WaitGroup
	outs := make([]string, 2)
	codes := make([]int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), cassandratest.ChildEnv+"=migrate", "MIGRATE_ARGS="+args)
			out, err := cmd.CombinedOutput()
			outs[i] = string(out)
			if err != nil {
				codes[i] = 1
			}
		}()
	}
	wg.Wait()
	applied := 0
	for i := range 2 {
		if codes[i] != 0 {
			t.Fatalf("process %d failed:\n%s", i, outs[i])
		}
		if strings.Contains(outs[i], fmt.Sprintf("applied %d migration(s)", migrationCount(t))) {
			applied++
		} else if !strings.Contains(outs[i], "nothing applied") {
			t.Fatalf("process %d:\n%s", i, outs[i])
		}
	}
	if applied != 1 {
		t.Fatalf("%d processes applied the migrations:\n%s\n---\n%s", applied, outs[0], outs[1])
	}
	// And the schema is whole.
	sess, err := cassandra.Connect(ctx(t), conn(ks, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var n int
	want := createdTables(t) + 2 // and the migrations' own: schema_migrations, its lease
	if err := sess.Query("SELECT count(*) FROM system_schema.tables WHERE keyspace_name = ?", ks).Scan(&n); err != nil || n != want {
		t.Fatalf("tables in %s: %d (%v), want %d", ks, n, err, want)
	}
}

// The session.Store contract (storetest), on the Cassandra store and the hybrid store.
func TestContract(t *testing.T) {
	cassandratest.Skip(t, cluster)
	ks := keyspace(t)
	migrateKS(t, ks)
	st := openStore(t, ks, cassandra.Options{})
	defer st.Close(context.Background())
	t.Run("cassandra", func(t *testing.T) { storetest.Run(t, st, "cas") })
	t.Run("cassandra nodes", func(t *testing.T) { storetest.RunNodes(t, st, "cas") })
	t.Run("wide read", func(t *testing.T) {
		k := session.Key{NAS: "wide", ID: "w1"}
		if _, err := st.Apply(context.Background(), &session.Update{Kind: session.KindStart, Session: session.Session{Key: k, UserName: "w"}}, session.WriteOptions{NoSpool: true}); err != nil {
			t.Fatal(err)
		}
		if s, err := st.GetWide(context.Background(), k); err != nil || s.UserName != "w" {
			t.Fatalf("GetWide = %+v, %v", s, err)
		}
		if _, err := st.GetWide(context.Background(), session.Key{NAS: "wide", ID: "none"}); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("GetWide of no session: %v", err)
		}
		if _, err := st.Apply(context.Background(), &session.Update{Kind: session.KindStop, Session: session.Session{Key: k}}, session.WriteOptions{NoSpool: true}); err != nil {
			t.Fatal(err)
		}
		if s, err := st.GetWide(context.Background(), k); err != nil || s.State != session.Stopped {
			t.Fatalf("GetWide of a stopped session = %+v, %v; want it, stopped", s, err)
		}
	})
	h := cassandra.NewHybrid(openStore(t, ks, cassandra.Options{}), 100, time.Minute)
	defer h.Close(context.Background())
	t.Run("hybrid", func(t *testing.T) { storetest.Run(t, h, "hyb") })
	t.Run("hybrid nodes", func(t *testing.T) { storetest.RunNodes(t, h, "hyb") })
}

// The AKA sequence numbers (session.SQNCounter) on the Cassandra and hybrid stores, and two
// stores (two nodes) taking numbers of one subscriber in turn and at once: never the same twice.
func TestAKASQN(t *testing.T) {
	cassandratest.Skip(t, cluster)
	ks := keyspace(t)
	migrateKS(t, ks)
	a := openStore(t, ks, cassandra.Options{})
	defer a.Close(context.Background())
	t.Run("cassandra", func(t *testing.T) { storetest.RunSQN(t, a, "cas") })
	h := cassandra.NewHybrid(openStore(t, ks, cassandra.Options{}), 100, time.Minute)
	defer h.Close(context.Background())
	t.Run("hybrid", func(t *testing.T) { storetest.RunSQN(t, h, "hyb") })
	b := openStore(t, ks, cassandra.Options{})
	defer b.Close(context.Background())
	c := ctx(t)
	// In turn, as a card roaming between DCs: each one more than the other's.
	for i := range 6 {
		n, err := []*cassandra.Store{a, b}[i%2].NextSQN(c, "two-nodes", 1)
		if err != nil || n != uint64(i+1) {
			t.Fatalf("call %d: %d, %v; want %d", i, n, err, i+1)
		}
	}
	// At once (the same subscriber on two nodes): never the same twice.
	seen := map[uint64]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, st := range []*cassandra.Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				n, err := st.NextSQN(c, "two-nodes", 1)
				mu.Lock()
				if err != nil || seen[n] || n <= 6 {
					t.Errorf("SQN %d, %v: an error, given twice, or not past 6", n, err)
				}
				seen[n] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// migrationCount is the number of migrations policing ships (internal/migrate/migrations).
func migrationCount(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob("../../migrate/migrations/*.cql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations found: %v", err)
	}
	return len(files)
}

// createdTables counts the tables the shipped migrations create.
func createdTables(t *testing.T) int {
	t.Helper()
	files, _ := filepath.Glob("../../migrate/migrations/*.cql")
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n += strings.Count(string(b), "CREATE TABLE")
	}
	return n
}
