package diameter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"
)

// Inline (diameter.dispatch), a request served holds up only the requests of its own
// connection: another peer's are answered meanwhile, and the held connection's next request,
// read with it, is answered after it, in order, once it is released.
func TestInlineHoldsOnlyItsConnection(t *testing.T) {
	app := stuckApp{started: make(chan struct{}, 1), release: make(chan struct{}), held: "s;held"}
	released := false
	defer func() {
		if !released {
			close(app.release)
		}
	}()
	s := startServerWith(t, Options{Inline: true, Apps: map[uint32]Handler{GxApplicationID: app}})
	held, other := dialAccepted(t, s), dialAccepted(t, s)
	first := request(272, GxApplicationID, "pcef.test", diam.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String("s;held")))
	next := request(272, GxApplicationID, "pcef.test", diam.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String("s;next")))
	for _, m := range []*diam.Message{first, next} {
		if _, err := m.WriteTo(held); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-app.started:
	case <-time.After(5 * time.Second):
		t.Fatal("the held request was not served")
	}
	_ = other.SetDeadline(time.Now().Add(3 * time.Second))
	m := request(272, GxApplicationID, "pcef.test", diam.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String("s;other")))
	if code := resultCode(t, exchange(t, other, m)); code != diam.Success {
		t.Fatalf("the other peer's answer %d", code)
	}
	_ = held.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := diam.ReadMessage(held, dict.Default); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the held connection answered while its request was held (%v)", err)
	}
	close(app.release)
	released = true
	_ = held.SetReadDeadline(time.Now().Add(5 * time.Second))
	for _, want := range []*diam.Message{first, next} {
		a, err := diam.ReadMessage(held, dict.Default)
		if err != nil {
			t.Fatal(err)
		}
		if a.Header.HopByHopID != want.Header.HopByHopID {
			t.Fatalf("answer to hop-by-hop %d, want %d: out of order", a.Header.HopByHopID, want.Header.HopByHopID)
		}
	}
}

// leanEcho answers a lean request from its bytes: its Session-Id (the head's) and its
// Origin-Host (read from the AVPs), so that an answer shows what its own request held.
// With waitOn set, it keeps the context of the request of that Session-Id, after waiting on
// it (Done), and every later request counts in live whether that context has come back to
// life (its head reused for the request being served).
type leanEcho struct {
	waitOn string
	mu     *sync.Mutex
	kept   *context.Context
	live   *int
}

func (leanEcho) ServeDiameter(r *Request) (*diam.Message, uint32) {
	return Identity{Host: "pcrf.test", Realm: "test"}.Answer(r.Message, diam.UnableToComply), diam.UnableToComply
}

func (e leanEcho) ServeLean(r *Request, avps AVPs) (Answer, uint32, bool) {
	sid := String(SessionIDAVP(r.Message))
	e.mu.Lock()
	if *e.kept != nil && (*e.kept).Err() == nil {
		*e.live++
	}
	e.mu.Unlock()
	if sid == e.waitOn {
		<-r.Context().Done() // only once released: the request is answered first
		e.mu.Lock()
		*e.kept = r.Context()
		e.mu.Unlock()
	}
	var w Writer
	Identity{Host: "pcrf.test", Realm: "test"}.WriteAnswer(&w, r.Message, diam.Success)
	var a RawAVP
	for l := avps; l.Next(&a); {
		if a.Code == avp.OriginHost {
			w.String(avp.ProductName, 0, 0, sid+"|"+string(a.Data))
		}
	}
	return Answer{Wire: w.Bytes()}, diam.Success, true
}

// Inline, a lean request's head is reused for the connection's next request and its frame is
// the reader's buffer: requests read in one burst are each answered from their own bytes, and
// a request whose handler kept its context is not given a reused head (the context stays
// ended once its request is answered).
func TestInlineLeanBurst(t *testing.T) {
	var (
		mu   sync.Mutex
		kept context.Context
		live int
	)
	app := leanEcho{waitOn: "s;waits", mu: &mu, kept: &kept, live: &live}
	s := startServerWith(t, Options{Inline: true, RequestTimeout: 200 * time.Millisecond,
		Apps: map[uint32]Handler{GxApplicationID: app}})
	c := dialAccepted(t, s)
	const n = 40
	var burst []byte
	sids := make([]string, n)
	for i := range n {
		sids[i] = fmt.Sprintf("pcef.test;%d;%x", i, i*7919) // lengths differ: stale bytes would show
		if i == n/2 {
			sids[i] = "s;waits"
		}
		burst = append(burst, rawRequest(uint32(1000+i), append([][]byte{sessionIDAVP(sids[i])}, originAVPs()...)...)...)
	}
	if _, err := c.Write(burst); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		a, err := diam.ReadMessage(c, dict.Default)
		if err != nil {
			t.Fatal(err)
		}
		if a.Header.HopByHopID != uint32(1000+i) {
			t.Fatalf("answer %d: hop-by-hop %d", i, a.Header.HopByHopID)
		}
		if code := resultCode(t, a); code != diam.Success {
			t.Fatalf("answer %d: %d", i, code)
		}
		got, err := a.FindAVP(avp.ProductName, 0)
		if err != nil {
			t.Fatalf("answer %d: %s", i, a)
		}
		if want := sids[i] + "|pcef.test"; string(got.Data.(datatype.UTF8String)) != want {
			t.Fatalf("answer %d read %q, want %q", i, got.Data, want)
		}
		wantSessionID(t, a, sids[i])
	}
	mu.Lock()
	defer mu.Unlock()
	if kept == nil {
		t.Fatal("the waiting request's context was not kept")
	}
	if live > 0 {
		t.Fatalf("a kept request context was live again while %d later requests were served", live)
	}
}
