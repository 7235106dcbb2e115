package diameter

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The DPR as RFC 6733 numbers it, written from the RFC's text rather than our constants.
const (
	rfcDPRCode          = 282 // §5.4.1 Disconnect-Peer-Request
	codeOriginHost      = 264 // §6.3
	codeOriginRealm     = 296 // §6.4
	codeDisconnectCause = 273 // §5.4.3
	rfcRebooting        = 0   // §5.4.3 REBOOTING: "a scheduled reboot is imminent"; the peer MAY reconnect
	rfcRequestBit       = 0x80
)

// readDPR reads the next message from the peer's side of c and fails unless it is the DPR
// RFC 6733 §5.4.1 describes from ourHost@ourRealm with Disconnect-Cause REBOOTING.
func readDPR(t *testing.T, c net.Conn, within time.Duration) *diam.Message {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(within))
	defer func() { _ = c.SetReadDeadline(time.Now().Add(10 * time.Second)) }()
	m, err := diam.ReadMessage(c, dict.Default)
	if err != nil {
		t.Fatalf("no DPR within %v of Shutdown: %v", within, err)
	}
	h := m.Header
	if h.CommandCode != rfcDPRCode || h.CommandFlags&rfcRequestBit == 0 || h.ApplicationID != 0 {
		t.Fatalf("got command %d flags %#x application %d, want a DPR (282, R, application 0): %s", h.CommandCode, h.CommandFlags, h.ApplicationID, m)
	}
	want := map[uint32]string{codeOriginHost: ourHost, codeOriginRealm: ourRealm}
	for code, v := range want {
		a, err := m.FindAVP(code, 0)
		if err != nil || String(a) != v {
			t.Errorf("DPR AVP %d = %v, want %q", code, a, v)
		}
	}
	cause, err := m.FindAVP(codeDisconnectCause, 0)
	if err != nil || cause.Flags&mandatoryBit == 0 {
		t.Fatalf("DPR without a mandatory Disconnect-Cause: %s", m)
	}
	if v, ok := cause.Data.(datatype.Enumerated); !ok || v != rfcRebooting {
		t.Errorf("Disconnect-Cause %v, want REBOOTING (0)", cause.Data)
	}
	return m
}

// answerDPR sends the peer's DPA (2001) to dpr.
func answerDPR(t *testing.T, c net.Conn, dpr *diam.Message) {
	t.Helper()
	dpa := diam.NewMessage(rfcDPRCode, 0, 0, dpr.Header.HopByHopID, dpr.Header.EndToEndID, dict.Default)
	dpa.NewAVP(avp.ResultCode, avp.Mbit, 0, datatype.Unsigned32(rfcSuccess))
	dpa.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity("pcef.test"))
	dpa.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity("test"))
	if _, err := dpa.WriteTo(c); err != nil {
		t.Fatal(err)
	}
}

// RFC 6733 §5.4: a node that shuts down tells each peer whose CER it accepted with a
// Disconnect-Peer-Request, Disconnect-Cause REBOOTING (§5.4.3: the peer may reconnect — to
// another node behind the same address), so that a PCEF moves its traffic at once instead of
// at its watchdog's timeout (during a rolling update or a data center's drain). Requests the
// peer sent before (in flight) or across the DPR are still answered; no request of the
// node's (a RAR) follows its DPR; the peer's DPA ends the wait, and the node then closes the
// connection (§5.4: the DPA's receiver initiates the transport disconnect).
func TestShutdownSendsDPR(t *testing.T) {
	app := stuckApp{started: make(chan struct{}, 1), release: make(chan struct{}), held: "s;held"}
	released := false
	release := func() {
		if !released {
			released = true
			close(app.release)
		}
	}
	defer release()
	s := startServerWith(t, Options{DPRTimeout: 20 * time.Second, Apps: map[uint32]Handler{GxApplicationID: app}})
	c := dialAccepted(t, s) // recorded: tshark decodes the DPR and the DPA too
	held := sessionRequest("s;held")
	if _, err := held.WriteTo(c); err != nil {
		t.Fatal(err)
	}
	<-app.started
	dprsSent := testutil.ToFloat64(s.opt.Metrics.sent.WithLabelValues("DPR"))
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()

	dpr := readDPR(t, c, 3*time.Second)
	if got := testutil.ToFloat64(s.opt.Metrics.sent.WithLabelValues("DPR")) - dprsSent; got != 1 {
		t.Errorf("openaaa_diameter_requests_sent_total{command=\"DPR\"} rose by %v, want 1", got)
	}
	// §5.4: the DPR's sender sends no further request on the connection.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := s.Request(ctx, "pcef.test", request(258, GxApplicationID, ourHost)); !errors.Is(err, ErrNoPeer) {
		t.Errorf("a RAR after the DPR: %v, want ErrNoPeer (none may follow a DPR)", err)
	}
	// A request the peer sent before it read the DPR is served.
	if code := resultCode(t, exchange(t, c, sessionRequest("s;crossed"))); code != rfcSuccess {
		t.Errorf("a request that crossed the DPR: %d, want 2001", code)
	}
	answerDPR(t, c, dpr)
	answered := time.Now()
	release()
	a, err := diam.ReadMessage(c, dict.Default)
	if err != nil {
		t.Fatalf("the request in flight before Shutdown got no answer: %v", err)
	}
	if a.Header.HopByHopID != held.Header.HopByHopID || resultCode(t, a) != rfcSuccess {
		t.Fatalf("got %s, want the 2001 answer of the request in flight", a)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return 10 s after the DPA (diameter.dprTimeout is 20 s here)")
	}
	if took := time.Since(answered); took > 5*time.Second {
		t.Errorf("Shutdown returned %v after the DPA: the DPA did not end the wait", took)
	}
	wantClosed(t, c)
}

// A peer that does not answer the DPR holds a shutdown no longer than Options.DPRTimeout
// (diameter.dprTimeout): the node closes the connection then.
func TestShutdownDPRTimeout(t *testing.T) {
	s := startServerWith(t, Options{DPRTimeout: 300 * time.Millisecond, Apps: map[uint32]Handler{GxApplicationID: echoApp{calls: new(atomic.Int64)}}})
	c := dialAccepted(t, s)
	start := time.Now()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("Shutdown returned after %v", took.Round(time.Millisecond))
	if took < 250*time.Millisecond || took > 3*time.Second {
		t.Errorf("Shutdown returned after %v, want about the DPR timeout (300ms)", took)
	}
	readDPR(t, c, time.Second)
	wantClosed(t, c)
}
