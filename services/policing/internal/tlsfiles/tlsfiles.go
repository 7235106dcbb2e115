// Package tlsfiles is the mutual-TLS server side of the TLS listeners (RadSec, Diameter) and
// of the EAP server (EAP-TLS, PEAP, TTLS):
// certificate, key, client CA and the CAs' CRLs read from PEM files — a mounted cert-manager
// Secret (tls.crt, tls.key, ca.crt) — and replaced when their content changes. The caller's
// file watcher (policing serve: the hot-reload watcher) calls Reload; open connections keep
// the set they started with, new ones get the new set; a bad new set is refused and the old
// one stays.
package tlsfiles

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Files is one listener's certificate set. An empty CAFile (EAP without EAP-TLS) asks for
// no client certificate. CRLFile, optional with a CAFile, holds the CAs' CRLs: a client
// certificate they revoke is refused (crl.go).
type Files struct {
	CertFile, KeyFile, CAFile, CRLFile string
	// Name says whose set it is in the log ("radsec", "diameter").
	Name string
	Log  *slog.Logger

	mu  sync.Mutex // reloads
	sum [32]byte
	cfg atomic.Pointer[tls.Config]
}

// Reload reads the files; when their content changed it puts the new set in force and
// reports true. On error the set in force stays.
func (f *Files) Reload() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var raw [4][]byte
	for i, name := range []string{f.CertFile, f.KeyFile, f.CAFile, f.CRLFile} {
		if name == "" && i >= 2 {
			continue // no client certificates (EAP with PEAP and TTLS only), or no CRLs
		}
		b, err := os.ReadFile(name)
		if err != nil {
			// The key names which file (the caller adds the section: eap, diameter.tls).
			return false, fmt.Errorf("%s: %w", [...]string{"certFile", "keyFile", "caFile", "crlFile"}[i], err)
		}
		raw[i] = b
	}
	sum := sha256.Sum256(bytes.Join(raw[:], []byte{0}))
	if f.cfg.Load() != nil && sum == f.sum {
		return false, nil
	}
	cert, err := tls.X509KeyPair(raw[0], raw[1])
	if err != nil {
		return false, fmt.Errorf("certFile/keyFile: %w", err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return false, fmt.Errorf("certFile: %w", err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if f.CAFile != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(raw[2]) {
			return false, fmt.Errorf("caFile %s: no PEM certificate", f.CAFile)
		}
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, pool
	}
	if f.CRLFile != "" {
		if f.CAFile == "" {
			return false, fmt.Errorf("crlFile %s: needs a caFile", f.CRLFile)
		}
		set, err := loadCRLs(f.CRLFile, raw[3], raw[2], f.Name, f.Log)
		if err != nil {
			return false, err
		}
		cfg.VerifyPeerCertificate = set.verify
	}
	first := f.cfg.Load() == nil
	f.cfg.Store(cfg)
	f.sum = sum
	if f.Log != nil {
		f.Log.Info(f.Name+" certificates loaded", "subject", leaf.Subject.String(), "serial", leaf.SerialNumber.String(),
			"notAfter", leaf.NotAfter.UTC().Format(time.RFC3339), "reload", !first)
	}
	return true, nil
}

// Config is the set in force (nil before the first successful Reload).
func (f *Files) Config() *tls.Config { return f.cfg.Load() }
