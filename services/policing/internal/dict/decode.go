package dict

import (
	"encoding/binary"
	"net/netip"

	"layeh.com/radius"
	"layeh.com/radius/dictionary"
)

// Value is a decoded attribute value: a number for integer attributes, else text (octets
// as their raw bytes, addresses in their usual notation).
type Value struct {
	Num   uint32
	Str   string
	IsNum bool
}

// Find returns the first occurrence of the attribute in attrs, looking inside
// Vendor-Specific (26) attributes for vendor ones, with the tag octet of a tagged attribute
// removed. It allocates nothing: the result aliases attrs.
func (a *Attr) Find(attrs radius.Attributes) (radius.Attribute, bool) {
	for _, av := range attrs {
		if a.Vendor == 0 {
			if av.Type == a.Type {
				return a.untag(av.Attribute), true
			}
			continue
		}
		if av.Type != 26 || len(av.Attribute) < 6 || binary.BigEndian.Uint32(av.Attribute) != a.Vendor {
			continue
		}
		// One Vendor-Specific may carry several vendor attributes (RFC 2865 §5.26).
		for v := av.Attribute[4:]; len(v) >= 2; {
			l := int(v[1])
			if l < 2 || l > len(v) {
				break
			}
			if radius.Type(v[0]) == a.Type {
				return a.untag(radius.Attribute(v[2:l])), true
			}
			v = v[l:]
		}
	}
	return nil, false
}

func (a *Attr) untag(v radius.Attribute) radius.Attribute {
	if !a.tagged || len(v) == 0 {
		return v
	}
	if a.kind == dictionary.AttributeInteger {
		if len(v) == 4 {
			return radius.Attribute{0, v[1], v[2], v[3]}
		}
		return v
	}
	if v[0] <= 0x1f { // a tag (RFC 2868 §3.1); above it the octet belongs to the value
		return v[1:]
	}
	return v
}

// Decode reads a value found by Find. ok is false when the value does not have the
// attribute's format (an integer that is not 4 octets, an address of the wrong size).
func (a *Attr) Decode(v radius.Attribute) (Value, bool) {
	switch a.kind {
	case dictionary.AttributeInteger:
		if len(v) != 4 {
			return Value{}, false
		}
		return Value{Num: binary.BigEndian.Uint32(v), IsNum: true}, true
	case dictionary.AttributeIPAddr:
		if len(v) != 4 {
			return Value{}, false
		}
		return Value{Str: netip.AddrFrom4([4]byte(v)).String()}, true
	case dictionary.AttributeIPv6Addr:
		if len(v) != 16 {
			return Value{}, false
		}
		return Value{Str: netip.AddrFrom16([16]byte(v)).String()}, true
	case dictionary.AttributeIPv6Prefix:
		if len(v) < 2 || int(v[1]) > 128 || len(v)-2 > 16 {
			return Value{}, false
		}
		var b [16]byte
		copy(b[:], v[2:])
		p, err := netip.AddrFrom16(b).Prefix(int(v[1]))
		if err != nil {
			return Value{}, false
		}
		return Value{Str: p.String()}, true
	}
	return Value{Str: string(v)}, true
}
