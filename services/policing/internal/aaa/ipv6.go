package aaa

import (
	"fmt"
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"
	"layeh.com/radius"
	"layeh.com/radius/rfc3162"
	"layeh.com/radius/rfc4818"
	"layeh.com/radius/rfc6911"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// decodeIPv6 reads the IPv6 side of a dual-stack session (RFC 3162, 4818, 6911). A malformed
// attribute is ignored and counted, the rest of the request still stored (RFC 6929 §2.8).
func decodeIPv6(p *radius.Packet, s *session.Session, invalid *prometheus.CounterVec) {
	if a, ok := p.Lookup(rfc3162.NASIPv6Address_Type); ok {
		s.NASIPv6Address = ipv6Attr(a, "NAS-IPv6-Address", invalid)
	}
	if a, ok := p.Lookup(rfc6911.FramedIPv6Address_Type); ok {
		s.FramedIPv6Address = ipv6Attr(a, "Framed-IPv6-Address", invalid)
	}
	if a, ok := p.Lookup(rfc3162.FramedIPv6Prefix_Type); ok {
		s.FramedIPv6Prefix = prefixAttr(a, "Framed-IPv6-Prefix", invalid)
	}
	if a, ok := p.Lookup(rfc4818.DelegatedIPv6Prefix_Type); ok {
		s.DelegatedIPv6Prefix = prefixAttr(a, "Delegated-IPv6-Prefix", invalid)
	}
	if a, ok := p.Lookup(rfc3162.FramedInterfaceID_Type); ok {
		if len(a) != 8 {
			invalid.WithLabelValues("Framed-Interface-Id").Inc()
		} else {
			// FreeRADIUS's form (ifid): four groups of four hex digits.
			s.FramedInterfaceID = fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:%02x%02x", a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7])
		}
	}
}

func ipv6Attr(a radius.Attribute, name string, invalid *prometheus.CounterVec) netip.Addr {
	if len(a) != 16 {
		invalid.WithLabelValues(name).Inc()
		return netip.Addr{}
	}
	return netip.AddrFrom16([16]byte(a))
}

// prefixAttr reads an ipv6prefix attribute (radiusx.IPv6Prefix).
func prefixAttr(a radius.Attribute, name string, invalid *prometheus.CounterVec) netip.Prefix {
	p, ok := radiusx.IPv6Prefix(a)
	if !ok {
		invalid.WithLabelValues(name).Inc()
	}
	return p
}
