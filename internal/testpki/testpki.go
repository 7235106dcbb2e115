// Package testpki makes the certificate authorities, certificates and CRLs of the tests
// (RadSec, EAP, the certificate files' loader) with crypto/x509: ECDSA P-256 keys, PEM out.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"
)

// CA is a self-signed certificate authority valid for a day.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	PEM  []byte // Cert, PEM
}

// New makes a root CA named name (its subject CN).
func New(t testing.TB, name string) *CA {
	t.Helper()
	return newCA(t, name, 1, nil)
}

// SubCA makes an intermediate CA signed by ca.
func (ca *CA) SubCA(t testing.TB, name string, serial int64) *CA {
	t.Helper()
	return newCA(t, name, serial, ca)
}

func newCA(t testing.TB, name string, serial int64, parent *CA) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	check(t, err)
	c, err := x509.ParseCertificate(der)
	check(t, err)
	return &CA{Cert: c, Key: key, PEM: pemBlock("CERTIFICATE", der)}
}

// Issue returns the PEM certificate and key of cn, valid for a day, for server and client
// use, with the names localhost and 127.0.0.1.
func (ca *CA) Issue(t testing.TB, cn string, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	return ca.IssueUntil(t, cn, serial, time.Now().Add(24*time.Hour))
}

// IssueUntil is Issue with the end of validity (in the past: an expired certificate) and
// more DNS names.
func (ca *CA) IssueUntil(t testing.TB, cn string, serial int64, notAfter time.Time, dnsNames ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key := newKey(t)
	notBefore := time.Now()
	if notAfter.Before(notBefore) {
		notBefore = notAfter
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: notBefore.Add(-time.Hour), NotAfter: notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: append([]string{"localhost"}, dnsNames...)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	check(t, err)
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	check(t, err)
	return pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", kb)
}

// TLS is Issue as a tls.Certificate.
func (ca *CA) TLS(t testing.TB, cn string, serial int64, dnsNames ...string) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(ca.IssueUntil(t, cn, serial, time.Now().Add(24*time.Hour), dnsNames...))
	check(t, err)
	return c
}

// Pool is a certificate pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// CRL is a PEM CRL of the CA, number number, revoking serials, issued an hour ago and due
// for renewal at nextUpdate (in the past: an expired CRL).
func (ca *CA) CRL(t testing.TB, number int64, nextUpdate time.Time, serials ...int64) []byte {
	t.Helper()
	tmpl := &x509.RevocationList{Number: big.NewInt(number), ThisUpdate: time.Now().Add(-time.Hour), NextUpdate: nextUpdate}
	if nextUpdate.Before(tmpl.ThisUpdate) {
		tmpl.ThisUpdate = nextUpdate.Add(-time.Hour)
	}
	for _, s := range serials {
		tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries,
			x509.RevocationListEntry{SerialNumber: big.NewInt(s), RevocationTime: tmpl.ThisUpdate})
	}
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, ca.Cert, ca.Key)
	check(t, err)
	return pemBlock("X509 CRL", der)
}

// ForgedCRL is CRL signed by another key than the CA's (its issuer name still the CA's).
func (ca *CA) ForgedCRL(t testing.TB, serials ...int64) []byte {
	t.Helper()
	forger := New(t, ca.Cert.Subject.CommonName) // same name, another key
	return forger.CRL(t, 1, time.Now().Add(24*time.Hour), serials...)
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	check(t, err)
	return key
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
