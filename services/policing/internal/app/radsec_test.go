package app

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/internal/testpki"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
)

// peerSerial connects to the RadSec port with a client certificate and returns the serial
// number of the server certificate presented.
func peerSerial(t *testing.T, addr string, ca []byte, cert, key []byte) (string, error) {
	t.Helper()
	pair, err := tls.X509KeyPair(cert, key)
	apptest.Check(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, ServerName: "127.0.0.1"})
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

func TestRadSecThroughFreeRADIUSProxy(t *testing.T) {
	needFreeRADIUS(t)
	dir := t.TempDir()
	pki := testpki.New(t, "openaaa test CA")
	srvCert, srvKey := pki.Issue(t, "policing", 100)
	cliCert, cliKey := pki.Issue(t, "freeradius-proxy", 200)
	for name, data := range map[string][]byte{"tls.crt": srvCert, "tls.key": srvKey, "ca.crt": pki.PEM,
		"client.crt": cliCert, "client.key": cliKey} {
		apptest.Check(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
	radsecAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	n := edgeNode(t, dir, `
log: {level: debug, format: text}
radius:
  authAddress: "127.0.0.1:0"
  acctAddress: "127.0.0.1:0"
  workers: 8
  radsec: {address: "`+radsecAddr+`", certFile: {{dir}}/tls.crt, keyFile: {{dir}}/tls.key, caFile: {{dir}}/ca.crt}
admin: {address: "127.0.0.1:0"}
reload: {interval: 200ms}
clients:
  - {name: lo, address: 127.0.0.1, secretFile: {{dir}}/secret}
subscribers: {source: file, file: {{dir}}/subs.yaml}
`, edgeSubs)

	// FreeRADIUS takes radclient's UDP and proxies it over TLS to our RadSec port.
	fr := newFreeRADIUS(t, "radsec", "--role", "radsec-proxy", "--secret", radclientSecret, "--home", radsecAddr,
		"--tls-cert", filepath.Join(dir, "client.crt"), "--tls-key", filepath.Join(dir, "client.key"), "--tls-ca", filepath.Join(dir, "ca.crt"))
	auth := func(user, pass string) string {
		return apptest.RadclientPAP(t, fr.addr(), radclientSecret, user, pass, 1, 2)
	}
	out := auth("alice", "wonderland")
	if !strings.Contains(out, "Received Access-Accept") || !strings.Contains(out, "Framed-IP-Address = 10.9.0.1") {
		t.Fatalf("radclient → FreeRADIUS → RadSec → policing: no Access-Accept with the profile:\n%s", out)
	}
	if out := auth("alice", "wrong"); !strings.Contains(out, "Received Access-Reject") {
		t.Fatalf("wrong password over RadSec not rejected:\n%s", out)
	}
	// Accounting over the same TLS home server lands in the session store.
	out = apptest.Radclient(t, fmt.Sprintf("127.0.0.1:%d", fr.port+1), "acct", radclientSecret, 1, 2, acctLinesFor("Start", "RS-1", "alice")...)
	if !strings.Contains(out, "Received Accounting-Response") {
		t.Fatalf("accounting over RadSec:\n%s", out)
	}
	if s, err := n.Store.ByUser(t.Context(), "alice"); err != nil || len(s) != 1 || s[0].ID != "RS-1" {
		t.Fatalf("session from RadSec accounting: %+v %v", s, err)
	}

	// Rotation: new certificate and key files are picked up without restart, by the
	// hot-reload watcher (reload.interval).
	if s, err := peerSerial(t, radsecAddr, pki.PEM, cliCert, cliKey); err != nil || s != "100" {
		t.Fatalf("serial before rotation: %q %v", s, err)
	}
	newCert, newKey := pki.Issue(t, "policing", 101)
	apptest.WriteAtomically(t, filepath.Join(dir, "tls.key"), newKey)
	apptest.WriteAtomically(t, filepath.Join(dir, "tls.crt"), newCert)
	testenv.Eventually(t, 20*time.Second, "rotated certificate served", func() bool {
		s, err := peerSerial(t, radsecAddr, pki.PEM, cliCert, cliKey)
		return err == nil && s == "101"
	})
	// A broken file is rejected and the rotated certificate stays in force.
	apptest.WriteAtomically(t, filepath.Join(dir, "tls.crt"), []byte("not a certificate"))
	testenv.Eventually(t, 20*time.Second, "broken certificate rejected", func() bool {
		return Metric(t, n, `openaaa_config_reloads_total{kind="certificates",result="rejected"}`) >= 1
	})
	if s, err := peerSerial(t, radsecAddr, pki.PEM, cliCert, cliKey); err != nil || s != "101" {
		t.Fatalf("after a broken file: serial %q %v, want 101", s, err)
	}
	// FreeRADIUS, restarted so that it opens a new TLS connection, still gets through.
	apptest.WriteAtomically(t, filepath.Join(dir, "tls.crt"), newCert)
	fr.stop()
	fr.start()
	if out := auth("alice", "wonderland"); !strings.Contains(out, "Received Access-Accept") {
		t.Fatalf("after rotation: no Access-Accept through FreeRADIUS:\n%s", out)
	}
}

// radius.radsec.handshakeTimeout bounds the TLS handshake: a NAS that connects to the RadSec
// port and says nothing is let go after the configured 300 ms (it was a hard-coded 10 s).
func TestRadSecHandshakeTimeoutFromConfig(t *testing.T) {
	dir := serverPKI(t, "policing")
	n := startNode(t, "radius.radsec.address=127.0.0.1:0", "radius.radsec.handshakeTimeout=300ms",
		"radius.radsec.certFile="+filepath.Join(dir, "server.pem"), "radius.radsec.keyFile="+filepath.Join(dir, "server.key"),
		"radius.radsec.caFile="+filepath.Join(dir, "ca.pem"))
	wantSilentPeerLetGo(t, n.Addr("radius.radsec.address"), 300*time.Millisecond)
}
