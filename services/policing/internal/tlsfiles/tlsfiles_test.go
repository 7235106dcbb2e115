package tlsfiles

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A set with a CA file requires client certificates; one without (EAP with PEAP and TTLS
// only) asks for none; a broken key is refused and the set in force stays.
func TestReloadWithAndWithoutCA(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "t"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for name, b := range map[string][]byte{
		cert:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyFile: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
	} {
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		ca   string
		want tls.ClientAuthType
	}{{cert, tls.RequireAndVerifyClientCert}, {"", tls.NoClientCert}} {
		f := &Files{CertFile: cert, KeyFile: keyFile, CAFile: c.ca, Name: "test"}
		if changed, err := f.Reload(); !changed || err != nil {
			t.Fatalf("CA %q: %v %v", c.ca, changed, err)
		}
		if got := f.Config().ClientAuth; got != c.want {
			t.Fatalf("CA %q: ClientAuth %v, want %v", c.ca, got, c.want)
		}
		if err := os.WriteFile(keyFile+".bad", []byte("no key"), 0o600); err != nil {
			t.Fatal(err)
		}
		before := f.Config()
		f.KeyFile = keyFile + ".bad"
		if _, err := f.Reload(); err == nil || f.Config() != before {
			t.Fatalf("CA %q: a broken key was taken (%v)", c.ca, err)
		}
	}
}
