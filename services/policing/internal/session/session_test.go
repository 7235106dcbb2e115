package session

import (
	"net/netip"
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func upd(kind Kind, at time.Time, f func(s *Session)) *Update {
	u := &Update{Kind: kind, Session: Session{Key: Key{NAS: "bng", ID: "s1"}, LastSeen: at}}
	if kind == KindStart {
		u.Session.StartTime = at
	}
	if f != nil {
		f(&u.Session)
	}
	return u
}

func TestMergeLifecycle(t *testing.T) {
	var s Session
	Merge(&s, upd(KindStart, t0, func(x *Session) {
		x.UserName = "alice"
		x.FramedIP = netip.MustParseAddr("10.0.0.1")
		x.Class = []byte("gold")
		x.NASPort = 7
	}), WriteOptions{}, t0)
	if s.Key != (Key{NAS: "bng", ID: "s1"}) || s.State != Active || !s.StartTime.Equal(t0) || s.Updates != 1 {
		t.Fatalf("after Start: %+v", s)
	}
	Merge(&s, upd(KindInterim, t0.Add(5*time.Minute), func(x *Session) {
		x.SessionTime = 300
		x.InputOctets, x.OutputOctets, x.InputPackets, x.OutputPackets = 100, 200, 3, 4
	}), WriteOptions{}, t0)
	if s.InputOctets != 100 || s.OutputOctets != 200 || s.InputPackets != 3 || s.OutputPackets != 4 || s.SessionTime != 300 {
		t.Fatalf("counters: %+v", s)
	}
	// Fields the message does not carry are kept.
	if s.UserName != "alice" || s.FramedIP != netip.MustParseAddr("10.0.0.1") || string(s.Class) != "gold" || s.NASPort != 7 {
		t.Fatalf("carried fields lost: %+v", s)
	}
	if !s.StartTime.Equal(t0) || !s.LastSeen.Equal(t0.Add(5*time.Minute)) || s.Updates != 2 {
		t.Fatalf("times: start %v last %v updates %d", s.StartTime, s.LastSeen, s.Updates)
	}
	Merge(&s, upd(KindStop, t0.Add(10*time.Minute), func(x *Session) {
		x.SessionTime = 600
		x.InputOctets = 1000
		x.TerminateCause = 1
	}), WriteOptions{}, t0)
	if s.State != Stopped || !s.StopTime.Equal(t0.Add(10*time.Minute)) || s.TerminateCause != 1 || s.InputOctets != 1000 {
		t.Fatalf("after Stop: %+v", s)
	}
	// Output octets not carried by the Stop: kept at the last known value.
	if s.OutputOctets != 200 {
		t.Fatalf("OutputOctets %d", s.OutputOctets)
	}
}

// An old retransmission (lower Acct-Session-Time) never rolls counters or the last-seen
// time back.
func TestMergeOldRetransmission(t *testing.T) {
	var s Session
	Merge(&s, upd(KindInterim, t0.Add(10*time.Minute), func(x *Session) {
		x.SessionTime = 600
		x.InputOctets, x.OutputOctets, x.InputPackets, x.OutputPackets = 1000, 2000, 30, 40
	}), WriteOptions{}, t0)
	Merge(&s, upd(KindInterim, t0.Add(5*time.Minute), func(x *Session) {
		x.SessionTime = 300
		x.InputOctets, x.OutputOctets, x.InputPackets, x.OutputPackets = 500, 900, 10, 20
	}), WriteOptions{}, t0)
	if s.SessionTime != 600 || s.InputOctets != 1000 || s.OutputOctets != 2000 || s.InputPackets != 30 || s.OutputPackets != 40 {
		t.Fatalf("counters rolled back: %+v", s)
	}
	if !s.LastSeen.Equal(t0.Add(10 * time.Minute)) {
		t.Fatalf("LastSeen rolled back to %v", s.LastSeen)
	}
	// Same session time, a counter lower (NAS quirk): each counter keeps its maximum.
	Merge(&s, upd(KindInterim, t0.Add(10*time.Minute), func(x *Session) {
		x.SessionTime = 600
		x.InputOctets, x.OutputOctets = 999, 2500
	}), WriteOptions{}, t0)
	if s.InputOctets != 1000 || s.OutputOctets != 2500 {
		t.Fatalf("max per counter: in %d out %d", s.InputOctets, s.OutputOctets)
	}
}

// Without a Start the start time is estimated from the reported session time; a Start
// arriving later sets it exactly.
func TestMergeStartTimeEstimate(t *testing.T) {
	var s Session
	Merge(&s, upd(KindInterim, t0.Add(time.Hour), func(x *Session) { x.SessionTime = 1800 }), WriteOptions{}, t0)
	if want := t0.Add(30 * time.Minute); !s.StartTime.Equal(want) {
		t.Fatalf("estimated start %v, want %v", s.StartTime, want)
	}
	Merge(&s, upd(KindStart, t0.Add(29*time.Minute), nil), WriteOptions{}, t0)
	if !s.StartTime.Equal(t0.Add(29 * time.Minute)) {
		t.Fatalf("Start did not set start time: %v", s.StartTime)
	}
	// A message with no time uses now.
	var n Session
	Merge(&n, &Update{Kind: KindInterim, Session: Session{Key: Key{NAS: "b", ID: "x"}}}, WriteOptions{}, t0)
	if !n.LastSeen.Equal(t0) || !n.StartTime.Equal(t0) {
		t.Fatalf("now not used: %+v", n)
	}
}

func TestMergeKeepsKeyAndCopiesClass(t *testing.T) {
	s := Session{Key: Key{NAS: "a", ID: "1"}}
	class := []byte("gold")
	u := upd(KindInterim, t0, func(x *Session) {
		x.Key = Key{NAS: "other", ID: "2"}
		x.Class = class
		x.InterimInterval = 300
	})
	Merge(&s, u, WriteOptions{DisconnectReason: "quota"}, t0)
	if s.Key != (Key{NAS: "a", ID: "1"}) {
		t.Fatalf("key of an existing row changed: %+v", s.Key)
	}
	class[0] = 'X'
	if string(s.Class) != "gold" {
		t.Fatal("Class aliases the update's buffer")
	}
	if s.DisconnectReason != "quota" || s.InterimInterval != 300 {
		t.Fatalf("%+v", s)
	}
	// A later message without the mark keeps it.
	Merge(&s, upd(KindInterim, t0.Add(time.Minute), nil), WriteOptions{}, t0)
	if s.DisconnectReason != "quota" {
		t.Fatal("DisconnectReason cleared by a message that does not carry it")
	}
	// An Interim after a Stop in the same row reopens it (the store decides whether to apply it).
	Merge(&s, upd(KindStop, t0.Add(2*time.Minute), nil), WriteOptions{}, t0)
	Merge(&s, upd(KindInterim, t0.Add(3*time.Minute), nil), WriteOptions{}, t0)
	if s.State != Active {
		t.Fatalf("state %v", s.State)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindStart: "start", KindInterim: "interim", KindStop: "stop", 0: "unknown"} {
		if k.String() != want {
			t.Errorf("%d: %q", k, k.String())
		}
	}
}

// A change the policy server pushed (a Gx RAR's throttle) is merged but not counted among the
// client's requests: Updates is what a CCR's CC-Request-Number is checked against.
func TestMergePushNotCounted(t *testing.T) {
	var s Session
	Merge(&s, upd(KindStart, t0, nil), WriteOptions{}, t0)
	u := upd(KindInterim, t0.Add(time.Minute), nil)
	Merge(&s, u, WriteOptions{Push: true, DisconnectReason: "quota"}, t0)
	if s.Updates != 1 || s.DisconnectReason != "quota" || !s.LastSeen.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after a pushed change: updates %d, reason %q, last seen %s", s.Updates, s.DisconnectReason, s.LastSeen)
	}
}

// GxThrottled is set once and kept; a session marked the old way (DisconnectReason "quota" on
// a Gx session) reads as throttled, a RADIUS session's reason stays its own.
func TestGxThrottled(t *testing.T) {
	var s Session
	Merge(&s, upd(KindStart, t0, func(x *Session) { x.Key.NAS = GxNAS; x.GxThrottled = true }), WriteOptions{}, t0)
	Merge(&s, upd(KindInterim, t0.Add(time.Minute), nil), WriteOptions{}, t0)
	if !s.GxThrottled {
		t.Fatal("GxThrottled cleared by an update that does not carry it")
	}
	old := Session{Key: Key{NAS: GxNAS, ID: "1"}, DisconnectReason: "quota"}
	ReadLegacy(&old)
	if !old.GxThrottled || old.DisconnectReason != "" {
		t.Fatalf("a Gx session marked the old way: %+v", old)
	}
	radius := Session{Key: Key{NAS: "bng", ID: "1"}, DisconnectReason: "quota"}
	ReadLegacy(&radius)
	if radius.GxThrottled || radius.DisconnectReason != "quota" {
		t.Fatalf("a RADIUS session: %+v", radius)
	}
}
