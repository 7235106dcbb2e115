package eap

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"

	"layeh.com/radius"
	"layeh.com/radius/rfc2869"

	"github.com/openaaa/openaaa/internal/eappeer"
	"github.com/openaaa/openaaa/internal/testpki"
)

// peerPKI is a CA, a server certificate for "eap.test" and a client certificate for alice,
// as the server's and the peer's TLS configurations.
func peerPKI(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	ca := testpki.New(t, "Peer test CA")
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{ca.TLS(t, "eap.test", 2, "eap.test")}, ClientCAs: ca.Pool()},
		&tls.Config{RootCAs: ca.Pool(), ServerName: "eap.test", Certificates: []tls.Certificate{ca.TLS(t, "alice", 3)}}
}

// converse runs the peer against the server through RADIUS packets (EAP-Messages split and
// joined, State echoed), as aaa-loadgen does over UDP: the final Result and the rounds.
func converse(t *testing.T, s *Server, p *eappeer.Peer) (Result, int) {
	t.Helper()
	msg, state := p.Start(), []byte(nil)
	for rounds := 1; rounds < 50; rounds++ {
		req := accessRequest(msg, state)
		r := s.Handle(context.Background(), req)
		if !r.Challenge {
			return r, rounds
		}
		attrs, err := r.Attributes(req)
		if err != nil {
			t.Fatal(err)
		}
		reply := &radius.Packet{Attributes: attrs}
		var eap []byte
		for _, a := range reply.Attributes {
			if a.Type == rfc2869.EAPMessage_Type {
				eap = append(eap, a.Attribute...)
			}
		}
		state = r.State
		if msg, err = p.Step(eap); err != nil {
			t.Fatalf("round %d: %v", rounds, err)
		}
	}
	t.Fatal("no end after 50 rounds")
	return Result{}, 0
}

// aaa-loadgen's EAP peer (internal/eappeer) against this server: EAP-TLS over TLS 1.2 and
// 1.3 (offered first, or reached by a Nak), PEAP-MSCHAPv2 over TLS 1.3 and 1.2, and a wrong
// PEAP password.
func TestLoadgenPeer(t *testing.T) {
	srvTLS, cliTLS := peerPKI(t)
	tls12 := cliTLS.Clone()
	tls12.MaxVersion = tls.VersionTLS12
	cases := []struct {
		name    string
		methods []byte
		cfg     eappeer.Config
		reason  Reason
	}{
		{"tls13", []byte{TypeTLS}, eappeer.Config{Method: TypeTLS, Identity: "alice", TLS: cliTLS}, ""},
		{"tls12 after a nak", []byte{TypePEAP, TypeTLS}, eappeer.Config{Method: TypeTLS, Identity: "alice", TLS: tls12}, ""},
		{"peap", []byte{TypePEAP}, eappeer.Config{Method: TypePEAP, Identity: "alice", User: "alice", Password: "alicepw", TLS: cliTLS}, ""},
		{"peap tls12", []byte{TypePEAP}, eappeer.Config{Method: TypePEAP, Identity: "alice", User: "alice", Password: "alicepw", TLS: tls12}, ""},
		{"peap wrong password", []byte{TypePEAP}, eappeer.Config{Method: TypePEAP, Identity: "alice", User: "alice", Password: "nope", TLS: cliTLS}, ReasonBadPassword},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			p := eappeer.New(tc.cfg)
			defer p.Close()
			r, rounds := converse(t, tlsServer(t, srvTLS, tc.methods...), p)
			if tc.reason != "" {
				if r.Accept || r.Reason != tc.reason {
					t.Fatalf("want a reject for %s, got %+v", tc.reason, r)
				}
				return
			}
			if !r.Accept || len(r.MSK) != 64 || r.Subscriber == nil || r.Subscriber.Username != "alice" {
				t.Fatalf("not accepted after %d rounds: %+v", rounds, r)
			}
		})
	}
}
