package dict

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/dictionary"
)

// Encoded is an attribute value encoded for the wire: a standard attribute, the inner
// vendor attribute wrapped into Vendor-Specific (26) when Vendor != 0, or an RFC 6929
// extended attribute (Type 241-246).
type Encoded struct {
	Type  radius.Type
	Value radius.Attribute
}

// Encode turns a textual value ("1492", "10.0.0.1", "Framed-User", "0x0a0b") into the wire
// form of the attribute, with an error naming the attribute when the value does not fit.
// The encodings are FreeRADIUS 3.2's (compared on the wire in freeradius_test.go).
func (a *Attr) Encode(text string) (Encoded, error) { return a.EncodeTag(text, 0) }

// EncodeTag is Encode with a tag (1-31, RFC 2868) for an attribute that has one (has_tag);
// tag 0 is the tag-less form.
func (a *Attr) EncodeTag(text string, tag int) (Encoded, error) {
	e, err := a.encode(text, tag)
	if err != nil {
		return Encoded{}, fmt.Errorf("attribute %s: %w", a.Name, err)
	}
	return e, nil
}

// Tagged tells whether the attribute carries a tag (has_tag).
func (a *Attr) Tagged() bool { return a.tagged }

func (a *Attr) encode(text string, tag int) (Encoded, error) {
	if a.noWire != "" {
		return Encoded{}, fmt.Errorf("cannot be sent: %s", a.noWire)
	}
	if tag != 0 && (!a.tagged || tag < 1 || tag > 0x1f) {
		if !a.tagged {
			return Encoded{}, fmt.Errorf("has no tag (the dictionary does not give it has_tag)")
		}
		return Encoded{}, fmt.Errorf("tag %d is not 1-31", tag)
	}
	v, err := a.encodeValue(text)
	if err != nil {
		return Encoded{}, err
	}
	if a.tagged { // RFC 2868 §3
		if a.kind == dictionary.AttributeInteger {
			// The tag is the first octet of the integer field, leaving 24 bits of value.
			if v[0] != 0 {
				return Encoded{}, fmt.Errorf("%q does not fit in 24 bits (tagged)", text)
			}
			v[0] = byte(tag)
		} else if tag != 0 || len(v) == 0 || v[0] <= 0x1f {
			// A string with tag 0 goes without a tag octet, as FreeRADIUS sends it, unless its
			// first octet would be read as a tag (RFC 2868 §3.6: 0x01-0x1f are tags): then
			// an explicit tag 0 keeps the value intact.
			v = append([]byte{byte(tag)}, v...)
		}
	}
	return a.wrap(v)
}

// wrap puts an encoded value into its attribute: standard, Vendor-Specific in the vendor's
// format, or extended (RFC 6929 §2; long extended with its flags octet, one fragment).
func (a *Attr) wrap(v []byte) (Encoded, error) {
	var hdr []byte
	if a.ext != 0 {
		long := a.ext >= 245
		if a.Vendor != 0 { // Extended-Vendor-Specific: ext-type 26, vendor, vendor type
			hdr = append(hdr, 26)
			if long {
				hdr = append(hdr, 0)
			}
			hdr = binary.BigEndian.AppendUint32(hdr, a.Vendor)
			hdr = append(hdr, byte(a.Type))
		} else {
			hdr = append(hdr, byte(a.Type))
			if long {
				hdr = append(hdr, 0)
			}
		}
		return a.fit(a.ext, hdr, v)
	}
	if a.Vendor == 0 {
		return a.fit(a.Type, nil, v)
	}
	hdr = binary.BigEndian.AppendUint32(hdr, a.Vendor)
	switch a.vtypeLen {
	case 1:
		hdr = append(hdr, byte(a.Type))
	case 2:
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(a.Type))
	case 4:
		hdr = binary.BigEndian.AppendUint32(hdr, uint32(a.Type))
	}
	n := a.vtypeLen + a.vlenLen + len(v)
	if a.vcont {
		n++
	}
	switch a.vlenLen {
	case 1:
		if n > 255 {
			return Encoded{}, fmt.Errorf("value too long")
		}
		hdr = append(hdr, byte(n))
	case 2:
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	}
	if a.vcont {
		hdr = append(hdr, 0) // continuation flag clear: one fragment
	}
	return a.fit(26, hdr, v)
}

// fit checks that header and value fit one attribute (253 octets of value).
func (a *Attr) fit(t radius.Type, hdr, v []byte) (Encoded, error) {
	if len(hdr)+len(v) > 253 {
		if len(hdr) == 0 {
			return Encoded{}, fmt.Errorf("value longer than 253 octets")
		}
		return Encoded{}, fmt.Errorf("value too long (at most %d octets here)", 253-len(hdr))
	}
	if len(hdr) == 0 {
		return Encoded{Type: t, Value: v}, nil // v is the encoder's own: no copy
	}
	return Encoded{Type: t, Value: append(hdr, v...)}, nil
}

func (a *Attr) encodeValue(text string) ([]byte, error) {
	switch a.kind {
	case dictionary.AttributeString:
		if len(text) > 253 {
			return nil, fmt.Errorf("value longer than 253 octets")
		}
		return []byte(text), nil
	case dictionary.AttributeOctets:
		return octets(text)
	case dictionary.AttributeABinary:
		if !strings.HasPrefix(text, "0x") {
			return nil, fmt.Errorf("an Ascend binary filter is taken as 0x hex only")
		}
		b, err := octets(text)
		if err != nil || len(b) > ascendFilterLen {
			return nil, fmt.Errorf("%q is not hex of at most %d octets", text, ascendFilterLen)
		}
		// FreeRADIUS sends the filter structure whole, zero-padded.
		return append(b, make([]byte, ascendFilterLen-len(b))...), nil
	case dictionary.AttributeInteger, dictionary.AttributeShort, dictionary.AttributeByte:
		bits := a.uintBits()
		n, ok := a.values[text]
		if !ok {
			var err error
			if h, isHex := strings.CutPrefix(text, "0x"); isHex {
				n, err = strconv.ParseUint(h, 16, bits)
			} else {
				n, err = strconv.ParseUint(text, 10, bits)
			}
			if err != nil {
				return nil, fmt.Errorf("%q is not a %d-bit unsigned number or a named value", text, bits)
			}
		}
		if n >= 1<<bits {
			return nil, fmt.Errorf("named value %q (%d) does not fit in %d bits", text, n, bits)
		}
		b := binary.BigEndian.AppendUint64(nil, n)
		return b[8-bits/8:], nil
	case dictionary.AttributeSigned:
		n, err := strconv.ParseInt(text, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not a 32-bit signed number", text)
		}
		return binary.BigEndian.AppendUint32(nil, uint32(int32(n))), nil
	case dictionary.AttributeInteger64:
		n, err := strconv.ParseUint(text, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a 64-bit unsigned number", text)
		}
		return binary.BigEndian.AppendUint64(nil, n), nil
	case dictionary.AttributeDate:
		n, err := strconv.ParseUint(text, 10, 32)
		if err != nil {
			t, terr := time.Parse(time.RFC3339, text)
			if terr != nil || t.Unix() < 0 || t.Unix() > math.MaxUint32 {
				return nil, fmt.Errorf("%q is not seconds since 1970 or an RFC 3339 time", text)
			}
			n = uint64(t.Unix())
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
		if err != nil || !ip.Is6() || ip.Is4In6() {
			return nil, fmt.Errorf("%q is not an IPv6 address", text)
		}
		b := ip.As16()
		return b[:], nil
	case kindComboIP:
		ip, err := netip.ParseAddr(text)
		if err != nil || ip.Zone() != "" {
			return nil, fmt.Errorf("%q is not an IPv4 or IPv6 address", text)
		}
		return ip.Unmap().AsSlice(), nil
	case dictionary.AttributeIPv6Prefix:
		_, n, err := net.ParseCIDR(text)
		if err != nil || n.IP.To4() != nil {
			return nil, fmt.Errorf("%q is not an IPv6 prefix", text)
		}
		// FreeRADIUS 3 sends the whole 16-octet address (RFC 3162 §2.3 allows the prefix's
		// octets alone; FreeRADIUS decodes both).
		ones, _ := n.Mask.Size()
		return append([]byte{0, byte(ones)}, n.IP.To16()...), nil
	case dictionary.AttributeIPv4Prefix:
		p, err := netip.ParsePrefix(text)
		if err != nil || !p.Addr().Is4() {
			return nil, fmt.Errorf("%q is not an IPv4 prefix", text)
		}
		b := p.Masked().Addr().As4()
		return append([]byte{0, byte(p.Bits())}, b[:]...), nil // RFC 6572 §3.4
	case dictionary.AttributeIFID:
		return ifid(text)
	case dictionary.AttributeEther:
		mac, err := net.ParseMAC(text)
		if err != nil || len(mac) != 6 {
			return nil, fmt.Errorf("%q is not an Ethernet address", text)
		}
		return mac, nil
	}
	return nil, fmt.Errorf("type %s is not supported in replies", kindName(a.kind))
}

// uintBits is the width of an integer, short or byte attribute.
func (a *Attr) uintBits() int {
	switch a.kind {
	case dictionary.AttributeShort:
		return 16
	case dictionary.AttributeByte:
		return 8
	}
	return 32
}

// EncodeUint is Encode of a number given as one (a Lua policy's reply("Session-Timeout",
// 3600)) without formatting it as text to parse it back. ok is false when the attribute is
// not a plain integer, short or byte, or n does not fit: Encode the text then, which
// encodes it or says why not.
func (a *Attr) EncodeUint(n uint64) (e Encoded, ok bool, err error) {
	switch a.kind {
	case dictionary.AttributeInteger, dictionary.AttributeShort, dictionary.AttributeByte:
	default:
		return Encoded{}, false, nil
	}
	bits := a.uintBits()
	if a.noWire != "" || a.tagged || n >= 1<<bits {
		return Encoded{}, false, nil
	}
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8), n)
	e, err = a.wrap(b[8-bits/8:])
	if err != nil {
		return Encoded{}, true, fmt.Errorf("attribute %s: %w", a.Name, err)
	}
	return e, true, nil
}

// ascendFilterLen is the size of an Ascend binary filter (FreeRADIUS's ascend_filter_t).
const ascendFilterLen = 32

// octets is "0x" and hex digits, or the text itself.
func octets(text string) ([]byte, error) {
	h, ok := strings.CutPrefix(text, "0x")
	if !ok {
		if len(text) > 253 {
			return nil, fmt.Errorf("value longer than 253 octets")
		}
		return []byte(text), nil
	}
	if len(h)%2 != 0 || len(h) > 2*253 {
		return nil, fmt.Errorf("%q is not hex of at most 253 octets", text)
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return nil, fmt.Errorf("%q is not hex", text)
	}
	return b, nil
}

// ifid is an interface identifier (RFC 3162 §2.2) written as four groups of hex digits.
func ifid(text string) ([]byte, error) {
	parts := strings.Split(text, ":")
	if len(parts) != 4 {
		return nil, fmt.Errorf("%q is not an interface id (xxxx:xxxx:xxxx:xxxx)", text)
	}
	out := make([]byte, 0, 8)
	for _, p := range parts {
		n, err := strconv.ParseUint(p, 16, 16)
		if err != nil || p == "" {
			return nil, fmt.Errorf("%q is not an interface id (xxxx:xxxx:xxxx:xxxx)", text)
		}
		out = binary.BigEndian.AppendUint16(out, uint16(n))
	}
	return out, nil
}
