package dict

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"

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
// Vendor-Specific (26) attributes in the vendor's format for vendor ones and inside RFC 6929
// extended attributes, with the tag octet of a tagged attribute removed. It allocates
// nothing: the result aliases attrs.
func (a *Attr) Find(attrs radius.Attributes) (radius.Attribute, bool) {
	for _, av := range attrs {
		switch {
		case a.ext != 0:
			if v, ok := a.inExtended(av); ok {
				return a.untag(v), true
			}
		case a.Vendor == 0:
			if av.Type == a.Type {
				return a.untag(av.Attribute), true
			}
		case av.Type == 26 && len(av.Attribute) >= 4 && binary.BigEndian.Uint32(av.Attribute) == a.Vendor:
			if v, ok := a.inVSA(av.Attribute[4:]); ok {
				return a.untag(v), true
			}
		}
	}
	return nil, false
}

// inVSA walks the vendor attributes of one Vendor-Specific (RFC 2865 §5.26 allows several)
// in the vendor's format.
func (a *Attr) inVSA(v []byte) (radius.Attribute, bool) {
	hdr := a.vtypeLen + a.vlenLen
	if a.vcont {
		hdr++
	}
	for len(v) >= hdr {
		var typ uint32
		switch a.vtypeLen {
		case 1:
			typ = uint32(v[0])
		case 2:
			typ = uint32(binary.BigEndian.Uint16(v))
		default:
			typ = binary.BigEndian.Uint32(v)
		}
		l := len(v) // format T,0: one attribute fills the rest
		switch a.vlenLen {
		case 1:
			l = int(v[a.vtypeLen])
		case 2:
			l = int(binary.BigEndian.Uint16(v[a.vtypeLen:]))
		}
		if l < hdr || l > len(v) {
			return nil, false
		}
		if radius.Type(typ) == a.Type {
			return radius.Attribute(v[hdr:l]), true
		}
		v = v[l:]
	}
	return nil, false
}

func (a *Attr) inExtended(av *radius.AVP) (radius.Attribute, bool) {
	if av.Type != a.ext {
		return nil, false
	}
	v := av.Attribute
	long := a.ext >= 245
	if a.Vendor == 0 {
		if len(v) < 1 || radius.Type(v[0]) != a.Type {
			return nil, false
		}
		if long {
			if len(v) < 2 || v[1]&0x80 != 0 { // a fragment: not reassembled here
				return nil, false
			}
			return v[2:], true
		}
		return v[1:], true
	}
	off := 1
	if long {
		off = 2
	}
	if len(v) < off+5 || v[0] != 26 || (long && v[1]&0x80 != 0) ||
		binary.BigEndian.Uint32(v[off:]) != a.Vendor || radius.Type(v[off+4]) != a.Type {
		return nil, false
	}
	return v[off+5:], true
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
	case dictionary.AttributeInteger, dictionary.AttributeDate:
		if len(v) != 4 {
			return Value{}, false
		}
		return Value{Num: binary.BigEndian.Uint32(v), IsNum: true}, true
	case dictionary.AttributeShort:
		if len(v) != 2 {
			return Value{}, false
		}
		return Value{Num: uint32(binary.BigEndian.Uint16(v)), IsNum: true}, true
	case dictionary.AttributeByte:
		if len(v) != 1 {
			return Value{}, false
		}
		return Value{Num: uint32(v[0]), IsNum: true}, true
	case dictionary.AttributeSigned:
		if len(v) != 4 {
			return Value{}, false
		}
		return Value{Str: strconv.Itoa(int(int32(binary.BigEndian.Uint32(v))))}, true
	case dictionary.AttributeInteger64:
		if len(v) != 8 {
			return Value{}, false
		}
		return Value{Str: strconv.FormatUint(binary.BigEndian.Uint64(v), 10)}, true
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
	case kindComboIP:
		ip, ok := netip.AddrFromSlice(v)
		if !ok {
			return Value{}, false
		}
		return Value{Str: ip.String()}, true
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
	case dictionary.AttributeIPv4Prefix:
		if len(v) != 6 || v[1] > 32 {
			return Value{}, false
		}
		return Value{Str: netip.PrefixFrom(netip.AddrFrom4([4]byte(v[2:])), int(v[1])).String()}, true
	case dictionary.AttributeEther:
		if len(v) != 6 {
			return Value{}, false
		}
		return Value{Str: net.HardwareAddr(v).String()}, true
	case dictionary.AttributeIFID:
		if len(v) != 8 {
			return Value{}, false
		}
		return Value{Str: fmt.Sprintf("%04x:%04x:%04x:%04x", binary.BigEndian.Uint16(v), binary.BigEndian.Uint16(v[2:]),
			binary.BigEndian.Uint16(v[4:]), binary.BigEndian.Uint16(v[6:]))}, true
	}
	return Value{Str: string(v)}, true
}
