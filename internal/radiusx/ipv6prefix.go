package radiusx

import "net/netip"

// IPv6Prefix decodes the ipv6prefix data type (RFC 8044 §3.11; RADIUS Framed-IPv6-Prefix
// and Delegated-IPv6-Prefix, Diameter's Framed-IPv6-Prefix AVP alike): a reserved octet,
// the prefix length, then up to 16 prefix octets (missing ones are zero). Bits past the
// length are cleared rather than refused: they carry nothing. ok is false when malformed.
func IPv6Prefix(b []byte) (p netip.Prefix, ok bool) {
	if len(b) < 2 || len(b) > 18 || b[1] > 128 {
		return netip.Prefix{}, false
	}
	var a [16]byte
	copy(a[:], b[2:])
	p, _ = netip.AddrFrom16(a).Prefix(int(b[1]))
	return p, true
}
