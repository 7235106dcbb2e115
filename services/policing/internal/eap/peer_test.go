package eap

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"strings"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2869"

	"github.com/openaaa/openaaa/internal/eappeer"
)

// peerPKI is a CA, a server certificate for "eap.test" and a client certificate for alice,
// as the server's and the peer's TLS configurations.
func peerPKI(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	issue := func(cn string, serial int64, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, ca bool) (*x509.Certificate, *ecdsa.PrivateKey, tls.Certificate) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true, IsCA: ca,
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
		if !ca {
			tmpl.DNSNames = []string{cn}
		}
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c, key, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	ca, caKey, _ := issue("Peer test CA", 1, nil, nil, true)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	_, _, srv := issue("eap.test", 2, ca, caKey, false)
	_, _, alice := issue("alice", 3, ca, caKey, false)
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{srv}, ClientCAs: pool},
		&tls.Config{RootCAs: pool, ServerName: "eap.test", Certificates: []tls.Certificate{alice}}
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
// 1.3 (offered first, or reached by a Nak), PEAP-MSCHAPv2, and a wrong PEAP password.
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
