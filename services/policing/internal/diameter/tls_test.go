package diameter

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openaaa/openaaa/services/policing/internal/tlsfiles"
)

// tlsServer serves Diameter over TLS with certificates of one test CA; peers pcef.test.
func tlsServer(t *testing.T) (*Server, *testCA, string) {
	t.Helper()
	dir := t.TempDir()
	ca := newTestCA(t, dir)
	ca.issue(t, dir, "pcrf.test", 2)
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	s, err := Listen("127.0.0.1:0", Options{OriginHost: "pcrf.test", OriginRealm: "test",
		Peers: []Peer{{OriginHost: "pcef.test", Network: loopback}},
		Apps:  map[uint32]Handler{GxApplicationID: echoApp{calls: new(atomic.Int64)}},
		TLS: &tlsfiles.Files{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem"),
			CAFile: filepath.Join(dir, "ca.pem")}, TLSAddress: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, ca, dir
}

// dialTLS connects as the holder of certificate name (none: no client certificate).
func dialTLS(t *testing.T, s *Server, ca *testCA, caDir, name string) (*tls.Conn, error) {
	t.Helper()
	roots := x509.NewCertPool()
	pemCA, _ := os.ReadFile(filepath.Join(caDir, "ca.pem"))
	roots.AppendCertsFromPEM(pemCA)
	cfg := &tls.Config{RootCAs: roots, ServerName: "pcrf.test", MinVersion: tls.VersionTLS12}
	if name != "" {
		dir := t.TempDir()
		ca.issue(t, dir, name, time.Now().UnixNano())
		cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.TLSAddr().String(), cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, c.Handshake()
}

// Over TLS, a peer whose certificate names its Origin-Host is accepted; one whose certificate
// names another identity is refused 3010 even though the peer table allows that Origin-Host;
// one without a certificate never gets past the handshake. Each refusal is counted.
func TestTLSPeerIdentity(t *testing.T) {
	s, ca, dir := tlsServer(t)
	c, err := dialTLS(t, s, ca, dir, "pcef.test")
	if err != nil {
		t.Fatal(err)
	}
	if code := resultCode(t, exchange(t, c, cer("pcef.test", GxApplicationID))); code != 2001 {
		t.Fatalf("CEA %d over TLS with a matching certificate, want 2001", code)
	}

	before := testutil.ToFloat64(s.opt.Metrics.peersRefused.WithLabelValues(refusedCertificate))
	c, err = dialTLS(t, s, ca, dir, "other.test")
	if err != nil {
		t.Fatal(err)
	}
	if code := resultCode(t, exchange(t, c, cer("pcef.test", GxApplicationID))); code != ResultUnknownPeer {
		t.Fatalf("CEA %d for another certificate's Origin-Host, want 3010", code)
	}
	if testutil.ToFloat64(s.opt.Metrics.peersRefused.WithLabelValues(refusedCertificate)) != before+1 {
		t.Fatal("certificate refusal not counted")
	}

	hs := testutil.ToFloat64(s.opt.Metrics.peersRefused.WithLabelValues(refusedHandshake))
	if c, err := dialTLS(t, s, ca, dir, ""); err == nil {
		// TLS 1.3: the client's handshake ends before the server has checked; the server's
		// refusal shows on the first read.
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("a peer without a certificate got a connection")
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(s.opt.Metrics.peersRefused.WithLabelValues(refusedHandshake)) != hs+1 {
		if time.Now().After(deadline) {
			t.Fatal("handshake refusal not counted")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
