package tlsfiles

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// Revocation by CRLs (crlFile), as FreeRADIUS's check_crl does with OpenSSL: the client
// certificate's issuer must have a CRL in force, and a certificate of the chain listed by its
// issuer's CRL is refused. A CRL past its nextUpdate is not in force (OpenSSL's "CRL has
// expired"): the certificates it covers are refused until a newer one is loaded.
var (
	// ErrRevoked: a certificate of the client's chain is listed by its issuer's CRL.
	ErrRevoked = errors.New("certificate revoked")
	// ErrNoCRL: the client certificate's issuer has no CRL in crlFile, or only CRLs past
	// their nextUpdate.
	ErrNoCRL = errors.New("no CRL in force for the issuer")
)

// crl is one CRL of crlFile, its signature verified against its issuer in caFile.
type crl struct {
	issuer  *x509.Certificate
	list    *x509.RevocationList
	revoked map[string]bool // serial numbers, decimal
	warned  atomic.Bool     // its expiry was logged
}

// crls are crlFile's CRLs by their issuer's subject.
type crls struct {
	file string
	name string // whose set, in the log ("eap")
	log  *slog.Logger
	by   map[string][]*crl
}

// loadCRLs parses the PEM CRLs of file and verifies each against the CAs of caPEM; one that
// no CA of the bundle signed refuses the whole file.
func loadCRLs(file string, raw, caPEM []byte, name string, log *slog.Logger) (*crls, error) {
	var cas []*x509.Certificate
	for _, der := range pemBlocks(caPEM, "CERTIFICATE") {
		if c, err := x509.ParseCertificate(der); err == nil { // as CertPool.AppendCertsFromPEM
			cas = append(cas, c)
		}
	}
	set := &crls{file: file, name: name, log: log, by: map[string][]*crl{}}
	ders := pemBlocks(raw, "X509 CRL")
	if len(ders) == 0 {
		return nil, fmt.Errorf("crlFile %s: no PEM X509 CRL", file)
	}
	now := time.Now()
	for i, der := range ders {
		list, err := x509.ParseRevocationList(der)
		if err != nil {
			return nil, fmt.Errorf("crlFile %s: CRL %d: %w", file, i+1, err)
		}
		c := &crl{list: list, revoked: make(map[string]bool, len(list.RevokedCertificateEntries))}
		for _, ca := range cas {
			if bytes.Equal(ca.RawSubject, list.RawIssuer) && list.CheckSignatureFrom(ca) == nil {
				c.issuer = ca
				break
			}
		}
		if c.issuer == nil {
			return nil, fmt.Errorf("crlFile %s: CRL %d of %q: no CA of caFile signed it (a CA with that subject, whose key verifies the signature, with keyUsage cRLSign)",
				file, i+1, list.Issuer.String())
		}
		for _, e := range list.RevokedCertificateEntries {
			c.revoked[e.SerialNumber.String()] = true
		}
		set.by[string(list.RawIssuer)] = append(set.by[string(list.RawIssuer)], c)
		if log != nil {
			log.Info(name+" CRL loaded", "file", file, "issuer", list.Issuer.String(), "revoked", len(c.revoked),
				"thisUpdate", list.ThisUpdate.UTC().Format(time.RFC3339), "nextUpdate", list.NextUpdate.UTC().Format(time.RFC3339))
		}
		c.inForce(now, set)
	}
	return set, nil
}

// inForce reports whether the CRL is before its nextUpdate (none: always); past it, the
// expiry is logged once.
func (c *crl) inForce(now time.Time, set *crls) bool {
	if c.list.NextUpdate.IsZero() || now.Before(c.list.NextUpdate) {
		return true
	}
	if !c.warned.Swap(true) && set.log != nil {
		set.log.Warn(set.name+" CRL past its nextUpdate: the certificates of its issuer are refused until a newer CRL is loaded",
			"file", set.file, "issuer", c.list.Issuer.String(), "nextUpdate", c.list.NextUpdate.UTC().Format(time.RFC3339))
	}
	return false
}

// verify is the tls.Config's VerifyPeerCertificate, called after crypto/tls verified the
// chains: in every chain, each certificate whose issuer has CRLs must be in none of them,
// and one of them must be in force; the client certificate's issuer must have one. The
// trust anchor ending a chain is not checked (no CRL revokes its own issuer).
func (s *crls) verify(_ [][]byte, chains [][]*x509.Certificate) error {
	now := time.Now()
	var unchecked error // a revoked certificate further up the chain says more
	for _, chain := range chains {
		for i := 0; i+1 < len(chain); i++ {
			cert, issuer := chain[i], chain[i+1]
			inForce, listed := false, false
			for _, c := range s.by[string(issuer.RawSubject)] {
				if !bytes.Equal(c.issuer.RawSubjectPublicKeyInfo, issuer.RawSubjectPublicKeyInfo) {
					continue // another CA of the same name
				}
				listed = true
				if c.revoked[cert.SerialNumber.String()] {
					return fmt.Errorf("%w: serial %s of %q, by the CRL of %q", ErrRevoked, cert.SerialNumber, cert.Subject.String(), issuer.Subject.String())
				}
				inForce = c.inForce(now, s) || inForce
			}
			switch {
			case unchecked != nil:
			case !listed && i == 0:
				unchecked = fmt.Errorf("%w: %q has no CRL in %s", ErrNoCRL, issuer.Subject.String(), s.file)
			case listed && !inForce:
				unchecked = fmt.Errorf("%w: the CRLs of %q in %s are past their nextUpdate", ErrNoCRL, issuer.Subject.String(), s.file)
			}
		}
	}
	return unchecked
}

// pemBlocks are the DER contents of raw's PEM blocks of type typ.
func pemBlocks(raw []byte, typ string) [][]byte {
	var out [][]byte
	for {
		var b *pem.Block
		if b, raw = pem.Decode(raw); b == nil {
			return out
		}
		if b.Type == typ {
			out = append(out, b.Bytes)
		}
	}
}
