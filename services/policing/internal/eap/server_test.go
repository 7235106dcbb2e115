package eap

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/md5"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"io"
	"log/slog"
	"math/big"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2869"

	"github.com/openaaa/openaaa/internal/eaptls"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

type subs map[string]*subscriber.Subscriber

// testMetrics are the metrics of the servers these tests build, on a registry of their own:
// tests read their differences.
var testMetrics = NewMetrics(metrics.With(prometheus.NewRegistry()))

func (s subs) Lookup(_ context.Context, user string) (*subscriber.Subscriber, error) {
	if sub, ok := s[user]; ok {
		return sub, nil
	}
	return nil, subscriber.ErrNotFound
}

// selfSigned is a server certificate for the TLS methods' tests.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "eap.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

func testServer(t *testing.T, methods ...byte) *Server {
	t.Helper()
	return tlsServer(t, selfSigned(t), methods...)
}

// tlsServer is a server with the certificate set cfg.
func tlsServer(t *testing.T, cfg *tls.Config, methods ...byte) *Server {
	t.Helper()
	s := New(Options{Metrics: testMetrics, Methods: methods, NodeID: "node-a", MaxConversations: 100, Timeout: 30 * time.Second,
		RoundTimeout: 5 * time.Second, TLS: func() *tls.Config { return cfg }, TLSMaxVersion: tls.VersionTLS13,
		TLSIdentity: "commonName", Subscribers: subs{"alice": {Username: "alice", Password: "alicepw"}},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(s.Close)
	return s
}

// accessRequest is an Access-Request carrying eap (split into EAP-Messages) and state.
func accessRequest(eap []byte, state []byte) *radius.Packet {
	p := radius.New(radius.CodeAccessRequest, []byte("secret"))
	_ = rfc2865.UserName_SetString(p, "alice")
	for len(eap) > 0 {
		n := min(len(eap), maxAttr)
		p.Add(rfc2869.EAPMessage_Type, radius.Attribute(eap[:n]))
		eap = eap[n:]
	}
	if state != nil {
		p.Add(rfc2865.State_Type, state)
	}
	return p
}

func response(id, typ byte, data []byte) []byte {
	b := request(id, typ, data)
	b[0] = CodeResponse
	return b
}

func identity(s *Server, t *testing.T, name string) Result {
	t.Helper()
	r := s.Handle(context.Background(), accessRequest(response(7, TypeIdentity, []byte(name)), nil))
	if !r.Challenge {
		t.Fatalf("identity: no challenge (%s)", r.Reason)
	}
	return r
}

func TestMD5Conversation(t *testing.T) {
	s := testServer(t, TypeMD5)
	r := identity(s, t, "alice")
	req, err := Parse(r.EAP)
	if err != nil || req.Code != CodeRequest || req.Type != TypeMD5 || req.ID != 8 || r.Timeout != 30*time.Second {
		t.Fatalf("challenge %+v (%v), timeout %v", req, err, r.Timeout)
	}
	if node, ok := StateNode(r.State); !ok || node != "node-a" {
		t.Fatalf("State names %q (%v)", node, ok)
	}
	h := md5.New()
	h.Write([]byte{req.ID})
	h.Write([]byte("alicepw"))
	h.Write(req.Data[1:17])
	res := s.Handle(context.Background(), accessRequest(response(req.ID, TypeMD5, append([]byte{16}, h.Sum(nil)...)), r.State))
	if !res.Accept || res.Subscriber.Username != "alice" || !bytes.Equal(res.EAP, []byte{CodeSuccess, req.ID, 0, 4}) {
		t.Fatalf("not accepted: %+v", res)
	}
	// The State was used: a replay names nothing.
	replay := s.Handle(context.Background(), accessRequest(response(req.ID, TypeMD5, append([]byte{16}, h.Sum(nil)...)), r.State))
	if replay.Accept || replay.Reason != ReasonUnknownState {
		t.Fatalf("replayed State: %+v", replay)
	}
}

func TestNak(t *testing.T) {
	s := testServer(t, TypePEAP, TypeTTLS, TypeMD5)
	r := identity(s, t, "alice")
	if p, _ := Parse(r.EAP); p.Type != TypePEAP {
		t.Fatalf("first proposal %d, want PEAP", p.Type)
	}
	// The peer wants MD5 or TLS: MD5 is the first of ours it names.
	r = s.Handle(context.Background(), accessRequest(response(r.EAP[1], TypeNak, []byte{TypeTLS, TypeMD5}), r.State))
	if p, _ := Parse(r.EAP); !r.Challenge || p.Type != TypeMD5 {
		t.Fatalf("after Nak: %+v", r)
	}
	r2 := identity(s, t, "alice")
	r2 = s.Handle(context.Background(), accessRequest(response(r2.EAP[1], TypeNak, []byte{TypeTLS}), r2.State))
	if r2.Challenge || r2.Reason != ReasonNoMethod {
		t.Fatalf("Nak with nothing in common: %+v", r2)
	}
}

// Bad input ends the conversation with EAP-Failure, counted by reason; never a panic.
func TestRejects(t *testing.T) {
	s := testServer(t, TypeMD5, TypeTLS)
	bad := func(name string, want Reason, req func() *radius.Packet) {
		t.Run(name, func(t *testing.T) {
			before := testutil.ToFloat64(testMetrics.rejects.WithLabelValues(string(want)))
			r := s.Handle(context.Background(), req())
			if r.Challenge || r.Accept || r.Reason != want || len(r.EAP) != 4 || r.EAP[0] != CodeFailure {
				t.Fatalf("got %+v, want a failure for %s", r, want)
			}
			if got := testutil.ToFloat64(testMetrics.rejects.WithLabelValues(string(want))); got != before+1 {
				t.Fatalf("rejects{%s} %v, want %v", want, got, before+1)
			}
		})
	}
	bad("length beyond the packet", ReasonMalformed, func() *radius.Packet {
		b := response(1, TypeIdentity, []byte("alice"))
		b[3] += 10
		return accessRequest(b, nil)
	})
	bad("length short of the packet", ReasonMalformed, func() *radius.Packet {
		return accessRequest(append(response(1, TypeIdentity, []byte("alice")), 0), nil)
	})
	bad("a Request from the peer", ReasonMalformed, func() *radius.Packet {
		return accessRequest(request(1, TypeIdentity, []byte("alice")), nil)
	})
	bad("an empty EAP-Message", ReasonMalformed, func() *radius.Packet {
		p := accessRequest(response(1, TypeIdentity, nil), nil)
		p.Add(rfc2869.EAPMessage_Type, radius.Attribute{})
		return p
	})
	bad("no State after the Identity", ReasonNoState, func() *radius.Packet {
		return accessRequest(response(1, TypeMD5, make([]byte, 17)), nil)
	})
	bad("unknown State", ReasonUnknownState, func() *radius.Packet {
		return accessRequest(response(1, TypeMD5, make([]byte, 17)), []byte(newState("node-a", stateLocal)))
	})
	bad("wrong Identifier", ReasonBadIdentifier, func() *radius.Packet {
		r := identity(s, t, "alice")
		return accessRequest(response(r.EAP[1]+1, TypeMD5, make([]byte, 17)), r.State)
	})
	bad("another method than proposed", ReasonUnexpected, func() *radius.Packet {
		r := identity(s, t, "alice")
		return accessRequest(response(r.EAP[1], TypeTLS, []byte{0}), r.State)
	})
	bad("MD5 value of the wrong size", ReasonMalformed, func() *radius.Packet {
		r := identity(s, t, "alice")
		return accessRequest(response(r.EAP[1], TypeMD5, []byte{15, 1, 2}), r.State)
	})
	bad("unknown user", ReasonUnknownUser, func() *radius.Packet {
		r := identity(s, t, "mallory")
		return accessRequest(response(r.EAP[1], TypeMD5, append([]byte{16}, make([]byte, 16)...)), r.State)
	})
}

// tlsStart starts an EAP-TLS conversation and returns the State and Identifier of its Start.
func tlsStart(t *testing.T, s *Server) ([]byte, byte) {
	t.Helper()
	r := identity(s, t, "alice")
	p, _ := Parse(r.EAP)
	if p.Type != TypeTLS || !bytes.Equal(p.Data, []byte{flagStart}) {
		t.Fatalf("no EAP-TLS Start: %+v", p)
	}
	return r.State, p.ID
}

func tlsData(flags byte, total int, data []byte) []byte {
	b := []byte{flags}
	if flags&flagLength != 0 {
		b = binary.BigEndian.AppendUint32(b, uint32(total))
	}
	return append(b, data...)
}

func TestTLSFragments(t *testing.T) {
	s := testServer(t, TypeTLS)
	cases := []struct {
		name  string
		steps [][]byte // the peer's fragments; all but the last are acknowledged
	}{
		{"More without Length on the first", [][]byte{tlsData(flagMore, 0, []byte{22, 3, 1})}},
		{"Length beyond the bound", [][]byte{tlsData(flagLength|flagMore, maxMessage+1, []byte{22})}},
		{"fragments beyond the Length", [][]byte{tlsData(flagLength|flagMore, 4, []byte{22, 3, 1}), tlsData(0, 0, []byte{0, 9})}},
		{"fragments short of the Length", [][]byte{tlsData(flagLength|flagMore, 10, []byte{22, 3, 1}), tlsData(0, 0, []byte{0, 9})}},
		{"an empty fragment with More", [][]byte{tlsData(flagLength|flagMore, 10, []byte{22, 3, 1}), tlsData(flagMore, 0, nil)}},
		{"no Flags octet", [][]byte{{}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state, id := tlsStart(t, s)
			var r Result
			for i, f := range c.steps {
				r = s.Handle(context.Background(), accessRequest(response(id, TypeTLS, f), state))
				if i < len(c.steps)-1 {
					p, _ := Parse(r.EAP)
					if !r.Challenge || !bytes.Equal(p.Data, []byte{0}) {
						t.Fatalf("fragment %d not acknowledged: %+v", i, r)
					}
					state, id = r.State, p.ID
				}
			}
			if r.Challenge || r.Accept || (r.Reason != ReasonBadFragment && r.Reason != ReasonMalformed) {
				t.Fatalf("got %+v, want a failure", r)
			}
		})
	}
	// A ClientHello that is not one fails the handshake, not the server.
	state, id := tlsStart(t, s)
	r := s.Handle(context.Background(), accessRequest(response(id, TypeTLS, tlsData(0, 0, []byte("GET / HTTP/1.1\r\n\r\n"))), state))
	if r.Reason != ReasonTLS {
		t.Fatalf("garbage handshake: %+v", r)
	}
}

// A handshake that takes longer than RoundTimeout (here: a certificate callback that blocks)
// releases the worker with tls_timeout, and its goroutine ends once released.
func TestTLSRoundTimeout(t *testing.T) {
	release := make(chan struct{})
	cfg := selfSigned(t)
	cert := cfg.Certificates[0]
	cfg.Certificates = nil
	cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		<-release
		return &cert, nil
	}
	s := New(Options{Metrics: testMetrics, Methods: []byte{TypePEAP}, NodeID: "n", MaxConversations: 10, Timeout: 30 * time.Second,
		RoundTimeout: 100 * time.Millisecond, TLS: func() *tls.Config { return cfg }, Subscribers: subs{},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer s.Close()
	m := &tlsMethod{srv: s, typ: TypePEAP, inner: &peapInner{srv: s}}
	if _, err := m.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hello := clientHello(t)
	start := time.Now()
	o := m.step(context.Background(), 0, tlsData(0, 0, hello))
	if o.reason != ReasonTimeout || time.Since(start) > 10*time.Second {
		t.Fatalf("outcome %+v after %v", o, time.Since(start))
	}
	m.close()
	close(release)
	select {
	case <-m.eng.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the handshake goroutine did not end")
	}
}

// clientHello is a real ClientHello, captured from crypto/tls.
func clientHello(t *testing.T) []byte {
	t.Helper()
	c := eaptls.NewClient(&tls.Config{InsecureSkipVerify: true})
	defer c.Close()
	hello, _, err := c.Handshake(nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return hello
}

func TestAttributesFragmentEAP(t *testing.T) {
	eap := request(3, TypeTLS, bytes.Repeat([]byte{0xAB}, 600))
	req := radius.New(radius.CodeAccessRequest, []byte("secret"))
	attrs, err := Result{Challenge: true, EAP: eap, State: []byte("s"), Timeout: 30 * time.Second}.Attributes(req)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	p := &radius.Packet{Attributes: attrs}
	for _, a := range attrs {
		if a.Type == rfc2869.EAPMessage_Type {
			sizes = append(sizes, len(a.Attribute))
		}
	}
	if len(sizes) != 3 || sizes[0] != 253 || sizes[1] != 253 || sizes[2] != len(eap)-506 {
		t.Fatalf("EAP-Message sizes %v", sizes)
	}
	if got, err := fromRADIUS(p); err != nil || !bytes.Equal(got, eap) {
		t.Fatalf("reassembled %d octets (%v)", len(got), err)
	}
	if rfc2865.SessionTimeout_Get(p) != 30 || string(rfc2865.State_Get(p)) != "s" {
		t.Fatal("no Session-Timeout or State")
	}
}

func TestConversationsBoundedAndExpired(t *testing.T) {
	s := New(Options{Metrics: testMetrics, Methods: []byte{TypeMD5}, NodeID: "n", MaxConversations: 2, Timeout: 50 * time.Millisecond,
		RoundTimeout: time.Second, Subscribers: subs{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer s.Close()
	first := identity(s, t, "a")
	identity(s, t, "b")
	if r := s.Handle(context.Background(), accessRequest(response(1, TypeIdentity, []byte("c")), nil)); r.Reason != ReasonFull {
		t.Fatalf("third conversation: %+v", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(testMetrics.conversations) != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := testutil.ToFloat64(testMetrics.conversations); n != 0 {
		t.Fatalf("%v conversations left after their timeout", n)
	}
	if r := s.Handle(context.Background(), accessRequest(response(first.EAP[1], TypeMD5, make([]byte, 17)), first.State)); r.Reason != ReasonUnknownState {
		t.Fatalf("expired conversation: %+v", r)
	}
	identity(s, t, "c") // room again
}

func TestStateNode(t *testing.T) {
	a, b := newState("dc1-node-7", stateLocal), newState("dc1-node-7", stateShared)
	if a == b {
		t.Fatal("two States alike")
	}
	if n, ok := StateNode([]byte(a)); !ok || n != "dc1-node-7" {
		t.Fatalf("StateNode %q %v", n, ok)
	}
	if n, ok := StateNode([]byte(b)); !ok || n != "dc1-node-7" || !sharedState([]byte(b)) || sharedState([]byte(a)) {
		t.Fatalf("shared StateNode %q %v", n, ok)
	}
	for _, bad := range []string{"", "OA", a[:len(a)-1], "XX" + a[2:]} {
		if _, ok := StateNode([]byte(bad)); ok {
			t.Fatalf("StateNode accepted %q", bad)
		}
	}
}

// Random bytes in every round of every method end in a Result, never a panic.
func TestRandomRounds(t *testing.T) {
	s := testServer(t, TypeTLS, TypePEAP, TypeTTLS, TypeMD5)
	buf := make([]byte, 64)
	for i := range 300 {
		r := identity(s, t, "alice")
		typ := []byte{TypeTLS, TypePEAP, TypeTTLS, TypeMD5}[i%4]
		if typ != TypeTLS {
			r = s.Handle(context.Background(), accessRequest(response(r.EAP[1], TypeNak, []byte{typ}), r.State))
		}
		for r.Challenge {
			n, _ := rand.Read(buf[:1+i%63])
			r = s.Handle(context.Background(), accessRequest(response(r.EAP[1], typ, buf[:n]), r.State))
		}
		if r.Accept {
			t.Fatalf("random bytes accepted: %+v", r)
		}
	}
}

// The tunnels' inner parsers take any plaintext: PEAP's inner Responses at every stage, TTLS's
// AVPs (and what appendAVP writes parses back).
func TestInnerRandom(t *testing.T) {
	s := testServer(t, TypePEAP)
	alice := &subscriber.Subscriber{Username: "alice", Password: "alicepw"}
	buf := make([]byte, 80)
	for i := range 5000 {
		b := buf[:i%len(buf)]
		_, _ = rand.Read(b)
		p := &peapInner{srv: s, stage: i % 4, sub: alice}
		if _, o := p.handle(context.Background(), nil, b); o.done && o.reason == "" {
			t.Fatalf("random inner bytes %x accepted", b)
		}
		_, _ = parseAVPs(b)
	}
	b := appendAVP(appendAVP(nil, 0, avpUserName, []byte("alice")), vendorMicrosoft, avpMSCHAP2Succes, []byte("S=1"))
	m, ok := parseAVPs(b)
	if !ok || string(m[avpKey{0, avpUserName}]) != "alice" || string(m[avpKey{vendorMicrosoft, avpMSCHAP2Succes}]) != "S=1" || len(b)%4 != 0 {
		t.Fatalf("AVPs %x: %v %v", b, m, ok)
	}
}

func TestCertIdentity(t *testing.T) {
	c := &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}, DNSNames: []string{"ap1.example"}}
	if certIdentity(c, "commonName") != "alice" || certIdentity(c, "subjectAltName") != "ap1.example" {
		t.Fatal("CN or DNS SAN")
	}
	c.EmailAddresses = []string{"alice@example.net"}
	if certIdentity(c, "subjectAltName") != "alice@example.net" {
		t.Fatal("the e-mail SAN comes first")
	}
	if certIdentity(&x509.Certificate{}, "subjectAltName") != "" {
		t.Fatal("no SAN")
	}
}
