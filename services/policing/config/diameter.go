package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// Diameter configures the Diameter base protocol and the Gx policy server (docs/diameter-gx.md).
type Diameter struct {
	Enabled bool `json:"enabled"`
	// Address is host:port of the TCP listener (3868 is the standard port).
	Address     string `json:"address"`
	OriginHost  string `json:"originHost"`
	OriginRealm string `json:"originRealm"`
	// ServedHosts are the other Diameter identities this node answers for: the other data
	// centers' originHost (any node serves any session). A request whose Destination-Host
	// names neither this originHost nor one of these is answered 3002; one for another realm
	// 3003 (docs/diameter-gx.md).
	ServedHosts []string `json:"servedHosts,omitempty"`
	// VendorID is the CEA's Vendor-Id: the IANA enterprise number of whoever ships this
	// Diameter software (RFC 6733 §5.3.3). 0, the default, is the value the RFC reserves in a
	// CER or CEA for "ignore this field" (OpenAAA has no enterprise number of its own).
	VendorID uint32 `json:"vendorId,omitempty"`
	// MaxInFlight bounds the Gx requests processed at once; past it they are answered
	// 3004 DIAMETER_TOO_BUSY.
	MaxInFlight int `json:"maxInFlight"`
	// Dispatch is auto, inline or workers: see DiameterInline.
	Dispatch string `json:"dispatch"`
	// Peers are the PCEFs allowed to connect; a CER from anyone else is refused with 3010.
	Peers []DiameterPeer `json:"peers"`
	// AdminURL is how the other nodes reach this node's admin API to forward a RAR that must
	// leave from here (it holds the PCEF's connection). Default: http:// and the admin
	// address, a wildcard replaced by this host's first non-loopback address (a pod's IP).
	AdminURL string `json:"adminURL,omitempty"`
	// NodeName tells this node apart from the others, those sharing its Diameter identity
	// included (the pods of a data center): a Gx session records the node holding the
	// PCEF's connection by it, and a RAR is forwarded to that node. Default: the host name and
	// the Diameter port ("host:3868"; in Kubernetes the pod's name).
	NodeName string `json:"nodeName,omitempty"`
	// RequestTimeout bounds one application request (a Gx CCR) from when it was read: the
	// subscriber lookup, the Lua hooks, the store. Past it the request's context ends and Gx
	// answers 3004 DIAMETER_TOO_BUSY (RFC 6733 §7.1.3: the PCEF tries another peer); RFC 4006
	// §13 recommends a Tx timer of 10 s, after which the PCEF has given up on the answer.
	RequestTimeout Duration `json:"requestTimeout"`
	// RARTimeout bounds a RAR this node sends (the admin API's, a scheduled policy push)
	// from the session's read to the RAA; past it the RAR counts as unanswered (a PCEF over
	// a WAN may need longer).
	RARTimeout Duration `json:"rarTimeout"`
	// FlushTimeout is how long a closing connection waits for its queued messages to leave
	// (a DPA, the answers of requests a shutdown cancelled): a peer that stopped reading
	// holds a stop no longer than this.
	FlushTimeout Duration `json:"flushTimeout"`
	// DPRTimeout is how long a stopping node waits for a peer's DPA to the DPR it sent
	// (RFC 6733 §5.4) before it closes the connection anyway: a peer that ignores the DPR
	// holds a stop no longer than this.
	DPRTimeout Duration `json:"dprTimeout"`
	// ScheduleInterval is how often a node decides the Gx sessions it holds again and pushes
	// by RAR what changed between CCRs: rule windows (dataPolicy.windows) that opened or
	// closed, quotas that ran out.
	ScheduleInterval Duration `json:"scheduleInterval"`
	// TLS serves Diameter over TLS as well, on its own port (RFC 6733 §2.1; 5658 is the
	// standard one), with certificates as RadSec's.
	TLS DiameterTLS `json:"tls"`
}

// DiameterTLS is the TLS listener: mutual TLS, the peer's certificate chaining to CAFile and
// naming its Origin-Host. The files (a mounted cert-manager Secret) reload without restart.
type DiameterTLS struct {
	// Address is host:port; empty: no TLS listener.
	Address  string `json:"address,omitempty"`
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
	CAFile   string `json:"caFile,omitempty"`
	// HandshakeTimeout bounds the TLS handshake: a peer cannot hold a connection by
	// stalling it.
	HandshakeTimeout Duration `json:"handshakeTimeout"`
}

// DiameterPeer is one allowed peer: every field that is set must match the CER.
type DiameterPeer struct {
	OriginHost  string `json:"originHost,omitempty"`
	OriginRealm string `json:"originRealm,omitempty"`
	// Address is the peer's source IP address or CIDR.
	Address string `json:"address,omitempty"`
}

func defaultDiameter() Diameter {
	return Diameter{Address: fmt.Sprintf(":%d", DefaultDiameterPort), MaxInFlight: 1024, Dispatch: "auto", RequestTimeout: Duration(10 * time.Second),
		RARTimeout: Duration(5 * time.Second), FlushTimeout: Duration(time.Second), DPRTimeout: Duration(5 * time.Second),
		ScheduleInterval: Duration(30 * time.Second), TLS: DiameterTLS{HandshakeTimeout: Duration(10 * time.Second)}}
}

// Network parses Address (an IP or a CIDR); nil when unset.
func (p DiameterPeer) Network() (*net.IPNet, error) {
	if p.Address == "" {
		return nil, nil
	}
	if !strings.Contains(p.Address, "/") {
		ip := net.ParseIP(p.Address)
		if ip == nil {
			return nil, fmt.Errorf("%q is not an IP address or CIDR", p.Address)
		}
		bits := 128
		if ip.To4() != nil {
			ip, bits = ip.To4(), 32
		}
		return &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)}, nil
	}
	_, n, err := net.ParseCIDR(p.Address)
	if err != nil {
		return nil, fmt.Errorf("%q is not an IP address or CIDR", p.Address)
	}
	return n, nil
}

func (d Diameter) validate(key string) []error {
	var errs []error
	bad := keyed(key, &errs)
	if !d.Enabled {
		return nil
	}
	if _, _, err := net.SplitHostPort(d.Address); err != nil {
		bad("address", "%q is not host:port", d.Address)
	}
	if d.OriginHost == "" {
		bad("originHost", "required when diameter is enabled (this node's Diameter identity)")
	}
	if d.OriginRealm == "" {
		bad("originRealm", "required when diameter is enabled")
	}
	if d.MaxInFlight < 1 {
		bad("maxInFlight", "must be at least 1")
	}
	positive(bad, "requestTimeout", d.RequestTimeout)
	if d.Dispatch != "auto" && d.Dispatch != "inline" && d.Dispatch != "workers" {
		bad("dispatch", "must be auto, inline or workers, got %q", d.Dispatch)
	}
	for _, t := range []struct {
		key    string
		d      Duration
		atMost time.Duration
	}{{"rarTimeout", d.RARTimeout, time.Minute}, {"flushTimeout", d.FlushTimeout, 30 * time.Second},
		{"dprTimeout", d.DPRTimeout, time.Minute},
		{"tls.handshakeTimeout", d.TLS.HandshakeTimeout, time.Minute}} {
		if p := timeoutProblem(t.d, t.atMost); p != "" {
			bad(t.key, "%s", p)
		}
	}
	if d.ScheduleInterval < Duration(time.Second) {
		bad("scheduleInterval", "must be at least 1s")
	}
	if t := d.TLS; t.Address != "" {
		if _, _, err := net.SplitHostPort(t.Address); err != nil {
			bad("tls.address", "%q is not host:port", t.Address)
		}
		for _, kv := range [][2]string{{"certFile", t.CertFile}, {"keyFile", t.KeyFile}, {"caFile", t.CAFile}} {
			if kv[1] == "" {
				bad("tls."+kv[0], "required when diameter.tls.address is set")
			}
		}
	}
	if d.AdminURL != "" {
		if u, err := url.Parse(d.AdminURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("adminURL", "%q is not an http:// or https:// URL", d.AdminURL)
		}
	}
	if len(d.Peers) == 0 {
		bad("peers", "no peer allowed: every CER would be refused")
	}
	for i, p := range d.Peers {
		if p.OriginHost == "" && p.OriginRealm == "" && p.Address == "" {
			bad(fmt.Sprintf("peers[%d]", i), "set originHost, originRealm or address")
		}
		if _, err := p.Network(); err != nil {
			bad(fmt.Sprintf("peers[%d].address", i), "%v", err)
		}
	}
	return errs
}
