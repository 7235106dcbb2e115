package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testpki"
)

// files writes a server certificate of ca and the CA bundle into dir: the set's files.
func files(t *testing.T, dir string, ca *testpki.CA) *Files {
	t.Helper()
	cert, key := ca.Issue(t, "t", 2)
	f := &Files{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"), CAFile: filepath.Join(dir, "ca.crt"), Name: "test"}
	for name, b := range map[string][]byte{f.CertFile: cert, f.KeyFile: key, f.CAFile: ca.PEM} {
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// A set with a CA file requires client certificates; one without (EAP with PEAP and TTLS
// only) asks for none; a broken key is refused and the set in force stays.
func TestReloadWithAndWithoutCA(t *testing.T) {
	f := files(t, t.TempDir(), testpki.New(t, "CA"))
	keyFile := f.KeyFile
	for _, c := range []struct {
		ca   string
		want tls.ClientAuthType
	}{{f.CAFile, tls.RequireAndVerifyClientCert}, {"", tls.NoClientCert}} {
		f := &Files{CertFile: f.CertFile, KeyFile: keyFile, CAFile: c.ca, Name: "test"}
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

func parse(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The CRLs of crlFile, checked against the chains crypto/tls verified: a revoked client
// certificate or intermediate CA is refused, so is a client certificate whose issuer has no
// CRL or only an expired one; the others pass.
func TestCRLVerify(t *testing.T) {
	dir := t.TempDir()
	root := testpki.New(t, "Root CA")
	sub := root.SubCA(t, "Sub CA", 7)
	other := testpki.New(t, "Other CA")
	f := files(t, dir, root)
	if err := os.WriteFile(f.CAFile, append(append(root.PEM, sub.PEM...), other.PEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	f.CRLFile = filepath.Join(dir, "ca.crl")
	day := time.Now().Add(24 * time.Hour)
	alice, bob := parse(t, first(root.Issue(t, "alice", 3))), parse(t, first(root.Issue(t, "bob", 4)))
	carol := parse(t, first(sub.Issue(t, "carol", 3))) // serial 3 too, of another issuer
	dave := parse(t, first(other.Issue(t, "dave", 5)))
	revokedSub := root.SubCA(t, "Sub CA", 8) // same name and key use as sub, another serial
	erin := parse(t, first(revokedSub.Issue(t, "erin", 9)))
	load := func(crls ...[]byte) error {
		t.Helper()
		if err := os.WriteFile(f.CRLFile, []byte(strings.Join(strs(crls), "")), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := f.Reload()
		return err
	}
	check := func(chain ...*x509.Certificate) error {
		return f.Config().VerifyPeerCertificate(nil, [][]*x509.Certificate{chain})
	}
	if err := load(root.CRL(t, 1, day, 3, 8), sub.CRL(t, 1, day)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		chain []*x509.Certificate
		want  error
	}{
		{"revoked", []*x509.Certificate{alice, root.Cert}, ErrRevoked},
		{"not revoked", []*x509.Certificate{bob, root.Cert}, nil},
		{"same serial, another issuer", []*x509.Certificate{carol, sub.Cert, root.Cert}, nil},
		{"intermediate revoked", []*x509.Certificate{erin, revokedSub.Cert, root.Cert}, ErrRevoked},
		{"issuer without CRL", []*x509.Certificate{dave, other.Cert}, ErrNoCRL},
		{"intermediate anchored in caFile", []*x509.Certificate{carol, sub.Cert}, nil},
	} {
		if err := check(c.chain...); !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// The sub CA's CRL expired: its certificates are refused, the root's still pass.
	if err := load(root.CRL(t, 2, day), sub.CRL(t, 2, time.Now().Add(-time.Minute))); err != nil {
		t.Fatal(err)
	}
	if err := check(carol, sub.Cert, root.Cert); !errors.Is(err, ErrNoCRL) {
		t.Fatalf("expired CRL: %v", err)
	}
	if err := check(alice, root.Cert); err != nil {
		t.Fatalf("a newer CRL no longer revokes alice: %v", err)
	}
	// A CRL no CA of caFile signed, or no CRL at all, is refused, naming the file; the set in
	// force stays.
	before := f.Config()
	for name, bad := range map[string][][]byte{"forged": {root.CRL(t, 3, day), root.ForgedCRL(t, 4)}, "no CRL": {[]byte("no CRL")}} {
		if err := load(bad...); err == nil || !strings.Contains(err.Error(), f.CRLFile) || f.Config() != before {
			t.Fatalf("%s taken: %v", name, err)
		}
	}
	if err := check(alice, root.Cert); err != nil {
		t.Fatalf("the set in force changed: %v", err)
	}
}

func first(a, _ []byte) []byte { return a }

func strs(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}
