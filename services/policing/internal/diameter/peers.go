package diameter

import (
	"net"
	"strings"
)

// Peer is one entry of the allowed peer table: a CER is accepted when every field that is set
// matches (Origin-Host and Origin-Realm case-insensitively: DiameterIdentity is an FQDN; the
// TCP source address within Network). An entry with no field set matches nothing.
type Peer struct {
	OriginHost  string
	OriginRealm string
	Network     *net.IPNet
}

func (p Peer) matches(host, realm string, src net.IP) bool {
	if p.OriginHost == "" && p.OriginRealm == "" && p.Network == nil {
		return false
	}
	if p.OriginHost != "" && !strings.EqualFold(p.OriginHost, host) {
		return false
	}
	if p.OriginRealm != "" && !strings.EqualFold(p.OriginRealm, realm) {
		return false
	}
	if p.Network != nil && (src == nil || !p.Network.Contains(src)) {
		return false
	}
	return true
}

// allowed reports whether a peer that sent a CER is in the table.
func allowed(table []Peer, host, realm string, src net.IP) bool {
	for _, p := range table {
		if p.matches(host, realm, src) {
			return true
		}
	}
	return false
}

func sourceIP(a net.Addr) net.IP {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return nil
	}
	return net.ParseIP(host)
}
