package radiusd

import (
	"crypto/tls"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/internal/testpki"
	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
)

func rsServer(t *testing.T) (*RadSec, *testpki.CA, string) {
	dir := t.TempDir()
	c := testpki.New(t, "ca")
	crt, key := c.Issue(t, "server", 2)
	for n, b := range map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": c.PEM, "secret": []byte("udp-secret")} {
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

func rsDial(t *testing.T, rs *RadSec, c *testpki.CA, clientCA *testpki.CA, maxVersion uint16) (*tls.Conn, error) {
	return tls.Dial("tcp", rs.Addr().String(), &tls.Config{RootCAs: c.Pool(), Certificates: []tls.Certificate{clientCA.TLS(t, "nas", 3)}, MaxVersion: maxVersion})
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
	if conn, err := rsDial(t, rs, c, testpki.New(t, "ca"), 0); err == nil {
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
	crt, key := c.Issue(t, "server-2", 4)
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
