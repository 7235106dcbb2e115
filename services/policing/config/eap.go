package config

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"
)

// EAP configures EAP over RADIUS (RFC 3579, docs/eap.md): the methods offered, the server
// certificate of the TLS-based ones, and the bounds on conversations.
type EAP struct {
	// Methods are offered in this order (tls, peap, ttls, md5, sim, aka, aka-prime); empty: EAP is off and an
	// Access-Request with EAP-Message gets an Access-Reject with EAP-Failure.
	Methods []string `json:"methods,omitempty"`
	// CertFile and KeyFile are the server's certificate and key (PEM), CAFile the CA bundle
	// client certificates must chain to (EAP-TLS). Reloaded when they change, like RadSec's.
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
	CAFile   string `json:"caFile,omitempty"`
	// CRLFile holds CRLs (PEM) of the CAs of CAFile: a client certificate they revoke is
	// refused, and so is one whose issuer has none in force (docs/eap.md). Reloaded too.
	CRLFile string `json:"crlFile,omitempty"`
	// TLSMaxVersion caps the TLS methods (tls, peap, ttls): "1.2" or "1.3" (RFC 9190, 9427).
	TLSMaxVersion string `json:"tlsMaxVersion"`
	// TLSIdentity is what names an EAP-TLS subscriber: commonName or subjectAltName.
	TLSIdentity string `json:"tlsIdentity"`
	// NodeID is written in every State so that a round can be routed to the node holding
	// its conversation. Default: the host name (in Kubernetes, the pod's name).
	NodeID string `json:"nodeID,omitempty"`
	// MaxConversations bounds the conversations waiting for their next round.
	MaxConversations int `json:"maxConversations"`
	// Timeout is how long a conversation waits for the next round (the Access-Challenge's
	// Session-Timeout too).
	Timeout Duration `json:"timeout"`
	// RoundTimeout bounds the work of one TLS round (a handshake never holds a worker longer)
	// and the taking of an AKA sequence number.
	RoundTimeout Duration `json:"roundTimeout"`
	// AKANetworkName is EAP-AKA prime's access network name (AT_KDF_INPUT, bound into CK'
	// and IK'): "WLAN" for Wi-Fi (TS 24.302).
	AKANetworkName string `json:"akaNetworkName"`
	// Forward sends a round of a conversation in another node's memory (TLS-based methods) to
	// that node (docs/eap.md "Multi-DC conversations").
	Forward EAPForward `json:"forward"`
	// Resumption lets a re-authentication of EAP-TLS, PEAP or TTLS resume its TLS session
	// (docs/eap.md "Session resumption").
	Resumption EAPResumption `json:"resumption"`
}

// EAPResumption configures TLS session resumption by session tickets.
type EAPResumption struct {
	// Enabled issues and accepts session tickets. Off by default: a resumed EAP-TLS
	// session presents no certificate (the ticket vouches for it), and without a shared
	// ticketKeyFile a ticket resumes only on the node that issued it.
	Enabled bool `json:"enabled"`
	// TicketKeyFile holds the ticket keys every node shares (a mounted Secret; one secret of
	// at least 32 characters a line, the first encrypts, all decrypt), reloaded when it
	// changes. Empty: a random key of this process (resumption on this node only, until it
	// restarts).
	TicketKeyFile string `json:"ticketKeyFile,omitempty"`
	// Lifetime is how long after a full handshake its session may be resumed (at most 24h,
	// FreeRADIUS's cache lifetime).
	Lifetime Duration `json:"lifetime"`
}

// MaxTicketLifetime bounds eap.resumption.lifetime.
const MaxTicketLifetime = 24 * time.Hour

// EAPForward configures the forwarding of EAP rounds between nodes.
type EAPForward struct {
	// Address is the UDP listener (host:port) for rounds other nodes forward here; empty:
	// forwarding is off (such rounds are unknown_state, as without it).
	Address string `json:"address,omitempty"`
	// Advertise is the host:port other nodes send to, recorded in the node registry.
	// Default: Address's port on this host's first address that is not loopback (the pod's IP).
	Advertise string `json:"advertise,omitempty"`
	// SecretFile holds the inter-node shared secret (a mounted Secret), the same on every node.
	SecretFile string `json:"secretFile,omitempty"`
	// Timeout is the wait for the owner's answer before each of Retries retransmissions.
	Timeout Duration `json:"timeout"`
	Retries int      `json:"retries"`
}

func defaultEAP() EAP {
	return EAP{TLSMaxVersion: "1.3", TLSIdentity: "commonName", MaxConversations: 10000,
		Timeout: Duration(30 * time.Second), RoundTimeout: Duration(5 * time.Second), AKANetworkName: "WLAN",
		Forward:    EAPForward{Timeout: Duration(time.Second), Retries: 2},
		Resumption: EAPResumption{Lifetime: Duration(time.Hour)}}
}

// EAPMethods are the method names eap.methods takes.
var EAPMethods = []string{"tls", "peap", "ttls", "md5", "sim", "aka", "aka-prime"}

// UsesTLS reports whether a method needs the server certificate.
func (e EAP) UsesTLS() bool {
	return slices.ContainsFunc(e.Methods, func(m string) bool { return m == "tls" || m == "peap" || m == "ttls" })
}

// UsesAKA reports whether EAP-AKA or AKA' is offered (they need the store's SQNs).
func (e EAP) UsesAKA() bool {
	return slices.Contains(e.Methods, "aka") || slices.Contains(e.Methods, "aka-prime")
}

func (e EAP) validate(key string) []error {
	var errs []error
	bad := keyed(key, &errs)
	for i, m := range e.Methods {
		if !slices.Contains(EAPMethods, m) {
			bad(fmt.Sprintf("methods[%d]", i), "%q is not one of tls, peap, ttls, md5, sim, aka, aka-prime", m)
		} else if slices.Index(e.Methods, m) != i {
			bad(fmt.Sprintf("methods[%d]", i), "%q is listed twice", m)
		}
	}
	if e.UsesTLS() {
		if e.CertFile == "" || e.KeyFile == "" {
			bad("certFile", "certFile and keyFile are required by tls, peap and ttls")
		}
	}
	if slices.Contains(e.Methods, "tls") && e.CAFile == "" {
		bad("caFile", "required by tls (client certificates are verified against it)")
	}
	if e.CRLFile != "" && e.CAFile == "" {
		bad("crlFile", "needs caFile (each CRL is verified against its issuer there)")
	}
	if e.TLSMaxVersion != "1.2" && e.TLSMaxVersion != "1.3" {
		bad("tlsMaxVersion", "%q is not 1.2 or 1.3 (the highest TLS version of tls, peap and ttls)", e.TLSMaxVersion)
	}
	if e.TLSIdentity != "commonName" && e.TLSIdentity != "subjectAltName" {
		bad("tlsIdentity", "%q is not commonName or subjectAltName", e.TLSIdentity)
	}
	if len(e.NodeID) > 64 {
		bad("nodeID", "longer than 64 octets (it goes in every State attribute)")
	}
	positive(bad, "maxConversations", e.MaxConversations)
	if e.Timeout < Duration(time.Second) {
		bad("timeout", "must be at least 1s (it is sent as Session-Timeout, in seconds)")
	}
	positive(bad, "roundTimeout", e.RoundTimeout)
	if slices.Contains(e.Methods, "aka-prime") && (e.AKANetworkName == "" || len(e.AKANetworkName) > 200) {
		bad("akaNetworkName", "required by aka-prime, at most 200 octets")
	}
	errs = append(errs, e.Resumption.validate(key+".resumption", e.UsesTLS())...)
	return append(errs, e.Forward.validate(key+".forward", len(e.Methods) > 0)...)
}

func (r EAPResumption) validate(key string, usesTLS bool) []error {
	var errs []error
	if r.Enabled && !usesTLS {
		errs = append(errs, fmt.Errorf("%s.enabled: resumption needs tls, peap or ttls in eap.methods", key))
	}
	if r.TicketKeyFile != "" && !r.Enabled {
		errs = append(errs, fmt.Errorf("%s.ticketKeyFile: set while resumption is not enabled", key))
	}
	if r.Lifetime < Duration(time.Minute) || r.Lifetime > Duration(MaxTicketLifetime) {
		errs = append(errs, fmt.Errorf("%s.lifetime: must be 1m to 24h", key))
	}
	return errs
}

func (f EAPForward) validate(key string, eapOn bool) []error {
	if f.Address == "" {
		return nil
	}
	var errs []error
	bad := keyed(key, &errs)
	if !eapOn {
		bad("address", "forwarding needs eap.methods")
	}
	if _, _, err := net.SplitHostPort(f.Address); err != nil {
		bad("address", "%q is not host:port", f.Address)
	}
	if f.Advertise != "" {
		host, port, err := net.SplitHostPort(f.Advertise)
		if n, _ := strconv.Atoi(port); err != nil || host == "" || n <= 0 || n > 65535 {
			bad("advertise", "%q is not host:port with a port", f.Advertise)
		}
	}
	if f.SecretFile == "" {
		bad("secretFile", "required when eap.forward.address is set (the inter-node secret)")
	}
	positive(bad, "timeout", f.Timeout)
	if f.Retries < 0 || f.Retries > 5 {
		bad("retries", "must be 0 to 5")
	}
	return errs
}
