package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/store/storetest"
)

var (
	ctx = context.Background()
	t0  = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
)

// clock is an injectable, settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func open(t *testing.T, opt Options) (*Store, *clock) {
	t.Helper()
	clk := &clock{now: t0}
	if opt.Now == nil {
		opt.Now = clk.Now
	}
	if opt.SweepInterval == 0 {
		opt.SweepInterval = time.Hour // tests call Sweep themselves
	}
	opt.Log = quiet()
	s, err := Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(ctx) })
	return s, clk
}

func key(nas, id string) session.Key { return session.Key{NAS: nas, ID: id} }

func apply(t *testing.T, s *Store, kind session.Kind, k session.Key, f func(x *session.Session)) {
	t.Helper()
	u := &session.Update{Kind: kind, Session: session.Session{Key: k}}
	if f != nil {
		f(&u.Session)
	}
	if _, err := s.Apply(ctx, u, session.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func user(name string, ip string) func(x *session.Session) {
	return func(x *session.Session) {
		x.UserName = name
		if ip != "" {
			x.FramedIP = netip.MustParseAddr(ip)
		}
	}
}

func keysOfSessions(ss []*session.Session) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.NAS+"/"+s.ID)
	}
	return out
}

func TestApplyAndLookups(t *testing.T) {
	s, clk := open(t, Options{HistorySize: 10})
	apply(t, s, session.KindStart, key("bng-1", "a"), user("alice", "10.0.0.1"))
	clk.Add(time.Second)
	apply(t, s, session.KindStart, key("bng-1", "b"), user("alice", "10.0.0.2"))
	apply(t, s, session.KindStart, key("bng-2", "c"), user("bob", "10.0.0.3"))
	if s.Len() != 3 {
		t.Fatalf("Len %d", s.Len())
	}
	got, err := s.Get(ctx, key("bng-1", "a"))
	if err != nil || got.UserName != "alice" || got.State != session.Active || !got.StartTime.Equal(t0) {
		t.Fatalf("Get: %+v %v", got, err)
	}
	if _, err := s.Get(ctx, key("bng-1", "zz")); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Get missing: %v", err)
	}
	byUser, _ := s.ByUser(ctx, "alice")
	if k := keysOfSessions(byUser); len(k) != 2 || k[0] != "bng-1/a" || k[1] != "bng-1/b" {
		t.Fatalf("ByUser (oldest first) %v", k)
	}
	byNAS, _ := s.ByNAS(ctx, "bng-1")
	if len(byNAS) != 2 {
		t.Fatalf("ByNAS %v", keysOfSessions(byNAS))
	}
	if none, _ := s.ByNAS(ctx, "bng-9"); len(none) != 0 {
		t.Fatal("ByNAS of an unknown NAS")
	}
	x, err := s.ByFramedIP(ctx, netip.MustParseAddr("10.0.0.3"))
	if err != nil || x.ID != "c" {
		t.Fatalf("ByFramedIP %+v %v", x, err)
	}
	if _, err := s.ByFramedIP(ctx, netip.MustParseAddr("10.9.9.9")); !errors.Is(err, session.ErrNotFound) {
		t.Fatal("ByFramedIP of a free address")
	}
	// Returned sessions are copies.
	got.UserName = "mallory"
	got.Class = append(got.Class, 'x')
	again, _ := s.Get(ctx, key("bng-1", "a"))
	if again.UserName != "alice" || len(again.Class) != 0 {
		t.Fatal("Get returned the store's own row")
	}
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestInterimMergesAndReindexes(t *testing.T) {
	s, clk := open(t, Options{})
	k := key("bng", "s")
	apply(t, s, session.KindStart, k, user("alice", "10.0.0.1"))
	clk.Add(time.Minute)
	apply(t, s, session.KindInterim, k, func(x *session.Session) {
		x.FramedIP = netip.MustParseAddr("10.0.0.9") // renumbered
		x.InputOctets = 500
		x.SessionTime = 60
	})
	got, _ := s.Get(ctx, k)
	if got.InputOctets != 500 || got.Updates != 2 || got.UserName != "alice" || !got.LastSeen.Equal(t0.Add(time.Minute)) {
		t.Fatalf("merged: %+v", got)
	}
	if _, err := s.ByFramedIP(ctx, netip.MustParseAddr("10.0.0.1")); !errors.Is(err, session.ErrNotFound) {
		t.Fatal("old framed IP still indexed")
	}
	if x, err := s.ByFramedIP(ctx, netip.MustParseAddr("10.0.0.9")); err != nil || x.Key != k {
		t.Fatalf("new framed IP: %v", err)
	}
	// An Interim that changes no indexed field leaves every lookup in place.
	apply(t, s, session.KindInterim, k, func(x *session.Session) { x.SessionTime = 120 })
	if xs, _ := s.ByUser(ctx, "alice"); len(xs) != 1 || xs[0].Key != k {
		t.Fatalf("by user after a plain Interim: %v", xs)
	}
	if xs, _ := s.ByNAS(ctx, "bng"); len(xs) != 1 {
		t.Fatalf("by NAS after a plain Interim: %v", xs)
	}
	if x, err := s.ByFramedIP(ctx, netip.MustParseAddr("10.0.0.9")); err != nil || x.Key != k {
		t.Fatalf("framed IP after a plain Interim: %v", err)
	}
	// Interim without a Start creates the session (out of order).
	apply(t, s, session.KindInterim, key("bng", "late"), user("bob", ""))
	if _, err := s.Get(ctx, key("bng", "late")); err != nil {
		t.Fatal("Interim without Start did not create the session")
	}
}

func TestStopFreesLookupsAndGoesToHistory(t *testing.T) {
	s, clk := open(t, Options{HistorySize: 10})
	k := key("bng", "s")
	apply(t, s, session.KindStart, k, user("alice", "10.0.0.1"))
	clk.Add(time.Minute)
	apply(t, s, session.KindStop, k, func(x *session.Session) { x.TerminateCause = 1; x.InputOctets = 42 })
	if s.Len() != 0 {
		t.Fatalf("Len %d", s.Len())
	}
	if _, err := s.Get(ctx, k); !errors.Is(err, session.ErrNotFound) {
		t.Fatal("stopped session still active")
	}
	if u, _ := s.ByUser(ctx, "alice"); len(u) != 0 {
		t.Fatal("stopped session still found by user")
	}
	if n, _ := s.ByNAS(ctx, "bng"); len(n) != 0 {
		t.Fatal("stopped session still found by NAS")
	}
	if _, err := s.ByFramedIP(ctx, netip.MustParseAddr("10.0.0.1")); !errors.Is(err, session.ErrNotFound) {
		t.Fatal("framed IP not freed")
	}
	h, _ := s.History(ctx, "alice", 0)
	if len(h) != 1 || h[0].State != session.Stopped || h[0].TerminateCause != 1 || h[0].InputOctets != 42 ||
		!h[0].StopTime.Equal(t0.Add(time.Minute)) || h[0].FramedIP != netip.MustParseAddr("10.0.0.1") {
		t.Fatalf("history %+v", h)
	}
	// The freed address can go to another session.
	apply(t, s, session.KindStart, key("bng", "t"), user("bob", "10.0.0.1"))
	if x, err := s.ByFramedIP(ctx, netip.MustParseAddr("10.0.0.1")); err != nil || x.UserName != "bob" {
		t.Fatalf("reassigned address: %v", err)
	}
	// A Stop with no Start is recorded in the history, not left active.
	apply(t, s, session.KindStop, key("bng", "orphan"), user("carol", ""))
	if s.Len() != 1 {
		t.Fatalf("Len %d", s.Len())
	}
	if h, _ := s.History(ctx, "carol", 0); len(h) != 1 {
		t.Fatal("orphan Stop not in history")
	}
}

// A late Interim-Update after the Stop must not bring the session back; a new Start with
// the same key, later than the Stop, opens it again (session.Reopens).
func TestTombstone(t *testing.T) {
	s, clk := open(t, Options{HistorySize: 10, TombstoneTTL: 10 * time.Minute})
	k := key("bng", "s")
	apply(t, s, session.KindStart, k, user("alice", "10.0.0.1"))
	apply(t, s, session.KindStop, k, nil)
	apply(t, s, session.KindInterim, k, func(x *session.Session) { x.InputOctets = 1 })
	if _, err := s.Get(ctx, k); !errors.Is(err, session.ErrNotFound) {
		t.Fatal("late Interim resurrected a stopped session")
	}
	if s.Len() != 0 {
		t.Fatalf("Len %d", s.Len())
	}
	if x, err := s.ByFramedIP(ctx, netip.MustParseAddr("10.0.0.1")); err == nil {
		t.Fatalf("late Interim re-took the framed IP: %+v", x)
	}
	// Tombstones are forgotten after their TTL by the sweep.
	clk.Add(11 * time.Minute)
	s.Sweep()
	apply(t, s, session.KindInterim, k, user("alice", ""))
	if _, err := s.Get(ctx, k); err != nil {
		t.Fatal("Interim long after the tombstone expired must create the session")
	}
	apply(t, s, session.KindStop, k, nil)
	apply(t, s, session.KindStart, k, user("alice", "")) // no later than the Stop: its own
	if _, err := s.Get(ctx, k); !errors.Is(err, session.ErrNotFound) {
		t.Fatal("a Start no later than the Stop revived the session")
	}
	clk.Add(time.Second)
	apply(t, s, session.KindStart, k, user("alice", ""))
	if _, err := s.Get(ctx, k); err != nil {
		t.Fatal("a new Start with a stopped key, later than the Stop, must open it")
	}
}

// A Stop retransmitted after the session was stopped (RFC 2866: a retransmission with an
// updated Acct-Delay-Time is a new packet, so the duplicate cache does not catch it) must
// not record the session in the history twice.
func TestRetransmittedStopRecordedOnce(t *testing.T) {
	s, _ := open(t, Options{HistorySize: 10})
	k := key("bng", "s")
	apply(t, s, session.KindStart, k, user("alice", "10.0.0.1"))
	apply(t, s, session.KindStop, k, func(x *session.Session) { x.UserName = "alice"; x.InputOctets = 10 })
	apply(t, s, session.KindStop, k, func(x *session.Session) { x.UserName = "alice"; x.InputOctets = 10 })
	if h, _ := s.History(ctx, "alice", 0); len(h) != 1 {
		t.Fatalf("a retransmitted Stop recorded the session %d times in the history", len(h))
	}
}

func TestCloseNAS(t *testing.T) {
	s, _ := open(t, Options{HistorySize: 100, Shards: 4})
	for i := 0; i < 20; i++ {
		apply(t, s, session.KindStart, key("bng-1", fmt.Sprint(i)), user("u1", fmt.Sprintf("10.1.0.%d", i)))
	}
	apply(t, s, session.KindStart, key("bng-2", "x"), user("u2", "10.2.0.1"))
	at := t0.Add(time.Hour)
	n, err := s.CloseNAS(ctx, "bng-1", at, 11)
	if err != nil || n != 20 {
		t.Fatalf("CloseNAS = %d, %v", n, err)
	}
	if s.Len() != 1 {
		t.Fatalf("Len %d", s.Len())
	}
	if left, _ := s.ByNAS(ctx, "bng-1"); len(left) != 0 {
		t.Fatal("sessions left on the NAS")
	}
	if _, err := s.ByFramedIP(ctx, netip.MustParseAddr("10.1.0.5")); !errors.Is(err, session.ErrNotFound) {
		t.Fatal("framed IP of a closed session still indexed")
	}
	if _, err := s.Get(ctx, key("bng-2", "x")); err != nil {
		t.Fatal("other NAS affected")
	}
	h, _ := s.History(ctx, "u1", 0)
	if len(h) != 20 || h[0].TerminateCause != 11 || !h[0].StopTime.Equal(at) || h[0].State != session.Stopped {
		t.Fatalf("history %d %+v", len(h), h[0])
	}
	// A late Interim of a closed session does not resurrect it either.
	apply(t, s, session.KindInterim, key("bng-1", "3"), nil)
	if _, err := s.Get(ctx, key("bng-1", "3")); err == nil {
		t.Fatal("late Interim after Accounting-On resurrected the session")
	}
	if n, _ := s.CloseNAS(ctx, "bng-1", at, 11); n != 0 {
		t.Fatalf("second CloseNAS closed %d", n)
	}
}

func TestExpirySweep(t *testing.T) {
	s, clk := open(t, Options{HistorySize: 10, Expiry: func(x *session.Session) time.Duration {
		if x.InterimInterval > 0 {
			return 2 * time.Duration(x.InterimInterval) * time.Second
		}
		return 10 * time.Minute
	}})
	apply(t, s, session.KindStart, key("bng", "quiet"), user("alice", "10.0.0.1"))
	apply(t, s, session.KindStart, key("bng", "chatty"), user("bob", "10.0.0.2"))
	apply(t, s, session.KindStart, key("bng", "short"), func(x *session.Session) { x.UserName = "carol"; x.InterimInterval = 60 })
	clk.Add(3 * time.Minute)
	if n := s.Sweep(); n != 1 {
		t.Fatalf("after 3m: expired %d, want only the 60s-interim session", n)
	}
	clk.Add(5 * time.Minute)
	apply(t, s, session.KindInterim, key("bng", "chatty"), nil)
	if n := s.Sweep(); n != 0 {
		t.Fatalf("after 8m: expired %d", n)
	}
	clk.Add(3 * time.Minute) // quiet silent 11m, chatty 3m
	if n := s.Sweep(); n != 1 {
		t.Fatalf("after 11m: expired %d", n)
	}
	if _, err := s.Get(ctx, key("bng", "quiet")); !errors.Is(err, session.ErrNotFound) {
		t.Fatal("silent session still active")
	}
	if _, err := s.Get(ctx, key("bng", "chatty")); err != nil {
		t.Fatal("reporting session expired")
	}
	if _, err := s.ByFramedIP(ctx, netip.MustParseAddr("10.0.0.1")); !errors.Is(err, session.ErrNotFound) {
		t.Fatal("expired session's framed IP still indexed")
	}
	h, _ := s.History(ctx, "alice", 0)
	if len(h) != 1 || h[0].TerminateCause != terminateCauseLostService || !h[0].StopTime.Equal(clk.Now()) {
		t.Fatalf("history %+v", h)
	}
	if s.Len() != 1 {
		t.Fatalf("Len %d", s.Len())
	}
}

func TestNoExpiryWithoutFunc(t *testing.T) {
	s, clk := open(t, Options{})
	apply(t, s, session.KindStart, key("bng", "a"), nil)
	clk.Add(1000 * time.Hour)
	if n := s.Sweep(); n != 0 || s.Len() != 1 {
		t.Fatalf("expired %d without an expiry policy", n)
	}
}

// The background sweeper runs on its own and stops on Close.
func TestSweepLoop(t *testing.T) {
	s, clk := open(t, Options{SweepInterval: 5 * time.Millisecond, Expiry: func(*session.Session) time.Duration { return time.Minute }})
	apply(t, s, session.KindStart, key("bng", "a"), nil)
	clk.Add(2 * time.Minute)
	deadline := time.Now().Add(5 * time.Second)
	for s.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("sweeper did not expire the session")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestHistoryOrderAndBound(t *testing.T) {
	s, clk := open(t, Options{HistorySize: 3})
	for i := 0; i < 5; i++ {
		clk.Add(time.Second)
		apply(t, s, session.KindStop, key("bng", fmt.Sprint(i)), user("alice", ""))
	}
	apply(t, s, session.KindStop, key("bng", "b"), user("bob", ""))
	h, _ := s.History(ctx, "alice", 0)
	if k := keysOfSessions(h); len(k) != 2 || k[0] != "bng/4" || k[1] != "bng/3" {
		t.Fatalf("alice history (newest first, bounded to 3 overall) %v", k)
	}
	all, _ := s.History(ctx, "", 0)
	if k := keysOfSessions(all); len(k) != 3 || k[0] != "bng/b" {
		t.Fatalf("all history %v", k)
	}
	if one, _ := s.History(ctx, "", 1); len(one) != 1 {
		t.Fatalf("limit: %d", len(one))
	}
	none, _ := open(t, Options{HistorySize: 0})
	apply(t, none, session.KindStop, key("bng", "x"), user("alice", ""))
	if h, _ := none.History(ctx, "", 0); len(h) != 0 {
		t.Fatal("history kept with HistorySize 0")
	}
}

// Two sessions claim the same framed IP (the NAS reassigned it before the old Stop came):
// the one seen last wins, and the old session's Stop does not free the new one's address.
func TestFramedIPReassigned(t *testing.T) {
	s, clk := open(t, Options{Shards: 64})
	ip := netip.MustParseAddr("10.0.0.1")
	apply(t, s, session.KindStart, key("bng", "old"), user("alice", "10.0.0.1"))
	clk.Add(time.Minute)
	apply(t, s, session.KindStart, key("bng", "new"), user("bob", "10.0.0.1"))
	if x, err := s.ByFramedIP(ctx, ip); err != nil || x.ID != "new" {
		t.Fatalf("ByFramedIP = %+v, %v; want the newer session", x, err)
	}
	apply(t, s, session.KindStop, key("bng", "old"), nil)
	if x, err := s.ByFramedIP(ctx, ip); err != nil || x.ID != "new" {
		t.Fatalf("after the old Stop: %+v, %v", x, err)
	}
}

// Two sessions of a user claim the address (the older one's Stop was lost): when the newer
// one closes, the older one is still found by the address, so that a later Start can
// supersede it instead of it hiding until expiry. (One shard: the shard holding both
// sessions once kept only the newer one's claim.)
func TestFramedIPOlderClaimant(t *testing.T) {
	s, clk := open(t, Options{Shards: 1})
	ip := netip.MustParseAddr("10.0.0.1")
	apply(t, s, session.KindStart, key("bng", "old"), user("alice", "10.0.0.1"))
	clk.Add(time.Minute)
	apply(t, s, session.KindInterim, key("bng", "newer"), user("alice", "10.0.0.1")) // its Start was lost
	apply(t, s, session.KindStop, key("bng", "newer"), nil)
	if x, err := s.ByFramedIP(ctx, ip); err != nil || x.ID != "old" {
		t.Fatalf("ByFramedIP = %+v, %v; want the older session still holding the address", x, err)
	}
}

func TestClosedStore(t *testing.T) {
	s, _ := open(t, Options{})
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, err := s.Apply(ctx, &session.Update{Kind: session.KindStart, Session: session.Session{Key: key("a", "b")}}, session.WriteOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Apply after Close: %v", err)
	}
	if _, err := s.CloseNAS(ctx, "a", t0, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("CloseNAS after Close: %v", err)
	}
	if err := s.Ready(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ready after Close: %v", err)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sub", "snap.jsonl")
	s, clk := open(t, Options{SnapshotFile: file, HistorySize: 10, Shards: 8})
	for i := 0; i < 50; i++ {
		apply(t, s, session.KindStart, key("bng", fmt.Sprint(i)), func(x *session.Session) {
			x.UserName = fmt.Sprintf("u%d", i%7)
			x.FramedIP = netip.MustParseAddr(fmt.Sprintf("10.0.1.%d", i))
			x.Class = []byte{0, 1, 2, byte(i)}
			x.InputOctets = uint64(i) << 33
			x.NASIPAddress = netip.MustParseAddr("192.0.2.1")
		})
	}
	clk.Add(time.Minute)
	apply(t, s, session.KindStop, key("bng", "0"), nil)
	apply(t, s, session.KindStop, key("bng", "1"), nil)
	before, _ := s.Get(ctx, key("bng", "7"))
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatal("snapshot not written:", err)
	}
	// No temporary files left behind.
	if ents, _ := os.ReadDir(filepath.Dir(file)); len(ents) != 1 {
		t.Fatalf("%d files in the snapshot directory", len(ents))
	}
	r, _ := open(t, Options{SnapshotFile: file, HistorySize: 10, Shards: 16})
	if r.Len() != 48 {
		t.Fatalf("reloaded %d active sessions, want 48", r.Len())
	}
	after, err := r.Get(ctx, key("bng", "7"))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%+v", after) != fmt.Sprintf("%+v", before) {
		t.Fatalf("session changed across the snapshot:\n%+v\n%+v", before, after)
	}
	if x, err := r.ByFramedIP(ctx, netip.MustParseAddr("10.0.1.9")); err != nil || x.ID != "9" {
		t.Fatal("framed IP index not rebuilt")
	}
	if u, _ := r.ByUser(ctx, "u0"); len(u) != 7 { // 7,14,...,49 (0 is stopped)
		t.Fatalf("ByUser after reload: %d", len(u))
	}
	if h, _ := r.History(ctx, "", 0); len(h) != 2 || h[0].ID != "1" {
		t.Fatalf("history after reload %v", keysOfSessions(h))
	}
	// Writes continue on the reloaded store, and the count stays right.
	apply(t, r, session.KindStop, key("bng", "9"), nil)
	if r.Len() != 47 {
		t.Fatalf("Len %d", r.Len())
	}
}

func TestSnapshotMissingIsEmpty(t *testing.T) {
	s, _ := open(t, Options{SnapshotFile: filepath.Join(t.TempDir(), "none.jsonl")})
	if s.Len() != 0 {
		t.Fatal("sessions from nowhere")
	}
}

func TestSnapshotCorrupt(t *testing.T) {
	dir := t.TempDir()
	header := `{"format":"openaaa-sessions/v1","active":2,"history":0}` + "\n"
	rec := `{"nas":"bng","acctSessionId":"a","userName":"alice","state":"active"}` + "\n"
	cases := []struct {
		name, content, want string
	}{
		{"garbage", "not json at all\n", "not a openaaa-sessions/v1 file"},
		{"wrong format", `{"format":"other/v9","active":0}` + "\n", "not a openaaa-sessions/v1 file"},
		{"empty file", "", "not a openaaa-sessions/v1 file"},
		{"truncated", header + rec, "record 2"},
		{"bad record", header + rec + "{\"nas\": 12}\n", "record 2"},
		{"negative count", `{"format":"openaaa-sessions/v1","active":-3,"history":0}` + "\n", "not a openaaa-sessions/v1 file"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, fmt.Sprintf("snap-%d", i))
			if err := os.WriteFile(file, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(Options{SnapshotFile: file, Log: quiet()})
			if err == nil {
				t.Fatal("corrupt snapshot accepted")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), file) {
				t.Fatalf("error %q does not name the file and %q", err, c.want)
			}
		})
	}
}

func TestSnapshotUnwritable(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{SnapshotFile: filepath.Join(blocker, "snap.jsonl"), Log: quiet()})
	if err == nil {
		// A snapshot path under a regular file cannot be read either; some systems report
		// ENOTDIR on open, which is not "does not exist".
		if cerr := s.Close(ctx); cerr == nil {
			t.Fatal("Close reported success for a snapshot it could not write")
		}
	}
}

// Many goroutines applying to overlapping and distinct keys: the counts and indexes stay
// consistent (run with -race).
func TestConcurrentApply(t *testing.T) {
	s, _ := open(t, Options{HistorySize: 10000, Shards: 8})
	const workers, per = 8, 100
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				k := key(fmt.Sprintf("bng-%d", w%2), fmt.Sprintf("w%d-%d", w, i))
				u := &session.Update{Kind: session.KindStart, Session: session.Session{Key: k, UserName: fmt.Sprintf("u%d", i%10),
					FramedIP: netip.AddrFrom4([4]byte{10, byte(w), byte(i >> 8), byte(i)})}}
				if _, err := s.Apply(ctx, u, session.WriteOptions{}); err != nil {
					t.Error(err)
					return
				}
				// A shared hot key updated by everyone.
				_, _ = s.Apply(ctx, &session.Update{Kind: session.KindInterim, Session: session.Session{Key: key("hot", "h"), SessionTime: uint32(i), InputOctets: uint64(i)}}, session.WriteOptions{})
				if i%4 == 0 {
					_, _ = s.Apply(ctx, &session.Update{Kind: session.KindStop, Session: session.Session{Key: k}}, session.WriteOptions{})
				}
				_, _ = s.ByUser(ctx, "u1")
				_, _ = s.ByFramedIP(ctx, u.Session.FramedIP)
			}
		}(w)
	}
	wg.Wait()
	stopped := workers * per / 4
	if want := workers*per - stopped + 1; s.Len() != want {
		t.Fatalf("Len %d, want %d", s.Len(), want)
	}
	b0, _ := s.ByNAS(ctx, "bng-0")
	b1, _ := s.ByNAS(ctx, "bng-1")
	if len(b0)+len(b1) != workers*per-stopped {
		t.Fatalf("ByNAS %d + %d", len(b0), len(b1))
	}
	hot, _ := s.Get(ctx, key("hot", "h"))
	if hot.Updates != workers*per || hot.InputOctets != per-1 || hot.SessionTime != per-1 {
		t.Fatalf("hot key: updates %d octets %d", hot.Updates, hot.InputOctets)
	}
	if h, _ := s.History(ctx, "", 0); len(h) != stopped {
		t.Fatalf("history %d, want %d", len(h), stopped)
	}
}

// The real Stop of a session that was closed by expiry completes its history record (final
// counters, the NAS's cause) instead of adding a second record or reopening it.
func TestStopAfterExpiryCompletesHistory(t *testing.T) {
	s, clk := open(t, Options{HistorySize: 10, Expiry: func(*session.Session) time.Duration { return time.Minute }})
	k := key("bng", "s")
	apply(t, s, session.KindStart, k, user("alice", "10.0.0.1"))
	clk.Add(2 * time.Minute)
	if s.Sweep() != 1 {
		t.Fatal("not expired")
	}
	clk.Add(time.Minute)
	apply(t, s, session.KindStop, k, func(x *session.Session) {
		x.InputOctets, x.SessionTime, x.TerminateCause = 777, 170, 1
		x.LastSeen = clk.Now()
	})
	h, _ := s.History(ctx, "alice", 0)
	if len(h) != 1 {
		t.Fatalf("%d history records", len(h))
	}
	if h[0].InputOctets != 777 || h[0].TerminateCause != 1 || !h[0].StopTime.Equal(clk.Now()) || h[0].State != session.Stopped {
		t.Fatalf("history record not completed: %+v", h[0])
	}
	if s.Len() != 0 {
		t.Fatal("Stop reopened the session")
	}
}

// A snapshot that holds the same session twice loads it once, and the count stays right.
func TestSnapshotDuplicateKey(t *testing.T) {
	file := filepath.Join(t.TempDir(), "snap.jsonl")
	content := `{"format":"openaaa-sessions/v1","active":2,"history":0}` + "\n" +
		`{"nas":"bng","acctSessionId":"a","userName":"alice","framedIpAddress":"10.0.0.1","state":"active"}` + "\n" +
		`{"nas":"bng","acctSessionId":"a","userName":"alice","framedIpAddress":"10.0.0.2","state":"active"}` + "\n"
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := open(t, Options{SnapshotFile: file})
	if s.Len() != 1 {
		t.Fatalf("Len %d, want 1", s.Len())
	}
	if _, err := s.ByFramedIP(ctx, netip.MustParseAddr("10.0.0.1")); err == nil {
		t.Fatal("the overwritten record is still indexed")
	}
	apply(t, s, session.KindStop, key("bng", "a"), nil)
	if s.Len() != 0 {
		t.Fatalf("Len %d after the Stop", s.Len())
	}
}

// At a high rate of stopped sessions the tombstones stay bounded: the oldest generation is
// forgotten first, the recent ones still keep late Interims out.
func TestTombstonesBounded(t *testing.T) {
	s, _ := open(t, Options{Shards: 4, HistorySize: 10, MaxTombstones: 400})
	const n = 5000
	for i := 0; i < n; i++ {
		k := key("bng", fmt.Sprint(i))
		apply(t, s, session.KindStart, k, user("u", ""))
		apply(t, s, session.KindStop, k, nil)
	}
	total := 0
	for i := range s.shards {
		total += len(s.shards[i].stopped) + len(s.shards[i].stoppedOld)
	}
	if total > 400 || total < 100 {
		t.Fatalf("%d tombstones after %d stops, want at most MaxTombstones (400) and a useful share of it", total, n)
	}
	last := key("bng", fmt.Sprint(n-1))
	apply(t, s, session.KindInterim, last, user("u", ""))
	if _, err := s.Get(ctx, last); !errors.Is(err, session.ErrNotFound) {
		t.Fatal("late Interim of the newest stopped session resurrected it")
	}
	first := key("bng", "0")
	apply(t, s, session.KindInterim, first, user("u", ""))
	if _, err := s.Get(ctx, first); err != nil {
		t.Fatal("the oldest tombstone should have been forgotten")
	}
}

// Apply reports whether the update created its session, and MatchFramedIP selects among every
// active claimant of an address, in place.
func TestCreatedAndMatchFramedIP(t *testing.T) {
	s, clk := open(t, Options{})
	ip := netip.MustParseAddr("10.0.0.1")
	created := func(kind session.Kind, k session.Key) bool {
		t.Helper()
		u := &session.Update{Kind: kind, Session: session.Session{Key: k, UserName: "alice", FramedIP: ip}}
		res, err := s.Apply(ctx, u, session.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Created
	}
	if !created(session.KindStart, key("bng", "a")) {
		t.Fatal("Start of a new session: Created false")
	}
	clk.Add(time.Minute)
	if created(session.KindInterim, key("bng", "a")) {
		t.Fatal("Interim of a stored session: Created true")
	}
	if !created(session.KindInterim, key("bng", "b")) { // its Start was lost
		t.Fatal("Interim of an unknown session: Created false")
	}
	if created(session.KindStop, key("bng", "a")) || created(session.KindInterim, key("bng", "a")) {
		t.Fatal("Stop, or a late Interim of a stopped session: Created true")
	}
	all := s.MatchFramedIP(ip, 4, func(*session.Session) bool { return true })
	if len(all) != 1 || all[0] != key("bng", "b") {
		t.Fatalf("claimants %v, want only the active b", all)
	}
	created(session.KindStart, key("bng", "c"))
	if got := s.MatchFramedIP(ip, 4, func(x *session.Session) bool { return x.ID != "c" }); len(got) != 1 || got[0] != key("bng", "b") {
		t.Fatalf("matched %v, want b", got)
	}
	if got := s.MatchFramedIP(ip, 1, func(*session.Session) bool { return true }); len(got) != 1 {
		t.Fatalf("max 1: %v", got)
	}
}

func TestContract(t *testing.T) {
	s, _ := open(t, Options{HistorySize: 100})
	storetest.Run(t, s, "emb")
	storetest.RunNodes(t, s, "emb")
	storetest.RunSQN(t, s, "emb")
}

// The AKA sequence numbers survive a restart through the snapshot: the next one after it
// is past every one given before.
func TestSQNSnapshot(t *testing.T) {
	file := filepath.Join(t.TempDir(), "snap.jsonl")
	s, _ := open(t, Options{SnapshotFile: file})
	for _, floor := range []uint64{5, 1, 1} {
		if _, err := s.NextSQN(ctx, "001010000000001", floor); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r, _ := open(t, Options{SnapshotFile: file})
	if n, err := r.NextSQN(ctx, "001010000000001", 1); err != nil || n != 8 {
		t.Fatalf("after a restart: %d, %v; want 8", n, err)
	}
}

// A node that stops refreshing its entry is forgotten after its TTL.
func TestNodeExpires(t *testing.T) {
	s, clk := open(t, Options{})
	if err := s.RegisterNode(ctx, session.Node{Name: "a", Host: "pcrf", AdminURL: "http://a"}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Add(29 * time.Second)
	if _, err := s.LookupNode(ctx, "a"); err != nil {
		t.Fatalf("within its TTL: %v", err)
	}
	clk.Add(2 * time.Second)
	if _, err := s.LookupNode(ctx, "a"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("after its TTL: %v, want ErrNotFound", err)
	}
}

// The IPv6 fields survive a restart (the snapshot) and the IPv6 lookup is rebuilt from it;
// a snapshot of the format before them (framedIpv6Prefix as text) still loads.
func TestSnapshotIPv6(t *testing.T) {
	file := filepath.Join(t.TempDir(), "snap.jsonl")
	s, _ := open(t, Options{SnapshotFile: file})
	apply(t, s, session.KindStart, key("bng", "pd"), func(x *session.Session) {
		x.DelegatedIPv6Prefix = netip.MustParsePrefix("2001:db8:100:ab00::/56")
		x.FramedIPv6Prefix = netip.MustParsePrefix("2001:db8:0:7::/64")
		x.NASIPv6Address = netip.MustParseAddr("2001:db8:ffff::1")
		x.FramedInterfaceID = "0011:22ff:fe33:4455"
	})
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r, _ := open(t, Options{SnapshotFile: file})
	x, err := r.ByIPv6(ctx, netip.MustParsePrefix("2001:db8:100:ab12::1/128"))
	if err != nil || x.ID != "pd" || x.NASIPv6Address != netip.MustParseAddr("2001:db8:ffff::1") || x.FramedInterfaceID != "0011:22ff:fe33:4455" {
		t.Fatalf("after reload: %+v, %v", x, err)
	}
	old := `{"format":"openaaa-sessions/v1","active":1,"history":0}
{"nas":"bng","acctSessionId":"v1","userName":"u","state":"active","client":"c","framedIpv6Prefix":"2001:db8:9::/48","startTime":"2025-03-01T12:00:00Z","lastSeen":"2025-03-01T12:00:00Z","sessionTime":0,"inputOctets":0,"outputOctets":0,"inputPackets":0,"outputPackets":0,"updates":1}
`
	oldFile := filepath.Join(t.TempDir(), "old.jsonl")
	if err := os.WriteFile(oldFile, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	o, _ := open(t, Options{SnapshotFile: oldFile})
	if x, err := o.ByIPv6(ctx, netip.MustParsePrefix("2001:db8:9:1::1/128")); err != nil || x.ID != "v1" {
		t.Fatalf("a snapshot of the previous version: %+v, %v", x, err)
	}
}

// A snapshot written before Session.GxThrottled marked a throttled Gx session with the RADIUS
// field DisconnectReason "quota": it loads throttled, active or in the history, while a RADIUS
// session's reason stays its own.
func TestSnapshotLegacyGxThrottle(t *testing.T) {
	file := filepath.Join(t.TempDir(), "snap.jsonl")
	content := `{"format":"openaaa-sessions/v1","active":2,"history":1}` + "\n" +
		`{"nas":"gx","acctSessionId":"pgw;1","userName":"imsi1","state":"active","disconnectReason":"quota"}` + "\n" +
		`{"nas":"bng","acctSessionId":"r1","userName":"imsi1","state":"active","disconnectReason":"quota"}` + "\n" +
		`{"nas":"gx","acctSessionId":"pgw;0","userName":"imsi1","state":"stopped","disconnectReason":"quota"}` + "\n"
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := open(t, Options{SnapshotFile: file, HistorySize: 10})
	if gx, err := s.Get(ctx, key("gx", "pgw;1")); err != nil || !gx.GxThrottled || gx.DisconnectReason != "" {
		t.Fatalf("Gx session = %+v, %v; want throttled, no disconnect reason", gx, err)
	}
	if r, err := s.Get(ctx, key("bng", "r1")); err != nil || r.GxThrottled || r.DisconnectReason != "quota" {
		t.Fatalf("RADIUS session = %+v, %v; want its disconnect reason, not throttled", r, err)
	}
	if h, _ := s.History(ctx, "imsi1", 0); len(h) != 1 || !h[0].GxThrottled {
		t.Fatalf("history = %+v; want the Gx session throttled", h)
	}
}
