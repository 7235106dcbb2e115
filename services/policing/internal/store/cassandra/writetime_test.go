package cassandra

import (
	"net/netip"
	"testing"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

func TestWriteTimestamp(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rec := func(k session.Kind, event, received time.Time) *record {
		return &record{Kind: k, Session: session.Session{LastSeen: event}, Received: received}
	}
	us := func(t time.Time) int64 { return t.UnixMicro() }
	for _, c := range []struct {
		name string
		rec  *record
		wt   int64
		want int64
	}{
		{"event time, not arrival", rec(session.KindInterim, at, at.Add(time.Minute)), 0, us(at)},
		{"a NAS clock ahead is capped at arrival", rec(session.KindInterim, at.Add(time.Hour), at), 0, us(at)},
		{"no event time: arrival", rec(session.KindInterim, time.Time{}, at), 0, us(at)},
		{"a Stop after its session's same-second records", rec(session.KindStop, at, at.Add(time.Second)), 0, us(at.Add(stopLead))},
		{"after the row it merged onto", rec(session.KindInterim, at, at), us(at.Add(time.Second)), us(at.Add(time.Second)) + 1},
	} {
		if got := writeTimestamp(c.rec, c.wt); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	// An Interim of the same second, after many +1 µs merge steps, still before the Stop.
	if i, s := writeTimestamp(rec(session.KindInterim, at, at), us(at)+100), writeTimestamp(rec(session.KindStop, at, at), 0); i >= s {
		t.Errorf("Interim %d not before the same-second Stop %d", i, s)
	}
}

func TestHistoryLookups(t *testing.T) {
	at := time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)
	ip := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	row := &session.Session{UserName: "alice", FramedIP: ip("10.0.0.1"), LastSeen: at}
	with := func(f func(*session.Session)) *session.Session { c := *row; f(&c); return &c }
	const all = dayLookups | hourLookup
	for _, c := range []struct {
		name   string
		old, s *session.Session
		at     time.Time
		want   lookupSet
	}{
		{"the session's first record", nil, row, at, all},
		{"the same hour, user and address", row, row, at.Add(-time.Minute), 0},
		{"the hour before", row, row, at.Add(-time.Hour), hourLookup},
		{"the next day", row, row, at.Add(2 * time.Minute), all},
		{"an older record of the day before", row, row, at.Add(-24 * time.Hour), all},
		{"a new address", row, with(func(s *session.Session) { s.FramedIP = ip("10.0.0.9") }), at, all},
		{"a new user", row, with(func(s *session.Session) { s.UserName = "bob" }), at, all},
		{"the day in UTC, not in the event's zone", row, row, at.Add(-time.Minute).In(time.FixedZone("UTC+2", 7200)), 0},
	} {
		if got := historyLookups(c.old, c.s, c.at); got != c.want {
			t.Errorf("%s: %b, want %b", c.name, got, c.want)
		}
	}
}
