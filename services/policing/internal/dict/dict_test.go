package dict

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"layeh.com/radius"
	"layeh.com/radius/rfc2868"
	"layeh.com/radius/rfc3162"
)

func encode(t *testing.T, name, value string) Encoded {
	t.Helper()
	a, ok := Builtin.Lookup(name)
	if !ok {
		t.Fatalf("%s not in the builtin dictionary", name)
	}
	e, err := a.Encode(value)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, value, err)
	}
	return e
}

func TestEncodeTypes(t *testing.T) {
	cases := []struct {
		name, value string
		typ         radius.Type
		want        []byte
	}{
		{"Filter-Id", "gold-10M", 11, []byte("gold-10M")},
		{"Reply-Message", "", 18, []byte{}},
		{"Class", "0x0a0BfF", 25, []byte{0x0a, 0x0b, 0xff}},
		{"Class", "plain", 25, []byte("plain")},
		{"Framed-MTU", "1492", 12, radius.NewInteger(1492)},
		{"Session-Timeout", "4294967295", 27, radius.NewInteger(4294967295)},
		{"Service-Type", "Framed-User", 6, radius.NewInteger(2)},
		{"Framed-Protocol", "PPP", 7, radius.NewInteger(1)},
		{"Service-Type", "2", 6, radius.NewInteger(2)}, // numbers still work for named attributes
		{"Framed-IP-Address", "10.1.2.3", 8, []byte{10, 1, 2, 3}},
		{"Framed-IPv6-Address", "2001:db8::1", 168, net.ParseIP("2001:db8::1").To16()},
		// As FreeRADIUS 3: the whole 16-octet address after the length (freeradius_test.go)
		{"Framed-IPv6-Prefix", "2001:db8:aa::/48", 97, []byte{0, 48, 0x20, 0x01, 0x0d, 0xb8, 0, 0xaa, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"Delegated-IPv6-Prefix", "2001:db8:aa:bb00::/56", 123, []byte{0, 56, 0x20, 0x01, 0x0d, 0xb8, 0, 0xaa, 0xbb, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			e := encode(t, c.name, c.value)
			if e.Type != c.typ || !bytes.Equal(e.Value, c.want) {
				t.Fatalf("= type %d % x, want type %d % x", e.Type, []byte(e.Value), c.typ, c.want)
			}
		})
	}
}

// The IPv6 prefix encoding must decode back with layeh.com/radius (RFC 3162 §2.3).
func TestIPv6PrefixDecodes(t *testing.T) {
	e := encode(t, "Framed-IPv6-Prefix", "2001:db8:aa::/48")
	p := radius.New(radius.CodeAccessAccept, []byte("s"))
	p.Add(e.Type, e.Value)
	got, err := rfc3162.FramedIPv6Prefix_Lookup(p)
	if err != nil || got.String() != "2001:db8:aa::/48" {
		t.Fatalf("%v %v", got, err)
	}
}

func TestVendorSpecific(t *testing.T) {
	e := encode(t, "Mikrotik-Rate-Limit", "10M/20M")
	want := []byte{0, 0, 0x3a, 0x8c, 8, 9, '1', '0', 'M', '/', '2', '0', 'M'} // vendor 14988, type 8, len 2+7
	if e.Type != 26 || !bytes.Equal(e.Value, want) {
		t.Fatalf("VSA % x, want % x", []byte(e.Value), want)
	}
	vendor, inner, err := radius.VendorSpecific(e.Value)
	if err != nil || vendor != 14988 || !bytes.Equal(inner, want[4:]) {
		t.Fatalf("layeh VendorSpecific: %d % x %v", vendor, inner, err)
	}
	ip := encode(t, "ERX-Primary-Dns", "192.0.2.53")
	if !bytes.Equal(ip.Value, []byte{0, 0, 0x13, 0x0a, 4, 6, 192, 0, 2, 53}) {
		t.Fatalf("ERX-Primary-Dns % x", []byte(ip.Value))
	}
	n := encode(t, "WISPr-Bandwidth-Max-Up", "1000000")
	if !bytes.Equal(n.Value[4:], append([]byte{7, 6}, radius.NewInteger(1000000)...)) {
		t.Fatalf("WISPr integer % x", []byte(n.Value))
	}
	// A VSA value longer than fits in one attribute is refused with the name.
	a, _ := Builtin.Lookup("Cisco-AVPair")
	if _, err := a.Encode(strings.Repeat("x", 248)); err == nil || !strings.Contains(err.Error(), "Cisco-AVPair") {
		t.Fatalf("long VSA: %v", err)
	}
	if _, err := a.Encode(strings.Repeat("x", 247)); err != nil {
		t.Fatalf("247-octet VSA value: %v", err)
	}
}

// Tagged attributes (RFC 2868 §3) with tag 0: for integers the tag replaces the high octet
// of the 4-octet value (attribute length 6); a string goes without a tag octet, as
// FreeRADIUS sends it (freeradius_test.go compares with radclient), unless its first octet
// would read as a tag.
func TestTaggedAttributes(t *testing.T) {
	p := radius.New(radius.CodeAccessAccept, []byte("s"))
	_ = rfc2868.TunnelType_Add(p, 0, rfc2868.TunnelType(13) /* VLAN (RFC 3580) */)
	_ = rfc2868.TunnelMediumType_Add(p, 0, rfc2868.TunnelMediumType_Value_IEEE802)
	for _, c := range []struct {
		name, value string
		typ         radius.Type
		want        []byte // nil: as layeh.com/radius's rfc2868 helpers encode it
	}{
		{"Tunnel-Type", "VLAN", rfc2868.TunnelType_Type, nil},
		{"Tunnel-Medium-Type", "IEEE-802", rfc2868.TunnelMediumType_Type, nil},
		{"Tunnel-Private-Group-Id", "100", rfc2868.TunnelPrivateGroupID_Type, []byte("100")},
		{"Tunnel-Private-Group-Id", "\x05vlan", rfc2868.TunnelPrivateGroupID_Type, []byte("\x00\x05vlan")},
	} {
		e := encode(t, c.name, c.value)
		want := c.want
		if want == nil {
			want, _ = p.Lookup(c.typ)
		}
		if e.Type != c.typ || !bytes.Equal(e.Value, want) {
			t.Errorf("%s=%q: % x, want % x", c.name, c.value, []byte(e.Value), want)
		}
	}
	// Decoded by the rfc2868 helpers as VLAN 13 / IEEE-802 / "100".
	q := radius.New(radius.CodeAccessAccept, []byte("s"))
	for _, n := range [][2]string{{"Tunnel-Type", "VLAN"}, {"Tunnel-Medium-Type", "IEEE-802"}, {"Tunnel-Private-Group-Id", "100"}} {
		e := encode(t, n[0], n[1])
		q.Add(e.Type, e.Value)
	}
	if tag, v, err := rfc2868.TunnelType_Lookup(q); err != nil || tag != 0 || v != rfc2868.TunnelType(13) /* VLAN (RFC 3580) */ {
		t.Errorf("Tunnel-Type decodes as tag %d value %d (%v)", tag, v, err)
	}
	if _, v, err := rfc2868.TunnelPrivateGroupID_LookupString(q); err != nil || v != "100" {
		t.Errorf("Tunnel-Private-Group-Id decodes as %q (%v)", v, err)
	}
	// A tagged integer has 24 bits for its value.
	a, _ := Builtin.Lookup("Tunnel-Type")
	if _, err := a.Encode("16777216"); err == nil {
		t.Error("a tagged integer above 2^24-1 must be refused")
	}
	// Tagged vendor string, tag 0: no tag octet inside the VSA either.
	e := encode(t, "ERX-Service-Activate", "svc")
	if !bytes.Equal(e.Value[4:], []byte{65, 5, 's', 'v', 'c'}) {
		t.Errorf("tagged VSA % x", []byte(e.Value))
	}
}

// Bad values are refused with an error naming the attribute.
func TestEncodeErrorsNameAttribute(t *testing.T) {
	cases := [][2]string{
		{"Framed-MTU", "big"},
		{"Framed-MTU", "-1"},
		{"Framed-MTU", "4294967296"},
		{"Service-Type", "Framed-Usr"},
		{"Framed-IP-Address", "10.1.2"},
		{"Framed-IP-Address", "2001:db8::1"},
		{"Framed-IPv6-Address", "10.0.0.1"},
		{"Framed-IPv6-Prefix", "10.0.0.0/8"},
		{"Framed-IPv6-Prefix", "2001:db8::"},
		{"Class", "0xzz"},
		{"Class", "0xabc"}, // odd number of hex digits
		{"Class", "0x" + strings.Repeat("ab", 254)},
		{"Class", strings.Repeat("c", 254)},
		{"Filter-Id", strings.Repeat("f", 254)},
	}
	for _, c := range cases {
		a, ok := Builtin.Lookup(c[0])
		if !ok {
			t.Fatalf("%s missing", c[0])
		}
		short := c[1]
		if len(short) > 20 {
			short = short[:20] + "..."
		}
		if _, err := a.Encode(c[1]); err == nil {
			t.Errorf("%s=%q accepted", c[0], short)
		} else if !strings.Contains(err.Error(), "attribute "+c[0]+":") {
			t.Errorf("%s=%q: error %q does not name the attribute", c[0], short, err)
		}
	}
	if _, err := Builtin.Lookup("Framed-Mtu"); err {
		t.Error("lookup is case-sensitive like FreeRADIUS dictionaries")
	}
}

func TestParseDictionary(t *testing.T) {
	d, err := Parse("ATTRIBUTE\tMy-Attr\t200\tinteger\nVALUE\tMy-Attr\tOn\t1\nVENDOR\tAcme\t99\nBEGIN-VENDOR\tAcme\nATTRIBUTE\tAcme-Level\t3\tinteger\nEND-VENDOR\tAcme\nVALUE\tAcme-Level\tHigh\t9\n")
	if err != nil {
		t.Fatal(err)
	}
	a, ok := d.Lookup("My-Attr")
	if !ok || a.Type != 200 || a.Vendor != 0 {
		t.Fatalf("%+v", a)
	}
	if e, err := a.Encode("On"); err != nil || !bytes.Equal(e.Value, radius.NewInteger(1)) {
		t.Fatalf("named value: % x %v", []byte(e.Value), err)
	}
	v, ok := d.Lookup("Acme-Level")
	if !ok || v.Vendor != 99 || v.Type != 3 {
		t.Fatalf("%+v", v)
	}
	if e, err := v.Encode("High"); err != nil || !bytes.Equal(e.Value, []byte{0, 0, 0, 99, 3, 6, 0, 0, 0, 9}) {
		t.Fatalf("vendor named value: % x %v", []byte(e.Value), err)
	}
	// A line neither the library nor we can read is left out and counted, not fatal.
	b, err := Parse("ATTRIBUTE\tBroken\nATTRIBUTE\tFine\t7\tinteger\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Lookup("Fine"); !ok || b.Stats().Skipped["ATTRIBUTE without exactly name, number, type and flags"] != 1 {
		t.Fatalf("skipped %v", b.Stats().Skipped)
	}
}

// Every attribute of the builtin dictionary encodes a value of its type (no attribute of an
// unsupported type sneaks in), and reply attributes built from them marshal.
func TestBuiltinAllEncodable(t *testing.T) {
	sample := map[string]string{"string": "x", "octets": "0x01", "integer": "1", "ipaddr": "192.0.2.1",
		"ipv6addr": "2001:db8::1", "ipv6prefix": "2001:db8::/32"}
	p := radius.New(radius.CodeAccessAccept, []byte("s"))
	for _, name := range Builtin.Names() {
		a, _ := Builtin.Lookup(name)
		v, ok := sample[a.Kind()]
		if !ok {
			t.Errorf("%s has type %v, not encodable", name, a.kind)
			continue
		}
		e, err := a.Encode(v)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		p.Add(e.Type, e.Value)
	}
	if _, err := p.Encode(); err != nil {
		t.Fatal(err)
	}
	if _, ok := Builtin.Lookup("1"); ok {
		t.Error("numbers are not attribute names")
	}
}
