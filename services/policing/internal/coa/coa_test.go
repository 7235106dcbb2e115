package coa

import (
	"net/netip"
	"testing"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc3162"

	"github.com/openaaa/openaaa/services/policing/internal/nas"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// An IPv6-only NAS is reached on its NAS-IPv6-Address when it lies in the client's range,
// and named by it in the request (RFC 5176 §3); a dual-stack NAS keeps NAS-IP-Address first.
func TestTargetAndIdentifyIPv6NAS(t *testing.T) {
	c := &nas.Client{Name: "bngs", Prefix: netip.MustParsePrefix("2001:db8:ffff::/48"), CoAPort: 3799}
	v6only := &session.Session{Key: session.Key{NAS: "2001:db8:ffff::7", ID: "s1"},
		NASIPv6Address: netip.MustParseAddr("2001:db8:ffff::7"), FramedIPv6Prefix: netip.MustParsePrefix("2001:db8:0:7::/64")}
	to, err := target(c, v6only)
	if err != nil || to.String() != "[2001:db8:ffff::7]:3799" {
		t.Fatalf("target %v, %v", to, err)
	}
	p := radius.New(radius.CodeDisconnectRequest, []byte("s"))
	identify(p, v6only)
	if a := rfc3162.NASIPv6Address_Get(p); a.String() != "2001:db8:ffff::7" {
		t.Fatalf("NAS-IPv6-Address %v", a)
	}
	if pfx := rfc3162.FramedIPv6Prefix_Get(p); pfx == nil || pfx.String() != "2001:db8:0:7::/64" {
		t.Fatalf("Framed-IPv6-Prefix %v", pfx)
	}
	if _, ok := p.Lookup(rfc2865.NASIPAddress_Type); ok {
		t.Fatal("NAS-IP-Address sent for an IPv6-only NAS")
	}
	// Outside the range: an error naming both addresses, no guess.
	other := &session.Session{NASIPv6Address: netip.MustParseAddr("2001:db8:eeee::1")}
	if _, err := target(c, other); err == nil {
		t.Fatal("a NAS-IPv6-Address outside the client's range was used")
	}
	dual := &nas.Client{Name: "any", Prefix: netip.MustParsePrefix("::/0"), CoAPort: 1700}
	ds := &session.Session{NASIPAddress: netip.MustParseAddr("192.0.2.1"), NASIPv6Address: netip.MustParseAddr("2001:db8::1")}
	if to, err := target(&nas.Client{Name: "v4", Prefix: netip.MustParsePrefix("192.0.2.0/24"), CoAPort: 1700}, ds); err != nil || to.String() != "192.0.2.1:1700" {
		t.Fatalf("dual-stack NAS target %v, %v", to, err)
	}
	if to, err := target(dual, ds); err != nil || to.String() != "[2001:db8::1]:1700" {
		t.Fatalf("IPv4 NAS address outside an IPv6 range: target %v, %v", to, err)
	}
}
