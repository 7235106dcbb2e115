package radiusd

import (
	"net"
	"strings"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// BlastRADIUS defences (CVE-2024-3596) and the RFC 3579 rules around them.

// Message-Authenticator is the first attribute of every reply, as FreeRADIUS ≥ 3.2.5 sends
// it: nothing the client chose (Proxy-State) precedes it. Every reply verifies.
func TestMessageAuthenticatorFirst(t *testing.T) {
	bothDispatches(t, func(t *testing.T, inline bool) {
		for _, code := range []radius.Code{radius.CodeAccessAccept, radius.CodeAccessReject, radius.CodeAccessChallenge} {
			f := start(t, Options{Inline: inline, Workers: 2}, clientTable(t, loopbackClient()),
				newRecorder(code), newRecorder(radius.CodeAccountingResponse))
			r := roundTripRaw(t, dial(t, f.auth), request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true, proxyStates: []string{"hop-1"}}))
			assertMAFirst(t, code.String(), r)
			if r[0] != byte(code) {
				t.Fatalf("reply code %d, want %v", r[0], code)
			}
		}
		f := start(t, Options{Inline: inline, Workers: 2}, clientTable(t, loopbackClient()),
			newRecorder(radius.CodeAccessAccept), newRecorder(radius.CodeAccountingResponse))
		assertMAFirst(t, "Accounting-Response", roundTripRaw(t, dial(t, f.acct), request(t, reqOpt{code: radius.CodeAccountingRequest, proxyStates: []string{"hop-1"}})))
		for _, port := range []*net.UDPConn{f.auth, f.acct} {
			assertMAFirst(t, "Status-Server reply", roundTripRaw(t, dial(t, port), request(t, reqOpt{code: radius.CodeStatusServer, withMA: true})))
		}
	})
}

func assertMAFirst(t *testing.T, what string, r []byte) {
	t.Helper()
	if len(r) < radiusx.HeaderLen+18 || r[20] != radiusx.TypeMessageAuthenticator || r[21] != 18 {
		t.Fatalf("%s: first attribute is % x, want Message-Authenticator (80, length 18)", what, r[20:min(len(r), 24)])
	}
}

// limitProxyState (default on): an Access-Request with Proxy-State and no
// Message-Authenticator, from a client that does not require one, is the shape of the
// BlastRADIUS attack and is dropped. With Message-Authenticator, on accounting, or with
// the limit off, Proxy-State is answered and echoed.
func TestLimitProxyState(t *testing.T) {
	lax := laxClient()
	auth := newRecorder(radius.CodeAccessAccept)
	f := start(t, Options{Workers: 2}, clientTable(t, lax), auth, newRecorder(radius.CodeAccountingResponse))
	mustDrop(t, f.auth, request(t, reqOpt{code: radius.CodeAccessRequest, proxyStates: []string{"attacker"}}), metrics.DropProxyStateWithoutMA, auth)
	// Without Proxy-State the same client is answered (it does not require the attribute).
	roundTrip(t, dial(t, f.auth), request(t, reqOpt{code: radius.CodeAccessRequest}))
	// With Message-Authenticator, Proxy-State is fine.
	roundTrip(t, dial(t, f.auth), request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true, proxyStates: []string{"hop-1"}}))
	// Accounting is protected by its request authenticator.
	roundTrip(t, dial(t, f.acct), request(t, reqOpt{code: radius.CodeAccountingRequest, proxyStates: []string{"hop-1"}}))

	// limitProxyState: false answers it, as FreeRADIUS with limit_proxy_state = no.
	no := false
	lax.LimitProxyState = &no
	g := start(t, Options{Workers: 2}, clientTable(t, lax), newRecorder(radius.CodeAccessAccept), newRecorder(radius.CodeAccountingResponse))
	p := roundTrip(t, dial(t, g.auth), request(t, reqOpt{code: radius.CodeAccessRequest, proxyStates: []string{"hop-1"}}))
	if ps, _ := p.Lookup(radiusx.TypeProxyState); string(ps) != "hop-1" {
		t.Fatalf("Proxy-State %q not echoed", ps)
	}
}

// RFC 3579 §3.2: an Access-Request with EAP-Message and without Message-Authenticator is
// silently discarded, even from a client that does not require the attribute.
func TestEAPWithoutMessageAuthenticatorDiscarded(t *testing.T) {
	auth := newRecorder(radius.CodeAccessChallenge)
	f := start(t, Options{Workers: 2}, clientTable(t, laxClient()), auth, newRecorder(radius.CodeAccountingResponse))
	eap := radius.Attributes{{Type: typeEAPMessage, Attribute: radius.Attribute{2, 1, 0, 6, 1, 'a'}}}
	mustDrop(t, f.auth, request(t, reqOpt{code: radius.CodeAccessRequest, attrs: eap}), metrics.DropMissingMA, auth)
	roundTrip(t, dial(t, f.auth), request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true, attrs: eap}))
}

// laxClient is the loopback client that does not require Message-Authenticator.
func laxClient() config.Client {
	no := false
	c := loopbackClient()
	c.RequireMessageAuthenticator = &no
	return c
}

// mustDrop sends b to port and checks that it is dropped for reason: counted, unanswered,
// never seen by the handler h.
func mustDrop(t *testing.T, port *net.UDPConn, b []byte, reason string, h *recorder) {
	t.Helper()
	calls, before := h.calls.Load(), dropped(reason)
	conn := dial(t, port)
	if _, err := conn.Write(b); err != nil {
		t.Fatal(err)
	}
	waitDrop(t, reason, before, 1)
	expectNoReply(t, conn)
	if n := h.calls.Load() - calls; n != 0 {
		t.Fatalf("handler saw the dropped request (%d calls)", n)
	}
}

// bigReply answers with more than fits in 4,096 octets.
type bigReply struct{ err chan error }

func (h bigReply) ServeRADIUS(w ResponseWriter, r *Request) {
	reply := r.Response(radius.CodeAccessAccept)
	for i := 0; i < 20; i++ {
		rfc2865.ReplyMessage_AddString(reply, strings.Repeat("x", 250))
	}
	h.err <- w.Write(reply)
}

// A reply that would exceed 4,096 octets is not sent: the write fails, and the drop is
// counted under its own reason (and logged with the client).
func TestReplyTooLarge(t *testing.T) {
	h := bigReply{err: make(chan error, 1)}
	f := start(t, Options{Workers: 1}, clientTable(t, loopbackClient()), h, newRecorder(radius.CodeAccountingResponse))
	before := dropped(metrics.DropReplyTooLarge)
	conn := dial(t, f.auth)
	_, _ = conn.Write(request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true}))
	select {
	case err := <-h.err:
		if err == nil {
			t.Fatal("a reply of more than 4096 octets was written")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler not called")
	}
	waitDrop(t, metrics.DropReplyTooLarge, before, 1)
	expectNoReply(t, conn)
}

// The node-wide and per-client keys reach the client table.
func TestClientLimitProxyStateFromConfig(t *testing.T) {
	off := false
	c := config.Client{Name: "x", Address: "192.0.2.1", LimitProxyState: &off}
	if tab := clientTable(t, c, config.Client{Name: "y", Address: "192.0.2.2"}); len(tab.All()) != 2 ||
		tab.All()[0].LimitProxyState || !tab.All()[1].LimitProxyState {
		t.Fatal("limitProxyState not carried into the client table (x off, y default on)")
	}
}
