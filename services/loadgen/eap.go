package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
)

// eapFlags are the EAP peer's certificates (--auth eap-tls, peap-mschapv2).
type eapFlags struct {
	ca, cert, key, serverName, maxVersion string
}

func (e *eapFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&e.ca, "eap-ca", "", "EAP: PEM file of the CA that signed the server's certificate (required with EAP)")
	fs.StringVar(&e.serverName, "eap-server-name", "", "EAP: the name the server's certificate must carry (required with EAP)")
	fs.StringVar(&e.cert, "eap-cert", "", "EAP-TLS: the client certificate (PEM) sent for every user (the server maps it to a subscriber)")
	fs.StringVar(&e.key, "eap-key", "", "EAP-TLS: the client certificate's key (PEM)")
	fs.StringVar(&e.maxVersion, "eap-tls-max-version", "1.2", "EAP-TLS: highest TLS version offered, 1.2 or 1.3 (PEAP is TLS 1.2)")
}

// tlsConfig is the peer's TLS configuration; withCert: EAP-TLS's client certificate.
func (e *eapFlags) tlsConfig(withCert bool) (*tls.Config, error) {
	if e.ca == "" || e.serverName == "" {
		return nil, errors.New("EAP needs --eap-ca and --eap-server-name")
	}
	pem, err := os.ReadFile(e.ca)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--eap-ca %s: no certificate", e.ca)
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: e.serverName, MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12}
	switch e.maxVersion {
	case "1.2":
	case "1.3":
		if withCert {
			cfg.MaxVersion = tls.VersionTLS13
		}
	default:
		return nil, fmt.Errorf("--eap-tls-max-version %q: want 1.2 or 1.3", e.maxVersion)
	}
	if withCert {
		if e.cert == "" || e.key == "" {
			return nil, errors.New("--auth eap-tls needs --eap-cert and --eap-key")
		}
		c, err := tls.LoadX509KeyPair(e.cert, e.key)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}
