package cassandra

import (
	"bytes"
	"fmt"
	"net/netip"
	"reflect"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

func TestHistoryID(t *testing.T) {
	sec := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) // an Event-Timestamp: whole seconds
	rec := func(id string, at time.Time, secs uint32, in uint64) *session.Session {
		return &session.Session{Key: session.Key{NAS: "nas1", ID: id}, LastSeen: at, SessionTime: secs, InputOctets: in}
	}
	a := historyID(session.KindInterim, rec("s1", sec, 60, 1000))
	if b := historyID(session.KindInterim, rec("s1", sec, 60, 1000)); a != b {
		t.Fatalf("a copy of a record has another id: %v vs %v", a, b)
	}
	for name, other := range map[string]gocql.UUID{
		"kind":     historyID(session.KindStop, rec("s1", sec, 60, 1000)),
		"session":  historyID(session.KindInterim, rec("s2", sec, 60, 1000)),
		"counters": historyID(session.KindInterim, rec("s1", sec, 60, 1001)),
		"time":     historyID(session.KindInterim, rec("s1", sec.Add(time.Second), 60, 1000)),
	} {
		if other == a {
			t.Errorf("records that differ in %s share the id %v", name, a)
		}
	}
	// A session's records within one second sort in the order they happened.
	ordered := []gocql.UUID{
		historyID(session.KindStart, rec("s1", sec, 0, 0)),
		historyID(session.KindInterim, rec("s1", sec, 60, 1000)),
		historyID(session.KindInterim, rec("s1", sec, 120, 2000)),
		historyID(session.KindStop, rec("s1", sec, 130, 2100)),
		historyID(session.KindStop, rec("s2", sec, 1<<31, 2100)), // a long session's Stop
		historyID(session.KindStart, rec("s1", sec.Add(time.Second), 0, 0)),
	}
	for i := 1; i < len(ordered); i++ {
		if !ordered[i-1].Time().Before(ordered[i].Time()) {
			t.Errorf("record %d (%v) does not sort before record %d (%v)", i-1, ordered[i-1].Time(), i, ordered[i].Time())
		}
	}
	// The time is the event's (to the UUID's 100 ns) when it has more than whole seconds.
	exact := sec.Add(123456700 * time.Nanosecond)
	if got := historyID(session.KindInterim, rec("s1", exact, 60, 1000)).Time(); !got.Equal(exact) {
		t.Errorf("id time %v, want the event's %v", got, exact)
	}
	if v := a.Version(); v != 1 || a[8]&0xC0 != 0x80 || bytes.Equal(a[10:], make([]byte, 6)) {
		t.Errorf("not a time UUID: %v (version %d)", a, v)
	}
}

func TestHistoryRow(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// The session after a later Interim (session time 180) was applied.
	s := &session.Session{Key: session.Key{NAS: "nas1", ID: "s1"}, UserName: "dave", State: session.Active,
		StartTime: at, LastSeen: at.Add(3 * time.Minute), SessionTime: 180, InputOctets: 3000, OutputOctets: 6000, Updates: 4}
	older := &session.Session{Key: s.Key, LastSeen: at.Add(2 * time.Minute), SessionTime: 120, InputOctets: 2000, OutputOctets: 4000}
	h := historyRow(session.KindInterim, older, s)
	if h.SessionTime != 120 || h.InputOctets != 2000 || h.OutputOctets != 4000 || !h.LastSeen.Equal(older.LastSeen) ||
		h.UserName != "dave" || !h.StartTime.Equal(at) || h.State != session.Active {
		t.Fatalf("an older Interim's row: %+v; want its own counters and time with the session's user and start", h)
	}
	if s.SessionTime != 180 {
		t.Fatal("historyRow changed the session")
	}
	// Accounting-On's Stop carries no counters: the row shows the last known, stopped.
	closed := &session.Session{Key: s.Key, LastSeen: at.Add(4 * time.Minute), TerminateCause: 11}
	h = historyRow(session.KindStop, closed, s)
	if h.SessionTime != 180 || h.InputOctets != 3000 || h.State != session.Stopped ||
		!h.StopTime.Equal(closed.LastSeen) || h.TerminateCause != 11 {
		t.Fatalf("a Stop without counters: %+v", h)
	}
	// A Start replayed after the session's Interims: a Start counts nothing.
	h = historyRow(session.KindStart, &session.Session{Key: s.Key, LastSeen: at}, s)
	if h.SessionTime != 0 || h.InputOctets != 0 || !h.StopTime.IsZero() || h.State != session.Active {
		t.Fatalf("a late Start: %+v", h)
	}
}

// Every field of a session row is compared by sameRow and bound by values: a field added to
// session.Session without a column would be lost silently (writes skipped as "unchanged").
func TestSameRowSeesEveryField(t *testing.T) {
	base := session.Session{}
	typ := reflect.TypeOf(base)
	if n := len(values(&base)); n != len(sessionCols) {
		t.Fatalf("values binds %d columns, sessionCols has %d", n, len(sessionCols))
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Name == "Key" {
			continue
		}
		changed := base
		v := reflect.ValueOf(&changed).Elem().Field(i)
		switch x := v.Addr().Interface().(type) {
		case *string:
			*x = "x"
		case *session.State:
			*x = session.Stopped
		case *uint32:
			*x = 7
		case *uint64:
			*x = 7
		case *[]byte:
			*x = []byte("x")
		case *time.Time:
			*x = time.Unix(1000, 0)
		case *netip.Addr:
			*x = netip.MustParseAddr("2001:db8::1")
		case *netip.Prefix:
			*x = netip.MustParsePrefix("2001:db8::/56")
		case *map[string]uint64:
			*x = map[string]uint64{"mk": 7}
		case *[]string:
			*x = []string{"mk"}
		case *bool:
			*x = true
		default:
			t.Fatalf("field %s: type %s not covered by this test", f.Name, f.Type)
		}
		// Updates counts merges: a copy merged again must not make the row "changed".
		if sameRow(&base, &changed) && f.Name != "Updates" {
			t.Errorf("sameRow does not compare %s", f.Name)
		}
		if fmt.Sprint(values(&base)) == fmt.Sprint(values(&changed)) {
			t.Errorf("values does not bind %s", f.Name)
		}
	}
}
