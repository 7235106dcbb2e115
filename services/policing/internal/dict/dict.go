// Package dict resolves RADIUS attributes by dictionary name (as in FreeRADIUS) so that
// subscriber profiles can name any reply attribute, vendor-specific ones included.
package dict

import (
	_ "embed"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"layeh.com/radius"
	"layeh.com/radius/dictionary"
)

//go:embed dictionary
var builtin string

type memFile struct {
	*strings.Reader
	name string
}

func (m memFile) Name() string { return m.name }
func (m memFile) Close() error { return nil }

// Attr is a resolved attribute ready to encode values.
type Attr struct {
	Name   string
	Type   radius.Type // attribute number (vendor type for VSAs)
	Vendor uint32      // 0 for standard attributes
	kind   dictionary.AttributeType
	tagged bool
	values map[string]uint32
}

// Dict is a parsed dictionary indexed by attribute name.
type Dict struct{ byName map[string]*Attr }

// Builtin is the dictionary shipped in the binary.
var Builtin = mustParse(builtin)

func mustParse(text string) *Dict {
	d, err := Parse(text)
	if err != nil {
		panic(err)
	}
	return d
}

// Parse reads a FreeRADIUS-format dictionary.
func Parse(text string) (*Dict, error) {
	p := dictionary.Parser{}
	raw, err := p.Parse(memFile{strings.NewReader(text), "dictionary"})
	if err != nil {
		return nil, err
	}
	d := &Dict{byName: map[string]*Attr{}}
	add := func(a *dictionary.Attribute, vendor uint32) {
		d.byName[a.Name] = &Attr{Name: a.Name, Type: radius.Type(a.OID[0]), Vendor: vendor, kind: a.Type,
			tagged: a.FlagHasTag.Valid && a.FlagHasTag.Bool, values: map[string]uint32{}}
	}
	for _, a := range raw.Attributes {
		add(a, 0)
	}
	for _, v := range raw.Vendors {
		for _, a := range v.Attributes {
			add(a, uint32(v.Number))
		}
		for _, val := range v.Values {
			if a := d.byName[val.Attribute]; a != nil {
				a.values[val.Name] = uint32(val.Number)
			}
		}
	}
	for _, val := range raw.Values {
		if a := d.byName[val.Attribute]; a != nil {
			a.values[val.Name] = uint32(val.Number)
		}
	}
	return d, nil
}

// Lookup returns the attribute of that name.
func (d *Dict) Lookup(name string) (*Attr, bool) {
	a, ok := d.byName[name]
	return a, ok
}

// Encoded is an attribute value encoded for the wire: a standard attribute, or the inner
// vendor attribute wrapped into Vendor-Specific (26) when Vendor != 0.
type Encoded struct {
	Type  radius.Type
	Value radius.Attribute
}

// Encode turns a textual value ("1492", "10.0.0.1", "Framed-User", "0x0a0b") into the wire
// form of the attribute, with an error naming the attribute when the value does not fit.
func (a *Attr) Encode(text string) (Encoded, error) {
	v, err := a.encodeValue(text)
	if err != nil {
		return Encoded{}, fmt.Errorf("attribute %s: %w", a.Name, err)
	}
	if a.tagged { // tag 0 (RFC 2868 §3)
		if a.kind == dictionary.AttributeInteger {
			// The tag is the first octet of the integer field, leaving 24 bits of value.
			if v[0] != 0 {
				return Encoded{}, fmt.Errorf("attribute %s: %q does not fit in 24 bits (tagged)", a.Name, text)
			}
		} else if len(v) == 0 || v[0] <= 0x1f {
			// A string with tag 0 goes without a tag octet, as FreeRADIUS sends it, unless its
			// first octet would be read as a tag (RFC 2868 §3.6: 0x01-0x1f are tags): then
			// an explicit tag 0 keeps the value intact.
			v = append([]byte{0}, v...)
		}
	}
	if a.Vendor == 0 {
		return Encoded{Type: a.Type, Value: v}, nil
	}
	if len(v) > 247 {
		return Encoded{}, fmt.Errorf("attribute %s: value too long", a.Name)
	}
	vsa := make([]byte, 6+len(v))
	binary.BigEndian.PutUint32(vsa, a.Vendor)
	vsa[4] = byte(a.Type)
	vsa[5] = byte(2 + len(v))
	copy(vsa[6:], v)
	return Encoded{Type: 26, Value: vsa}, nil
}

func (a *Attr) encodeValue(text string) ([]byte, error) {
	switch a.kind {
	case dictionary.AttributeString:
		if len(text) > 253 {
			return nil, fmt.Errorf("value longer than 253 octets")
		}
		return []byte(text), nil
	case dictionary.AttributeOctets:
		if len(text) > 253 && !strings.HasPrefix(text, "0x") {
			return nil, fmt.Errorf("value longer than 253 octets")
		}
		if h, ok := strings.CutPrefix(text, "0x"); ok {
			if len(h)%2 != 0 || len(h) > 2*253 {
				return nil, fmt.Errorf("%q is not hex of at most 253 octets", text)
			}
			b := make([]byte, len(h)/2)
			for i := range b {
				n, err := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
				if err != nil {
					return nil, fmt.Errorf("%q is not hex", text)
				}
				b[i] = byte(n)
			}
			return b, nil
		}
		return []byte(text), nil
	case dictionary.AttributeInteger:
		if n, ok := a.values[text]; ok {
			return binary.BigEndian.AppendUint32(nil, n), nil
		}
		n, err := strconv.ParseUint(text, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer or a named value", text)
		}
		return binary.BigEndian.AppendUint32(nil, uint32(n)), nil
	case dictionary.AttributeIPAddr:
		ip, err := netip.ParseAddr(text)
		if err != nil || !ip.Is4() {
			return nil, fmt.Errorf("%q is not an IPv4 address", text)
		}
		b := ip.As4()
		return b[:], nil
	case dictionary.AttributeIPv6Addr:
		ip, err := netip.ParseAddr(text)
		if err != nil || !ip.Is6() {
			return nil, fmt.Errorf("%q is not an IPv6 address", text)
		}
		b := ip.As16()
		return b[:], nil
	case dictionary.AttributeIPv6Prefix:
		_, n, err := net.ParseCIDR(text)
		if err != nil || n.IP.To4() != nil {
			return nil, fmt.Errorf("%q is not an IPv6 prefix", text)
		}
		ones, _ := n.Mask.Size()
		return append([]byte{0, byte(ones)}, n.IP[:(ones+7)/8]...), nil
	}
	return nil, fmt.Errorf("type %v is not supported in replies", a.kind)
}
