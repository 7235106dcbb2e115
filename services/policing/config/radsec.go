package config

import (
	"net"
	"time"
)

// RadSec configures RADIUS over TLS (RFC 6614, docs/radsec.md) on one TCP port that takes
// both authentication and accounting.
type RadSec struct {
	// Address is host:port (the standard port is 2083); empty disables RadSec.
	Address string `json:"address,omitempty"`
	// CertFile, KeyFile and CAFile are PEM files (a mounted cert-manager Secret: tls.crt,
	// tls.key, ca.crt). Client certificates must chain to CAFile. All three are reloaded
	// when they change, without restart, by the hot-reload watcher (reload.interval).
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
	CAFile   string `json:"caFile,omitempty"`
	// Secret is the RADIUS shared secret over TLS: "radsec" (RFC 6614 §2.3).
	Secret string `json:"secret"`
	// IdleTimeout closes a connection that carried nothing for this long.
	IdleTimeout Duration `json:"idleTimeout"`
	// HandshakeTimeout bounds the TLS handshake: a client cannot hold a connection (one of
	// MaxConnections) by stalling it.
	HandshakeTimeout Duration `json:"handshakeTimeout"`
	// MaxConnections bounds the TLS connections open at once.
	MaxConnections int `json:"maxConnections"`
}

func defaultRadSec() RadSec {
	return RadSec{Secret: "radsec",
		IdleTimeout: Duration(10 * time.Minute), HandshakeTimeout: Duration(10 * time.Second), MaxConnections: 1024}
}

func (r RadSec) validate(key string) []error {
	var errs []error
	bad := keyed(key, &errs)
	if r.Address == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(r.Address); err != nil {
		bad("address", "%q is not host:port", r.Address)
	}
	for _, kv := range [][2]string{{"certFile", r.CertFile}, {"keyFile", r.KeyFile}, {"caFile", r.CAFile}} {
		if kv[1] == "" {
			bad(kv[0], "required when radsec.address is set")
		}
	}
	if r.Secret == "" {
		bad("secret", "must not be empty (RFC 6614: \"radsec\")")
	}
	positive(bad, "idleTimeout", r.IdleTimeout)
	if p := timeoutProblem(r.HandshakeTimeout, time.Minute); p != "" {
		bad("handshakeTimeout", "%s", p)
	}
	if r.MaxConnections < 1 {
		bad("maxConnections", "must be at least 1")
	}
	return errs
}
