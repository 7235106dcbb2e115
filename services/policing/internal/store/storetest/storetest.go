// Package storetest is the contract every session.Store keeps, as one test suite that each
// store's tests run against a store of their own (embedded; Cassandra and hybrid on real
// Cassandra): the stores may differ in how they keep sessions, never in what they answer.
package storetest

import (
	"context"
	"errors"
	"hash/fnv"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// T0 is the event time the suite's sessions start at.
var T0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Run runs the contract against st, a fresh store keeping a history of closed sessions.
// Keys and users are prefixed by prefix, so that one store can serve several runs.
func Run(t *testing.T, st session.Store, prefix string) {
	c := context.Background()
	nas := prefix + "-nas"
	key := func(id string) session.Key { return session.Key{NAS: nas, ID: id} }
	user := func(id string) string { return prefix + "-" + id }
	ip := func(n byte) netip.Addr { return netip.AddrFrom4([4]byte{10, 99, 0, n}) }
	apply := func(t *testing.T, kind session.Kind, id string, n byte, at time.Time) {
		t.Helper()
		u := &session.Update{Kind: kind, Session: session.Session{
			Key: key(id), UserName: user(id), FramedIP: ip(n), LastSeen: at,
			SessionTime: uint32(at.Sub(T0) / time.Second), InputOctets: uint64(at.Sub(T0) / time.Second),
		}}
		if kind == session.KindStart {
			u.Session.StartTime = at
		}
		if _, err := st.Apply(c, u, session.WriteOptions{}); err != nil {
			t.Fatalf("%s %s: %v", kind, id, err)
		}
	}
	active := func(t *testing.T, id string) *session.Session {
		t.Helper()
		s, err := st.Get(c, key(id))
		if err != nil {
			t.Fatalf("Get %s: %v; want the session active", id, err)
		}
		if v, ok := st.(session.ValueGetter); ok {
			if x, err := v.GetValue(c, key(id)); err != nil || !reflect.DeepEqual(x, *s) {
				t.Fatalf("GetValue %s = %+v, %v; want Get's %+v", id, x, err, *s)
			}
		}
		if ss, err := st.ByUser(c, user(id)); err != nil || len(ss) != 1 {
			t.Fatalf("ByUser %s = %d sessions, %v; want 1", id, len(ss), err)
		}
		return s
	}
	stopped := func(t *testing.T, id string, n byte) {
		t.Helper()
		if s, err := st.Get(c, key(id)); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("Get %s = %+v, %v; want it stopped (ErrNotFound)", id, s, err)
		}
		if v, ok := st.(session.ValueGetter); ok {
			if x, err := v.GetValue(c, key(id)); !errors.Is(err, session.ErrNotFound) {
				t.Fatalf("GetValue %s = %+v, %v; want it stopped (ErrNotFound)", id, x, err)
			}
		}
		if ss, err := st.ByUser(c, user(id)); err != nil || len(ss) != 0 {
			t.Fatalf("ByUser %s = %d sessions, %v; want none", id, len(ss), err)
		}
		if s, err := st.ByFramedIP(c, ip(n)); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("ByFramedIP %s = %+v, %v; want ErrNotFound", ip(n), s, err)
		}
	}

	t.Run("start interim stop", func(t *testing.T) {
		apply(t, session.KindStart, "flow", 1, T0)
		apply(t, session.KindInterim, "flow", 1, T0.Add(time.Minute))
		s := active(t, "flow")
		if s.State != session.Active || s.SessionTime != 60 || !s.StartTime.Equal(T0) || s.FramedIP != ip(1) {
			t.Fatalf("after the Interim: %+v", s)
		}
		if s, err := st.ByFramedIP(c, ip(1)); err != nil || s.Key != key("flow") {
			t.Fatalf("ByFramedIP = %+v, %v", s, err)
		}
		apply(t, session.KindStop, "flow", 1, T0.Add(2*time.Minute))
		stopped(t, "flow", 1)
		h, err := st.History(c, user("flow"), 0)
		if err != nil || len(h) != 1 || h[0].State != session.Stopped || !h[0].StopTime.Equal(T0.Add(2*time.Minute)) {
			t.Fatalf("History = %+v, %v; want the one closed session", h, err)
		}
	})
	t.Run("interim without its start opens the session", func(t *testing.T) {
		apply(t, session.KindInterim, "nostart", 2, T0.Add(time.Minute))
		if s := active(t, "nostart"); !s.StartTime.Equal(T0) {
			t.Fatalf("StartTime = %v, want the Interim's time less its session time (%v)", s.StartTime, T0)
		}
	})
	// session.Reopens: a Start on a stopped session opens a new one only when it is later
	// than the Stop; else it is the stopped session's own, late.
	t.Run("start later than the stop opens a new session", func(t *testing.T) {
		apply(t, session.KindStart, "reuse", 3, T0)
		apply(t, session.KindStop, "reuse", 3, T0.Add(10*time.Second))
		apply(t, session.KindStart, "reuse", 3, T0.Add(20*time.Second))
		if s := active(t, "reuse"); !s.StartTime.Equal(T0.Add(20 * time.Second)) {
			t.Fatalf("StartTime = %v, want the new Start's", s.StartTime)
		}
	})
	t.Run("start no later than the stop keeps it stopped", func(t *testing.T) {
		apply(t, session.KindStart, "replay", 4, T0)
		apply(t, session.KindStop, "replay", 4, T0.Add(10*time.Second))
		apply(t, session.KindStart, "replay", 4, T0) // replayed from a spool
		stopped(t, "replay", 4)
		apply(t, session.KindStart, "replay", 4, T0.Add(10*time.Second)) // same second
		stopped(t, "replay", 4)
	})
	t.Run("late interim keeps it stopped", func(t *testing.T) {
		apply(t, session.KindStart, "late", 5, T0)
		apply(t, session.KindStop, "late", 5, T0.Add(10*time.Second))
		apply(t, session.KindInterim, "late", 5, T0.Add(5*time.Second))
		stopped(t, "late", 5)
	})
	// The write's result says whether it created the session (superseding asks it of an
	// Interim), and the store never writes into the update it was given, nor reads it once
	// Apply returned.
	t.Run("result and update", func(t *testing.T) {
		write := func(kind session.Kind, id string, at time.Time) bool {
			t.Helper()
			u := &session.Update{Kind: kind, Session: session.Session{Key: key(id), UserName: user(id), FramedIP: ip(7),
				LastSeen: at, SessionTime: uint32(at.Sub(T0) / time.Second)}}
			was := *u
			res, err := st.Apply(c, u, session.WriteOptions{DisconnectReason: "test"})
			if err != nil {
				t.Fatalf("%s %s: %v", kind, id, err)
			}
			if !reflect.DeepEqual(*u, was) {
				t.Fatalf("%s %s: the store wrote into the update: %+v, was %+v", kind, id, *u, was)
			}
			*u = session.Update{} // the caller's to reuse (gx does): the checks below must hold
			return res.Created
		}
		if !write(session.KindStart, "made", T0) {
			t.Fatal("Start of a new session: Created false")
		}
		if write(session.KindInterim, "made", T0.Add(time.Minute)) {
			t.Fatal("Interim of a stored session: Created true")
		}
		if s := active(t, "made"); s.DisconnectReason != "test" {
			t.Fatalf("DisconnectReason %q: the write's not recorded", s.DisconnectReason)
		}
		if !write(session.KindInterim, "lost", T0.Add(time.Minute)) { // its Start was lost
			t.Fatal("Interim of an unknown session: Created false")
		}
		if write(session.KindStop, "made", T0.Add(2*time.Minute)) || write(session.KindInterim, "made", T0.Add(3*time.Minute)) {
			t.Fatal("Stop, or a late Interim of a stopped session: Created true")
		}
	})
	// A change the policy server pushed (a Gx RAR) is merged like a message of the session's
	// client but is not one of its requests: Session.Updates counts those (a Gx CCR's
	// CC-Request-Number is checked against it).
	t.Run("pushed change not counted", func(t *testing.T) {
		apply(t, session.KindStart, "push", 6, T0)
		u := &session.Update{Kind: session.KindInterim, Session: session.Session{
			Key: key("push"), LastSeen: T0.Add(time.Minute), MonitoringExhausted: []string{"mk"}}}
		if _, err := st.Apply(c, u, session.WriteOptions{NoSpool: true, Push: true}); err != nil {
			t.Fatalf("pushed Interim: %v", err)
		}
		if s := active(t, "push"); s.Updates != 1 || !slices.Equal(s.MonitoringExhausted, []string{"mk"}) {
			t.Fatalf("after a pushed change: %d updates, exhausted %v; want 1, [mk]", s.Updates, s.MonitoringExhausted)
		}
	})
	t.Run("ipv6", func(t *testing.T) { runIPv6(t, st, prefix) })
	t.Run("calling station and gx", func(t *testing.T) { runCalling(t, st, prefix) })
}

// runCalling holds a store to the Calling-Station-Id lookup (a subscriber's MSISDN across its
// RADIUS and Gx sessions, a client's MAC), kept through a change and a Stop, and to Gx
// sessions having no by-NAS lookup (session.GxNAS).
func runCalling(t *testing.T, st session.Store, prefix string) {
	c := context.Background()
	msisdn, other := prefix+"-46700000001", prefix+"-46700000002"
	radius := session.Key{NAS: prefix + "-pgw", ID: "r1"}
	gx := session.Key{NAS: session.GxNAS, ID: prefix + ";gx;1"}
	apply := func(kind session.Kind, k session.Key, calling string, at time.Time) {
		t.Helper()
		u := &session.Update{Kind: kind, Session: session.Session{Key: k, UserName: prefix + "-imsi",
			CallingStationID: calling, LastSeen: at, SessionTime: uint32(at.Sub(T0) / time.Second)}}
		if kind == session.KindStart {
			u.Session.StartTime = at
		}
		if _, err := st.Apply(c, u, session.WriteOptions{}); err != nil {
			t.Fatalf("%s %v: %v", kind, k, err)
		}
	}
	want := func(id string, keys ...session.Key) {
		t.Helper()
		ss, err := st.ByCallingStation(c, id)
		if err != nil {
			t.Fatalf("ByCallingStation %s: %v", id, err)
		}
		got := map[session.Key]bool{}
		for _, s := range ss {
			got[s.Key] = true
		}
		if len(ss) != len(keys) {
			t.Fatalf("ByCallingStation %s = %d sessions %v, want %v", id, len(ss), got, keys)
		}
		for _, k := range keys {
			if !got[k] {
				t.Fatalf("ByCallingStation %s = %v, want %v", id, got, keys)
			}
		}
	}
	apply(session.KindStart, radius, msisdn, T0)
	apply(session.KindStart, gx, msisdn, T0)
	want(msisdn, radius, gx)
	if ss, err := st.ByNAS(c, session.GxNAS); err != nil || len(ss) != 0 {
		t.Fatalf("ByNAS(%q) = %d sessions, %v; want none: Gx sessions have no by-NAS lookup", session.GxNAS, len(ss), err)
	}
	apply(session.KindInterim, radius, other, T0.Add(time.Minute))
	want(msisdn, gx)
	want(other, radius)
	apply(session.KindStop, radius, "", T0.Add(2*time.Minute))
	apply(session.KindStop, gx, "", T0.Add(2*time.Minute))
	want(msisdn)
	want(other)
}

// runIPv6 holds a store to the dual-stack contract: the IPv6 fields are kept, and ByIPv6
// finds the session whose delegated prefix, framed prefix or framed address is the longest
// covering an address or a prefix, in every bucket of a store's lookup (/128 to /48 here).
func runIPv6(t *testing.T, st session.Store, prefix string) {
	c := context.Background()
	nas := prefix + "-nas6"
	v4 := netip.AddrFrom4([4]byte{10, 98, 0, 1})
	key := func(id string) session.Key { return session.Key{NAS: nas, ID: id} }
	// A /48 of its own per run (ULA space, from the prefix): runs sharing a store never meet.
	h := fnv.New64a()
	h.Write([]byte(prefix))
	sum := h.Sum64()
	base := [16]byte{0xfd, byte(sum >> 32), byte(sum >> 24), byte(sum >> 16), byte(sum >> 8), byte(sum)}
	// in gives the address of base with the low 80 bits s (groups 4 to 8): in("1100::1").
	in := func(s string) netip.Addr {
		b := netip.MustParseAddr("0:0:0:" + s).As16()
		copy(b[:6], base[:6])
		return netip.AddrFrom16(b)
	}
	pfx := func(s string, bits int) netip.Prefix { return netip.PrefixFrom(in(s), bits) }
	apply := func(t *testing.T, kind session.Kind, id string, at time.Time, f func(*session.Session)) {
		t.Helper()
		u := &session.Update{Kind: kind, Session: session.Session{Key: key(id), UserName: prefix + "-" + id, LastSeen: at}}
		if kind == session.KindStart {
			u.Session.StartTime = at
		}
		if f != nil {
			f(&u.Session)
		}
		if _, err := st.Apply(c, u, session.WriteOptions{}); err != nil {
			t.Fatalf("%s %s: %v", kind, id, err)
		}
	}
	want := func(t *testing.T, q netip.Prefix, id string) {
		t.Helper()
		s, err := st.ByIPv6(c, q)
		if id == "" {
			if !errors.Is(err, session.ErrNotFound) {
				t.Fatalf("ByIPv6 %s = %+v, %v; want ErrNotFound", q, s, err)
			}
			return
		}
		if err != nil || s.Key != key(id) {
			t.Fatalf("ByIPv6 %s = %+v, %v; want session %s", q, s, err, id)
		}
	}
	addr := func(s string) netip.Prefix { return netip.PrefixFrom(in(s), 128) }

	delegated := pfx("1100::", 56)
	framed := pfx("a0::", 64)
	apply(t, session.KindStart, "pd", T0, func(s *session.Session) {
		s.DelegatedIPv6Prefix = delegated
		s.FramedIPv6Prefix = framed
		s.FramedIPv6Address = in("a0::1")
		s.FramedInterfaceID = "0011:22ff:fe33:4455"
		s.NASIPv6Address = netip.MustParseAddr("2001:db8:ffff::1")
		s.FramedIP = v4
	})
	// An Interim carrying none of them keeps them.
	apply(t, session.KindInterim, "pd", T0.Add(time.Minute), func(s *session.Session) { s.SessionTime = 60 })
	got, err := st.Get(c, key("pd"))
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.DelegatedIPv6Prefix != delegated || got.FramedIPv6Prefix != framed || got.FramedIPv6Address != in("a0::1") ||
		got.FramedInterfaceID != "0011:22ff:fe33:4455" || got.NASIPv6Address != netip.MustParseAddr("2001:db8:ffff::1") {
		t.Fatalf("IPv6 fields not kept: %+v", got)
	}
	if s, err := st.ByFramedIP(c, v4); err != nil || s.Key != key("pd") {
		t.Fatalf("ByFramedIP of the dual-stack session = %+v, %v", s, err)
	}
	// A session holding the whole /48 (nested claims: the longest wins).
	apply(t, session.KindStart, "wide", T0, func(s *session.Session) { s.DelegatedIPv6Prefix = pfx("0::", 48) })

	want(t, addr("1100::1"), "pd")     // inside the delegated /56
	want(t, addr("11ab:cd::1"), "pd")  // its last /64s too
	want(t, delegated, "pd")           // the prefix itself
	want(t, pfx("1140::", 60), "pd")   // a prefix inside it
	want(t, addr("a0::1"), "pd")       // the framed address
	want(t, addr("a0::ffff"), "pd")    // the framed /64
	want(t, pfx("1000::", 52), "wide") // wider than pd's /56: only the /48 covers it
	want(t, addr("1200::1"), "wide")   // outside pd's prefixes, inside the /48
	want(t, pfx("0::", 48), "wide")
	other := netip.MustParsePrefix("2001:db8:ffff:ffff::1/128") // no claim covers it
	want(t, other, "")

	// Two sessions claiming one prefix (the Stop of the first was lost): the one seen last.
	apply(t, session.KindStart, "old", T0, func(s *session.Session) { s.DelegatedIPv6Prefix = pfx("2200::", 56) })
	apply(t, session.KindStart, "new", T0.Add(time.Hour), func(s *session.Session) { s.DelegatedIPv6Prefix = pfx("2200::", 56) })
	want(t, addr("2200::9"), "new")
	apply(t, session.KindStop, "new", T0.Add(2*time.Hour), nil)
	want(t, addr("2200::9"), "old")

	// A Stop frees the claims: the next longest answers, then nothing.
	apply(t, session.KindStop, "pd", T0.Add(2*time.Minute), nil)
	want(t, addr("1100::1"), "wide")
	want(t, addr("a0::1"), "wide")
	apply(t, session.KindStop, "wide", T0.Add(2*time.Minute), nil)
	want(t, addr("1100::1"), "")
	h2, err := st.History(c, prefix+"-pd", 0)
	if err != nil || len(h2) != 1 || h2[0].DelegatedIPv6Prefix != delegated || h2[0].NASIPv6Address != netip.MustParseAddr("2001:db8:ffff::1") {
		t.Fatalf("History = %+v, %v; want the closed session with its IPv6 fields", h2, err)
	}
}

// RunNodes is the node registry's contract (session.NodeRegistry): a registered node is found
// by its name with what it registered, a refresh replaces it, an unknown one is ErrNotFound;
// two nodes sharing a Diameter identity stay apart. Names are prefixed by prefix.
func RunNodes(t *testing.T, reg session.NodeRegistry, prefix string) {
	c := context.Background()
	host := "pcrf.dc1.example.net"
	a, b := prefix+"-policing-a", prefix+"-policing-b" // two pods of one data center
	if _, err := reg.LookupNode(c, a); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("unregistered node: %v, want ErrNotFound", err)
	}
	n := session.Node{Name: a, Host: host, DC: "dc1", AdminURL: "http://10.0.0.1:9812"}
	if err := reg.RegisterNode(c, n, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterNode(c, session.Node{Name: b, Host: host, DC: "dc1", AdminURL: "http://10.0.0.9:9812"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	got, err := reg.LookupNode(c, a)
	if err != nil || got.AdminURL != n.AdminURL || got.DC != "dc1" || got.Host != host || got.Name != a || got.Updated.IsZero() {
		t.Fatalf("LookupNode = %+v, %v; want %+v with its update time", got, err, n)
	}
	n.AdminURL = "http://10.0.0.2:9812" // the pod came back with another IP
	if err := reg.RegisterNode(c, n, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, err := reg.LookupNode(c, a); err != nil || got.AdminURL != n.AdminURL {
		t.Fatalf("after a refresh: %+v, %v; want %s", got, err, n.AdminURL)
	}
	if got, err := reg.LookupNode(c, b); err != nil || got.AdminURL != "http://10.0.0.9:9812" {
		t.Fatalf("the other node of the identity: %+v, %v", got, err)
	}
}

// RunSQN is the AKA sequence numbers' contract (session.SQNCounter): the first is the floor,
// each next one more, a floor ahead moves the counter past it (resynchronisation), one behind
// does not move it back, and concurrent callers get distinct values. Subscribers are
// prefixed by prefix.
func RunSQN(t *testing.T, c session.SQNCounter, prefix string) {
	ctx := context.Background()
	sub := prefix + "-001010000000001"
	next := func(floor uint64) uint64 {
		t.Helper()
		n, err := c.NextSQN(ctx, sub, floor)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := next(33); n != 33 {
		t.Fatalf("first SQN = %d, want the floor 33", n)
	}
	if n := next(33); n != 34 {
		t.Fatalf("second SQN = %d, want 34", n)
	}
	if n := next(1000); n != 1000 {
		t.Fatalf("after a resynchronisation to 999: %d, want 1000", n)
	}
	if n := next(1); n != 1001 {
		t.Fatalf("a floor behind: %d, want 1001", n)
	}
	if n, err := c.NextSQN(ctx, prefix+"-other", 7); err != nil || n != 7 {
		t.Fatalf("another subscriber: %d, %v; want its own floor 7", n, err)
	}
	const workers, each = 4, 10
	got := make(chan uint64, workers*each)
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for range each {
				n, err := c.NextSQN(ctx, sub, 1)
				if err != nil {
					errs <- err
					return
				}
				got <- n
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(got)
	seen := map[uint64]bool{}
	for n := range got {
		if n <= 1001 || n > 1001+workers*each || seen[n] {
			t.Fatalf("concurrent SQN %d: repeated or out of 1002..%d", n, 1001+workers*each)
		}
		seen[n] = true
	}
}
