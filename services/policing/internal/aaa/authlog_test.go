package aaa

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"layeh.com/radius"
	"layeh.com/radius/rfc2865"

	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// fakeAuthLogger records auth records; gate, when set, holds every write until closed.
type fakeAuthLogger struct {
	mu   sync.Mutex
	recs []session.AuthRecord
	gate chan struct{}
	err  error
}

func (f *fakeAuthLogger) LogAuth(ctx context.Context, r session.AuthRecord) error {
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.recs = append(f.recs, r)
	return nil
}

func (f *fakeAuthLogger) records() []session.AuthRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]session.AuthRecord(nil), f.recs...)
}

func dropped(reason string) float64 {
	return testutil.ToFloat64(testMetrics.authLogDropped.WithLabelValues(reason))
}

func TestAuthLogWritesEveryDecisionAfterTheReply(t *testing.T) {
	src := &fakeSource{subs: map[string]*subscriber.Subscriber{
		"alice": {Username: "alice", Password: "wonderland"},
	}}
	fl := &fakeAuthLogger{gate: make(chan struct{})} // the store is stuck: replies must not wait
	h := authHandler(src)
	h.AuthLog = NewAuthLog(fl, AuthLogOptions{Queue: 16, Workers: 2, Metrics: testMetrics})
	pap := func(user, pass string) func(p *radius.Packet) {
		return func(p *radius.Packet) {
			if user != "" {
				rfc2865.UserName_SetString(p, user)
			}
			_ = rfc2865.UserPassword_SetString(p, pass)
			rfc2865.CallingStationID_SetString(p, "aa-bb-cc")
		}
	}
	for _, c := range []struct{ user, pass string }{{"alice", "wonderland"}, {"alice", "nope"}, {"mallory", "x"}, {"", "x"}} {
		w := &recWriter{}
		start := time.Now()
		h.ServeRADIUS(w, newRequest(radius.CodeAccessRequest, pap(c.user, c.pass)))
		if len(w.replies) != 1 {
			t.Fatalf("%s: %d replies", c.user, len(w.replies))
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Fatalf("the reply waited %v for the auth log", d)
		}
	}
	close(fl.gate)
	if err := h.AuthLog.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs := fl.records()
	if len(recs) != 3 { // no record without a User-Name (the log is partitioned by user)
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	byResult := map[string]int{}
	for _, r := range recs {
		byResult[r.Result]++
		if r.UserName == "" || r.NAS != "192.0.2.9" || r.CallingStationID != "aa-bb-cc" || !r.At.Equal(received) {
			t.Fatalf("record %+v", r)
		}
		if r.Result == "reject" && r.Reason == "" {
			t.Fatalf("reject without a reason: %+v", r)
		}
	}
	if byResult["accept"] != 1 || byResult["reject"] != 2 {
		t.Fatalf("results %v", byResult)
	}
}

func TestAuthLogDropsAndCountsWhenFull(t *testing.T) {
	fl := &fakeAuthLogger{gate: make(chan struct{})}
	a := NewAuthLog(fl, AuthLogOptions{Queue: 4, Workers: 1, Metrics: testMetrics})
	full := dropped("full")
	ok := 0
	start := time.Now()
	for range 100 {
		if a.Log(session.AuthRecord{UserName: "u"}) {
			ok++
		}
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Fatalf("Log blocked: %v for 100 records", d)
	}
	// One record may be held by the worker, four wait in the queue.
	if ok < 4 || ok > 5 {
		t.Fatalf("%d records queued, want 4 or 5", ok)
	}
	if got := dropped("full") - full; got != float64(100-ok) {
		t.Fatalf("dropped{full} delta %v, want %d", got, 100-ok)
	}
	close(fl.gate)
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(fl.records()); n != ok {
		t.Fatalf("%d written after Close, want every queued one (%d)", n, ok)
	}
	closed := dropped("closed")
	if a.Log(session.AuthRecord{UserName: "u"}) {
		t.Fatal("Log after Close accepted a record")
	}
	if dropped("closed")-closed != 1 {
		t.Fatal("a record after Close was not counted")
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal("second Close:", err)
	}
}

func TestAuthLogCloseIsBounded(t *testing.T) {
	fl := &fakeAuthLogger{gate: make(chan struct{})} // never opens: the store hangs
	a := NewAuthLog(fl, AuthLogOptions{Queue: 10, Workers: 1, Timeout: 100 * time.Millisecond, Metrics: testMetrics})
	for range 10 {
		a.Log(session.AuthRecord{UserName: "u"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := a.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v, want the deadline", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Close took %v", d)
	}
}

func TestAuthLogStoreErrorCounted(t *testing.T) {
	fl := &fakeAuthLogger{err: errors.New("cassandra down")}
	a := NewAuthLog(fl, AuthLogOptions{Metrics: testMetrics})
	before := dropped("error")
	a.Log(session.AuthRecord{UserName: "u"})
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if dropped("error")-before != 1 {
		t.Fatal("a failed write was not counted")
	}
}
