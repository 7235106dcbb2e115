package aaa

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"
	"layeh.com/radius/rfc2869"

	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/store/embedded"
)

var (
	lineIP = net.IPv4(10, 1, 0, 1)
	nasA   = net.IPv4(198, 51, 100, 7)
	nasB   = net.IPv4(198, 51, 100, 8)
)

func supersedeHandler(t *testing.T) (*Acct, *embedded.Store) {
	t.Helper()
	st, err := embedded.Open(embedded.Options{HistorySize: 100, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	h := acctHandler(st, &fakeSource{})
	h.SupersedeStale = true
	return h, st
}

// send serves one accounting request of the line (framed IP lineIP) and requires its answer.
func send(t *testing.T, h *Acct, status rfc2866.AcctStatusType, id, user string, nasIP net.IP, at time.Time, more ...func(*radius.Packet)) {
	t.Helper()
	w := &recWriter{}
	h.ServeRADIUS(w, acctRequest(status, id, func(p *radius.Packet) {
		rfc2865.UserName_SetString(p, user)
		_ = rfc2865.NASIPAddress_Set(p, nasIP)
		_ = rfc2865.FramedIPAddress_Set(p, lineIP)
		_ = rfc2869.EventTimestamp_Set(p, at)
		for _, f := range more {
			f(p)
		}
	}))
	if len(w.replies) != 1 {
		t.Fatalf("%v of %s not acknowledged", status, id)
	}
}

func TestSupersedeStale(t *testing.T) {
	start := rfc2866.AcctStatusType_Value_Start
	cases := []struct {
		name  string
		oldAt time.Time // the old session's start; the new one starts at received
		user  string    // of the new session
		nas   net.IP    // of the new session
		off   bool
		want  bool
	}{
		{"same NAS, user and address", received.Add(-time.Hour), "alice", nasA, false, true},
		{"another user (the NAS reused the address)", received.Add(-time.Hour), "bob", nasA, false, false},
		{"another NAS (VRF, overlapping pools)", received.Add(-time.Hour), "alice", nasB, false, false},
		{"the old session started later", received.Add(time.Hour), "alice", nasA, false, false},
		{"started in the same second", received, "alice", nasA, false, false},
		{"turned off", received.Add(-time.Hour), "alice", nasA, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, st := supersedeHandler(t)
			h.SupersedeStale = !c.off
			ctx := context.Background()
			before := testutil.ToFloat64(testMetrics.shared.SessionsSuperseded)
			send(t, h, start, "old", "alice", nasA, c.oldAt)
			send(t, h, start, "new", c.user, c.nas, received)
			oldKey := session.Key{NAS: nasA.String(), ID: "old"}
			newKey := session.Key{NAS: c.nas.String(), ID: "new"}
			_, err := st.Get(ctx, oldKey)
			if got := errors.Is(err, session.ErrNotFound); got != c.want {
				t.Fatalf("old session closed: %v, want %v", got, c.want)
			}
			if d := testutil.ToFloat64(testMetrics.shared.SessionsSuperseded) - before; d != map[bool]float64{true: 1}[c.want] {
				t.Fatalf("superseded delta %v", d)
			}
			if !c.want {
				if st.Len() != 2 {
					t.Fatalf("%d active sessions, want 2", st.Len())
				}
				return
			}
			// Gone from every lookup, in the history, and the address is the new session's.
			if st.Len() != 1 {
				t.Fatalf("%d active sessions, want 1", st.Len())
			}
			if s, err := st.ByFramedIP(ctx, netip.MustParseAddr(lineIP.String())); err != nil || s.Key != newKey {
				t.Fatalf("ByFramedIP = %v, %v; want the new session", s, err)
			}
			if got, _ := st.ByUser(ctx, "alice"); len(got) != 1 || got[0].Key != newKey {
				t.Fatalf("ByUser = %v", got)
			}
			if got, _ := st.ByNAS(ctx, nasA.String()); len(got) != 1 || got[0].Key != newKey {
				t.Fatalf("ByNAS = %v", got)
			}
			hist, _ := st.History(ctx, "alice", 0)
			if len(hist) != 1 || hist[0].Key != oldKey || hist[0].State != session.Stopped ||
				!hist[0].StopTime.Equal(received) || hist[0].TerminateCause != 0 {
				t.Fatalf("history = %+v", hist)
			}
			// A late Interim of the superseded session does not bring it back.
			send(t, h, rfc2866.AcctStatusType_Value_InterimUpdate, "old", "alice", nasA, received.Add(time.Minute))
			if _, err := st.Get(ctx, oldKey); !errors.Is(err, session.ErrNotFound) || st.Len() != 1 {
				t.Fatalf("late Interim revived the superseded session: %v, %d active", err, st.Len())
			}
		})
	}
}

// claimStore holds active sessions that may claim one framed IP together, and answers ByUser
// with them.
type claimStore struct {
	fakeStore
	active    []*session.Session
	lookupErr error
	stopErr   error
	startErr  error
	spooled   bool // a Stop is accepted but not applied yet
}

func (s *claimStore) ByUser(_ context.Context, user string) ([]*session.Session, error) {
	if s.lookupErr != nil {
		return nil, s.lookupErr
	}
	var out []*session.Session
	for _, x := range s.active {
		if x.UserName == user {
			c := *x
			out = append(out, &c)
		}
	}
	return out, nil
}

func (s *claimStore) Apply(ctx context.Context, u *session.Update, o session.WriteOptions) (session.Result, error) {
	if u.Kind == session.KindStart && s.startErr != nil {
		return session.Result{}, s.startErr
	}
	if u.Kind == session.KindStop {
		if s.stopErr != nil {
			return session.Result{}, s.stopErr
		}
		if !s.spooled {
			s.active = slices.DeleteFunc(s.active, func(x *session.Session) bool { return x.Key == u.Session.Key })
		}
	}
	return s.fakeStore.Apply(ctx, u, o)
}

func claimant(id string, at time.Time) *session.Session {
	return &session.Session{Key: session.Key{NAS: nasA.String(), ID: id}, UserName: "alice", State: session.Active,
		FramedIP: netip.MustParseAddr(lineIP.String()), StartTime: at, LastSeen: at}
}

// kinds lists the updates a store received, e.g. "stop s2, start new".
func kinds(st *claimStore) []string {
	var out []string
	for _, u := range st.updates {
		out = append(out, u.Kind.String()+" "+u.Session.ID)
	}
	return out
}

// Several stale sessions of the line (each lost its Stop): the Start, once stored, closes
// them all.
func TestSupersedeChain(t *testing.T) {
	st := &claimStore{active: []*session.Session{claimant("s1", received.Add(-2*time.Hour)), claimant("s2", received.Add(-time.Hour))}}
	h := acctHandler(st, &fakeSource{})
	h.SupersedeStale = true
	before := testutil.ToFloat64(testMetrics.shared.SessionsSuperseded)
	send(t, h, rfc2866.AcctStatusType_Value_Start, "new", "alice", nasA, received)
	if got := kinds(st); !slices.Equal(got, []string{"start new", "stop s1", "stop s2"}) {
		t.Fatalf("updates %v", got)
	}
	if d := testutil.ToFloat64(testMetrics.shared.SessionsSuperseded) - before; d != 2 {
		t.Fatalf("superseded delta %v", d)
	}
	if stop := st.updates[1].Session; !stop.LastSeen.Equal(received) || stop.TerminateCause != 0 {
		t.Fatalf("stop %+v: want at the new Start's time, no cause", stop)
	}

	// A store that queues the Stop still shows the session: it is closed once, not again.
	st = &claimStore{active: []*session.Session{claimant("s1", received.Add(-time.Hour))}, spooled: true}
	h.Store = st
	send(t, h, rfc2866.AcctStatusType_Value_Start, "new", "alice", nasA, received)
	if got := kinds(st); !slices.Equal(got, []string{"start new", "stop s1"}) {
		t.Fatalf("spooling store: updates %v", got)
	}
}

// inPlaceOnly is a store that matches in place: the copying lookup must not be used.
type inPlaceOnly struct {
	*embedded.Store
	t *testing.T
}

func (w inPlaceOnly) ByFramedIP(context.Context, netip.Addr) (*session.Session, error) {
	w.t.Error("ByFramedIP called: the store's MatchFramedIP was not used")
	return nil, session.ErrNotFound
}

// A store that matches in place closes every stale session of the line at once.
func TestSupersedeChainInPlace(t *testing.T) {
	h, st := supersedeHandler(t)
	ctx := context.Background()
	for i, at := range []time.Time{received.Add(-2 * time.Hour), received.Add(-time.Hour)} {
		s := claimant(fmt.Sprintf("s%d", i+1), at)
		if _, err := st.Apply(ctx, &session.Update{Kind: session.KindStart, Session: *s}, session.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Another user's session on the same address (another VRF) is not the line's.
	other := claimant("bob1", received.Add(-time.Hour))
	other.UserName = "bob"
	if _, err := st.Apply(ctx, &session.Update{Kind: session.KindStart, Session: *other}, session.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.Store = inPlaceOnly{Store: st, t: t}
	before := testutil.ToFloat64(testMetrics.shared.SessionsSuperseded)
	send(t, h, rfc2866.AcctStatusType_Value_Start, "new", "alice", nasA, received)
	if d := testutil.ToFloat64(testMetrics.shared.SessionsSuperseded) - before; d != 2 {
		t.Fatalf("superseded delta %v, want 2", d)
	}
	for _, id := range []string{"s1", "s2"} {
		if _, err := st.Get(ctx, session.Key{NAS: nasA.String(), ID: id}); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("%s still active: %v", id, err)
		}
	}
	for _, id := range []string{"new", "bob1"} {
		if _, err := st.Get(ctx, session.Key{NAS: nasA.String(), ID: id}); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
}

// counting counts the in-place matches asked of the store inside.
type counting struct {
	*embedded.Store
	matches int
}

func (c *counting) MatchFramedIP(ip netip.Addr, max int, match func(*session.Session) bool) []session.Key {
	c.matches++
	return c.Store.MatchFramedIP(ip, max, match)
}

// On a store that says whether an update created its session, only the Start and an Interim
// that created its session (its Start lost) look for stale sessions: the other Interims —
// most messages — cost no lookup.
func TestSupersedeLooksOnlyWhenCreated(t *testing.T) {
	h, st := supersedeHandler(t)
	c := &counting{Store: st}
	h.Store = c
	elapsed := func(d time.Duration) func(*radius.Packet) {
		return func(p *radius.Packet) { _ = rfc2866.AcctSessionTime_Set(p, rfc2866.AcctSessionTime(d/time.Second)) }
	}
	send(t, h, rfc2866.AcctStatusType_Value_Start, "old", "alice", nasA, received.Add(-time.Hour))
	if c.matches != 1 {
		t.Fatalf("Start: %d lookups, want 1", c.matches)
	}
	send(t, h, rfc2866.AcctStatusType_Value_InterimUpdate, "old", "alice", nasA, received.Add(-50*time.Minute), elapsed(10*time.Minute))
	if c.matches != 1 {
		t.Fatalf("Interim of a stored session: %d lookups, want still 1", c.matches)
	}
	// The next session's Start was lost: its first Interim creates it and closes "old".
	send(t, h, rfc2866.AcctStatusType_Value_InterimUpdate, "new", "alice", nasA, received, elapsed(time.Minute))
	if c.matches != 2 {
		t.Fatalf("Interim that created its session: %d lookups, want 2", c.matches)
	}
	ctx := context.Background()
	if _, err := st.Get(ctx, session.Key{NAS: nasA.String(), ID: "old"}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("old still active: %v", err)
	}
	if _, err := st.Get(ctx, session.Key{NAS: nasA.String(), ID: "new"}); err != nil {
		t.Fatalf("new: %v", err)
	}
}

// The supersede step failing does not fail the Start: it is stored and acknowledged, and the
// failure is counted.
func TestSupersedeErrorKeepsStart(t *testing.T) {
	down := errors.New("store down")
	for name, st := range map[string]*claimStore{
		"lookup": {lookupErr: down},
		"stop":   {active: []*session.Session{claimant("s1", received.Add(-time.Hour))}, stopErr: down},
	} {
		t.Run(name, func(t *testing.T) {
			h := acctHandler(st, &fakeSource{})
			h.SupersedeStale = true
			before := testutil.ToFloat64(testMetrics.shared.SessionsSupersedeErrors)
			send(t, h, rfc2866.AcctStatusType_Value_Start, "new", "alice", nasA, received)
			if got := kinds(st); !slices.Equal(got, []string{"start new"}) {
				t.Fatalf("updates %v", got)
			}
			if d := testutil.ToFloat64(testMetrics.shared.SessionsSupersedeErrors) - before; d != 1 {
				t.Fatalf("supersede errors delta %v", d)
			}
		})
	}
}

// Under loss the first message of a session is often an Interim (its Start was shed): it
// supersedes like a Start, and the later Interims of a stored session close nothing.
func TestSupersedeByInterim(t *testing.T) {
	interim := rfc2866.AcctStatusType_Value_InterimUpdate
	sessionTime := func(p *radius.Packet) { _ = rfc2866.AcctSessionTime_Set(p, 60) }
	for _, on := range []bool{true, false} {
		h, st := supersedeHandler(t)
		h.SupersedeStale = on
		ctx := context.Background()
		before := testutil.ToFloat64(testMetrics.shared.SessionsSuperseded)
		send(t, h, rfc2866.AcctStatusType_Value_Start, "old", "alice", nasA, received.Add(-time.Hour))
		send(t, h, interim, "new", "alice", nasA, received, sessionTime) // its Start was lost
		_, err := st.Get(ctx, session.Key{NAS: nasA.String(), ID: "old"})
		if closed := errors.Is(err, session.ErrNotFound); closed != on {
			t.Fatalf("SupersedeStale=%v: old session closed = %v", on, closed)
		}
		if !on {
			continue
		}
		hist, _ := st.History(ctx, "alice", 0)
		if len(hist) != 1 || !hist[0].StopTime.Equal(received.Add(-time.Minute)) {
			t.Fatalf("history %+v: want the old session stopped when the new one started (60 s before its Interim)", hist)
		}
		for i := 2; i < 5; i++ {
			send(t, h, interim, "new", "alice", nasA, received.Add(time.Duration(i)*time.Minute), sessionTime)
		}
		if d := testutil.ToFloat64(testMetrics.shared.SessionsSuperseded) - before; d != 1 || st.Len() != 1 {
			t.Fatalf("superseded %v times, %d active; want 1 and 1", d, st.Len())
		}
	}
}

// The links of a multilink bundle share the bundle's address and Acct-Multi-Session-Id: a
// new link does not end the others.
func TestSupersedeSparesMultilink(t *testing.T) {
	h, st := supersedeHandler(t)
	bundle := func(p *radius.Packet) { _ = rfc2866.AcctMultiSessionID_SetString(p, "bundle-7") }
	send(t, h, rfc2866.AcctStatusType_Value_Start, "link1", "alice", nasA, received.Add(-time.Hour), bundle)
	send(t, h, rfc2866.AcctStatusType_Value_Start, "link2", "alice", nasA, received, bundle)
	if st.Len() != 2 {
		t.Fatalf("%d active sessions, want both links", st.Len())
	}
}

// A late Interim of a superseded session must not close the session that replaced it: with
// Acct-Session-Time its start is known to be the older one; without, it supersedes nothing.
func TestLateInterimDoesNotSupersedeItsSuccessor(t *testing.T) {
	interim := rfc2866.AcctStatusType_Value_InterimUpdate
	for name, more := range map[string][]func(*radius.Packet){
		"with Acct-Session-Time": {func(p *radius.Packet) { _ = rfc2866.AcctSessionTime_Set(p, 3660) }},
		"without":                nil,
	} {
		h, st := supersedeHandler(t)
		send(t, h, rfc2866.AcctStatusType_Value_Start, "old", "alice", nasA, received.Add(-time.Hour))
		send(t, h, rfc2866.AcctStatusType_Value_Start, "new", "alice", nasA, received)
		send(t, h, interim, "old", "alice", nasA, received.Add(time.Minute), more...)
		if _, err := st.Get(context.Background(), session.Key{NAS: nasA.String(), ID: "new"}); err != nil {
			t.Fatalf("%s: the late Interim of the superseded session closed its successor: %v", name, err)
		}
	}
}

// ordered records, in order, the writes a store took, for a store that matches in place.
type ordered struct {
	*embedded.Store
	writes []string
}

func (o *ordered) Apply(ctx context.Context, u *session.Update, opt session.WriteOptions) (session.Result, error) {
	res, err := o.Store.Apply(ctx, u, opt)
	if err == nil {
		o.writes = append(o.writes, u.Kind.String()+" "+u.Session.ID)
	}
	return res, err
}

// Superseding runs after the write, on every store: a Start closes its line's stale sessions
// only once it is stored itself, whether the store matches in place or answers through its
// lookups (it ran before the write on the latter, and for a Start on the former).
func TestSupersedeAfterTheWrite(t *testing.T) {
	start := rfc2866.AcctStatusType_Value_Start
	t.Run("lookups", func(t *testing.T) {
		st := &claimStore{active: []*session.Session{claimant("s1", received.Add(-time.Hour))}}
		h := acctHandler(st, &fakeSource{})
		h.SupersedeStale = true
		send(t, h, start, "new", "alice", nasA, received)
		if got := kinds(st); !slices.Equal(got, []string{"start new", "stop s1"}) {
			t.Fatalf("updates %v, want the Start, then the stale session's Stop", got)
		}
	})
	t.Run("in place", func(t *testing.T) {
		h, emb := supersedeHandler(t)
		st := &ordered{Store: emb}
		h.Store = st
		send(t, h, start, "old", "alice", nasA, received.Add(-time.Hour))
		send(t, h, start, "new", "alice", nasA, received)
		if !slices.Equal(st.writes, []string{"start old", "start new", "stop old"}) {
			t.Fatalf("writes %v, want the new Start, then the stale session's Stop", st.writes)
		}
	})
	// A Start the store refuses is not acknowledged (the NAS sends it again): it has not
	// replaced anything yet, and the line's session stays active.
	t.Run("refused", func(t *testing.T) {
		st := &claimStore{active: []*session.Session{claimant("s1", received.Add(-time.Hour))}, startErr: errors.New("store down")}
		h := acctHandler(st, &fakeSource{})
		h.SupersedeStale = true
		w := &recWriter{}
		h.ServeRADIUS(w, acctRequest(start, "new", func(p *radius.Packet) {
			_ = rfc2865.NASIPAddress_Set(p, nasA)
			_ = rfc2865.FramedIPAddress_Set(p, lineIP)
			_ = rfc2869.EventTimestamp_Set(p, received)
		}))
		if len(w.replies) != 0 {
			t.Fatal("a Start the store refused was acknowledged")
		}
		if got := kinds(st); len(got) != 0 || len(st.active) != 1 {
			t.Fatalf("updates %v, %d active; want none written and s1 still active", got, len(st.active))
		}
	})
}
