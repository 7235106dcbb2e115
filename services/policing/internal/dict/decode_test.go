package dict

import (
	"strconv"
	"testing"

	"layeh.com/radius"
)

// Find and Decode read back what Encode wrote, for every type and for vendor attributes,
// including a Vendor-Specific that carries two vendor attributes.
func TestFindDecodeRoundTrip(t *testing.T) {
	cases := []struct{ name, value, want string }{
		{"Calling-Station-Id", "02-00-00-00-00-01", "02-00-00-00-00-01"},
		{"NAS-Port", "7", "7"},
		{"Service-Type", "Framed-User", "2"},
		{"Framed-IP-Address", "10.1.2.3", "10.1.2.3"},
		{"Framed-IPv6-Address", "2001:db8::1", "2001:db8::1"},
		{"Framed-IPv6-Prefix", "2001:db8:aa::/48", "2001:db8:aa::/48"},
		{"Tunnel-Type", "VLAN", "13"},
		{"Tunnel-Private-Group-Id", "100", "100"},
		{"3GPP-IMSI", "001010123456789", "001010123456789"},
		{"Mikrotik-Rate-Limit", "10M/10M", "10M/10M"},
	}
	for _, c := range cases {
		a, _ := Builtin.Lookup(c.name)
		e := encode(t, c.name, c.value)
		attrs := radius.Attributes{{Type: 1, Attribute: radius.Attribute("u")}, {Type: e.Type, Attribute: e.Value}}
		raw, ok := a.Find(attrs)
		if !ok {
			t.Fatalf("%s: not found", c.name)
		}
		v, ok := a.Decode(raw)
		got := v.Str
		if v.IsNum {
			got = strconv.FormatUint(uint64(v.Num), 10)
		}
		if !ok || got != c.want {
			t.Errorf("%s=%s: decoded %q (ok %v), want %q", c.name, c.value, got, ok, c.want)
		}
	}
	// Two Mikrotik attributes in one Vendor-Specific (RFC 2865 §5.26 allows it).
	vsa := radius.Attribute{0, 0, 0x3a, 0x8c, 3, 4, 'g', '1', 8, 5, 'a', 'b', 'c'}
	a, _ := Builtin.Lookup("Mikrotik-Rate-Limit")
	if raw, ok := a.Find(radius.Attributes{{Type: 26, Attribute: vsa}}); !ok || string(raw) != "abc" {
		t.Errorf("second vendor attribute: %q %v", raw, ok)
	}
	// Another vendor's attribute of the same number is not it; a truncated one is ignored.
	other := radius.Attribute{0, 0, 0, 9, 8, 5, 'x', 'y', 'z'}
	broken := radius.Attribute{0, 0, 0x3a, 0x8c, 8, 9, 'a'}
	if raw, ok := a.Find(radius.Attributes{{Type: 26, Attribute: other}, {Type: 26, Attribute: broken}}); ok {
		t.Errorf("found %q in another vendor's or a broken attribute", raw)
	}
	// A malformed integer does not decode.
	port, _ := Builtin.Lookup("NAS-Port")
	if _, ok := port.Decode(radius.Attribute{1, 2}); ok {
		t.Error("a 2-octet integer decoded")
	}
}
