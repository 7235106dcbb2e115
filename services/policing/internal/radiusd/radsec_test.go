package radiusd

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/internal/config"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
)

type rsCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func rsNewCA(t *testing.T) *rsCA {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &rsCA{c, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (c *rsCA) issue(t *testing.T, cn string) ([]byte, []byte) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalPKCS8PrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb})
}

func rsServer(t *testing.T) (*RadSec, *rsCA, string) {
	dir := t.TempDir()
	c := rsNewCA(t)
	crt, key := c.issue(t, "server")
	for n, b := range map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": c.pem, "secret": []byte("udp-secret")} {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := nas.Build([]config.Client{{Name: "lo", Address: "127.0.0.1", SecretFile: filepath.Join(dir, "secret")}})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Workers: 2, Log: slog.New(slog.DiscardHandler)}, tbl)
	t.Cleanup(func() { _ = s.Shutdown(t.Context()) })
	accept := HandlerFunc(func(w ResponseWriter, r *Request) {
		reply := r.Response(radius.CodeAccessAccept)
		rfc2865.ReplyMessage_SetString(reply, "hello "+r.Client.Name)
		_ = w.Write(reply)
	})
	rs, err := s.ListenRadSec("127.0.0.1:0", RadSecOptions{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"),
		CAFile: filepath.Join(dir, "ca.crt")}, accept, accept)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Close(t.Context()) })
	return rs, c, dir
}

func rsDial(t *testing.T, rs *RadSec, c *rsCA, clientCA *rsCA, maxVersion uint16) (*tls.Conn, error) {
	crt, key := clientCA.issue(t, "nas")
	pair, _ := tls.X509KeyPair(crt, key)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.pem)
	return tls.Dial("tcp", rs.Addr().String(), &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MaxVersion: maxVersion})
}

// rsRoundTrip sends an Access-Request signed with secret and reads the reply (nil on timeout).
func rsRoundTrip(t *testing.T, conn *tls.Conn, secret string) *radius.Packet {
	p := radius.New(radius.CodeAccessRequest, []byte(secret))
	rfc2865.UserName_SetString(p, "alice")
	b, _ := p.MarshalBinary()
	b, off := radiusx.AppendMessageAuthenticator(b)
	radiusx.SignRequest(b, off, []byte(secret))
	if _, err := conn.Write(b); err != nil {
		return nil
	}
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(conn, hdr); err != nil {
		return nil
	}
	rest := make([]byte, int(binary.BigEndian.Uint16(hdr[2:]))-4)
	if _, err := io.ReadFull(conn, rest); err != nil {
		return nil
	}
	reply := append(hdr, rest...)
	if err := radiusx.VerifyResponse(reply, b[4:20], []byte(secret), true); err != nil {
		t.Fatalf("reply does not verify: %v", err)
	}
	r, err := radius.Parse(reply, []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRadSecServesWithRadsecSecret(t *testing.T) {
	rs, c, _ := rsServer(t)
	conn, err := rsDial(t, rs, c, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := rsRoundTrip(t, conn, "radsec")
	if r == nil || r.Code != radius.CodeAccessAccept || rfc2865.ReplyMessage_GetString(r) != "hello lo" {
		t.Fatalf("reply: %+v", r)
	}
	// Two requests on one connection.
	if r := rsRoundTrip(t, conn, "radsec"); r == nil {
		t.Fatal("second request on the connection not answered")
	}
	// The UDP secret is not the RadSec secret: dropped, not answered.
	if r := rsRoundTrip(t, conn, "udp-secret"); r != nil {
		t.Fatalf("request with the wrong secret answered: %+v", r)
	}
}

func TestRadSecRefusesForeignClientAndOldTLS(t *testing.T) {
	rs, c, _ := rsServer(t)
	if conn, err := rsDial(t, rs, c, rsNewCA(t), 0); err == nil {
		// TLS 1.3: the server's refusal arrives with the first read.
		if r := rsRoundTrip(t, conn, "radsec"); r != nil {
			t.Fatal("a client certificate of a foreign CA was served")
		}
		conn.Close()
	}
	if conn, err := rsDial(t, rs, c, c, tls.VersionTLS11); err == nil {
		conn.Close()
		t.Fatal("TLS 1.1 accepted")
	}
}

func TestRadSecReloadsCertificates(t *testing.T) {
	rs, c, dir := rsServer(t)
	serial := func() string {
		conn, err := rsDial(t, rs, c, c, 0)
		if err != nil {
			return ""
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	crt, key := c.issue(t, "server-2")
	_ = os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600)
	_ = os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600)
	// Reload (the file watcher's call) puts the new set in force for new connections.
	if changed, err := rs.Reload(); !changed || err != nil {
		t.Fatalf("Reload after a change: %v %v", changed, err)
	}
	if after := serial(); after == before || after == "" {
		t.Fatalf("new certificate not served: serial %q, before %q", after, before)
	}
	// Reload reports no change when nothing changed.
	if changed, err := rs.Reload(); changed || err != nil {
		t.Fatalf("Reload without change: %v %v", changed, err)
	}
	_ = os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("garbage"), 0o600)
	if _, err := rs.Reload(); err == nil {
		t.Fatal("a broken CA file was accepted")
	}
	if serial() == "" {
		t.Fatal("the set in force was dropped after a broken reload")
	}
}
