package diameter

import (
	"encoding/binary"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"
)

// The request path's codec, cheaper than go-diameter's for what a CCR holds (issue 34: its
// decoding and serializing were a fifth of a CCR-U's CPU and most of its allocations).
//
// decodeChecked builds a request's message from bytes checkAVPs found sound, as go-diameter's
// decoding would build it (the same dictionary types, the same datatype decoders, the same
// AVP fields), but with one allocation for every AVP struct, one for the pointers and one for
// the grouped AVPs (the string-like values are copied: OctetString is a string in go-diameter
// v4). Anything it is not sure of — an AVP the
// dictionary does not know, a value go-diameter's decoder refuses — makes it give up (nil),
// and the caller decodes with go-diameter: its answers to such requests (5004 with the AVP
// in Failed-AVP…) do not change.

// decodeChecked is the message of frame (header already decoded as h), or nil: decode it
// with go-diameter.
func decodeChecked(h *diam.Header, frame []byte, d *dict.Parser) *diam.Message {
	body := frame[diam.HeaderLength:]
	n, groups, ok := countAVPs(body, h.ApplicationID, d)
	if !ok {
		return nil
	}
	dec := decoder{app: h.ApplicationID, d: d, avps: make([]diam.AVP, n), ptrs: make([]*diam.AVP, n), groups: make([]diam.GroupedAVP, groups)}
	top, ok := dec.list(body)
	if !ok {
		return nil
	}
	m := newMessage(h.CommandCode, h.CommandFlags, h.ApplicationID, h.HopByHopID, h.EndToEndID, d)
	m.Header.MessageLength = uint32(len(frame))
	m.AVP = top
	return m
}

// countAVPs counts the AVPs of body, grouped ones' included, and the grouped ones; ok is
// false when one is unknown to the dictionary (go-diameter decides what that is).
func countAVPs(body []byte, app uint32, d *dict.Parser) (n, groups int, ok bool) {
	for len(body) >= 8 {
		code, flags := binary.BigEndian.Uint32(body[0:4]), body[4]
		length := int(binary.BigEndian.Uint32(body[4:8]) & 0xffffff)
		hdr, vendor := 8, uint32(0)
		if flags&avp.Vbit != 0 {
			hdr, vendor = 12, binary.BigEndian.Uint32(body[8:12])
		}
		typ, known := decodeType(app, code, vendor, d)
		if !known || length < hdr || length > len(body) {
			return 0, 0, false
		}
		n++
		if typ == datatype.GroupedType {
			cn, cg, cok := countAVPs(body[hdr:length], app, d)
			if !cok {
				return 0, 0, false
			}
			n, groups = n+cn, groups+cg+1
		}
		body = body[min((length+3)&^3, len(body)):]
	}
	return n, groups, len(body) == 0
}

type decoder struct {
	app    uint32
	d      *dict.Parser
	avps   []diam.AVP
	ptrs   []*diam.AVP
	groups []diam.GroupedAVP
}

// list decodes the AVPs of body into the decoder's next slots.
func (dec *decoder) list(body []byte) ([]*diam.AVP, bool) {
	// Reserve this level's pointers first: nested AVPs take the slots after them.
	count := 0
	for b := body; len(b) >= 8; count++ {
		length := int(binary.BigEndian.Uint32(b[4:8]) & 0xffffff)
		b = b[min((length+3)&^3, len(b)):]
	}
	out := dec.ptrs[:count:count]
	dec.ptrs = dec.ptrs[count:]
	for i := range out {
		out[i] = &dec.avps[0]
		dec.avps = dec.avps[1:]
	}
	for i := 0; len(body) >= 8; i++ {
		a := out[i]
		a.Code, a.Flags = binary.BigEndian.Uint32(body[0:4]), body[4]
		a.Length = int(binary.BigEndian.Uint32(body[4:8]) & 0xffffff)
		hdr := 8
		if a.Flags&avp.Vbit != 0 {
			hdr, a.VendorID = 12, binary.BigEndian.Uint32(body[8:12])
		}
		typ, _ := decodeType(dec.app, a.Code, a.VendorID, dec.d)
		payload := body[hdr:a.Length:a.Length]
		if typ == datatype.GroupedType {
			g := &dec.groups[0]
			dec.groups = dec.groups[1:]
			children, ok := dec.list(payload)
			if !ok {
				return nil, false
			}
			g.AVP = children
			a.Data = g
			if g.Len() != len(payload) {
				return nil, false // go-diameter would step over the group's padding differently
			}
		} else if a.Data = value(typ, payload); a.Data == nil {
			return nil, false
		}
		body = body[min((a.Length+3)&^3, len(body)):]
	}
	return out, true
}

// value is the data of a payload of a type other than Grouped, as go-diameter decodes it; nil
// when go-diameter's decoding of it would fail or lose the framing.
func value(typ datatype.TypeID, payload []byte) datatype.Type {
	switch typ {
	case datatype.UTF8StringType:
		return datatype.UTF8String(payload)
	case datatype.DiameterIdentityType:
		return datatype.DiameterIdentity(payload)
	case datatype.OctetStringType:
		return datatype.OctetString(payload)
	}
	v, err := datatype.Decode(typ, payload)
	if err != nil || v.Len() != len(payload) {
		// go-diameter steps to the next AVP by the value's length, not the AVP's: an Address of
		// 4 bytes (no family) decodes as 6, and go-diameter loses the framing of the rest (its
		// panic is answered 5004): so is this request.
		return nil
	}
	return v
}

// decodeType is the type go-diameter's decoding gives an AVP (dict.Parser.FindAVPByCode,
// which DecodeAVP asks, not FindAVPWithVendor, which checkAVPs asks), cached (avpTypes).
func decodeType(app, code, vendor uint32, d *dict.Parser) (datatype.TypeID, bool) {
	return typesIn(tableOf(app, d), app, code, vendor, d).decode()
}

// serialize is m's wire form, byte for byte what go-diameter's Serialize writes, in one
// allocation: the common data types are written in place (go-diameter allocates each
// AVP's payload, and each grouped AVP's, before copying it).
func serialize(m *diam.Message) []byte {
	b := make([]byte, m.Len())
	m.Header.SerializeTo(b[:diam.HeaderLength])
	off := diam.HeaderLength
	for _, a := range m.AVP {
		off += putAVP(b[off:], a)
	}
	return b
}

// putAVP writes a into b (zeroed) and returns its length with padding.
func putAVP(b []byte, a *diam.AVP) int {
	hl := 8
	if a.Flags&avp.Vbit != 0 {
		hl = 12
		binary.BigEndian.PutUint32(b[8:12], a.VendorID)
	}
	binary.BigEndian.PutUint32(b[0:4], a.Code)
	if g, ok := a.Data.(*diam.GroupedAVP); ok {
		// Its length is its children's as written (GroupedAVP.Len, which is no padding, walks
		// them again at every level).
		off := 0
		for _, c := range g.AVP {
			off += putAVP(b[hl+off:], c)
		}
		binary.BigEndian.PutUint32(b[4:8], uint32(hl+off))
		b[4] = a.Flags
		return hl + off
	}
	n := a.Data.Len()
	binary.BigEndian.PutUint32(b[4:8], uint32(hl+n))
	b[4] = a.Flags
	p := b[hl:]
	switch v := a.Data.(type) {
	case datatype.Unsigned32:
		binary.BigEndian.PutUint32(p, uint32(v))
	case datatype.Enumerated:
		binary.BigEndian.PutUint32(p, uint32(v))
	case datatype.Integer32:
		binary.BigEndian.PutUint32(p, uint32(v))
	case datatype.Unsigned64:
		binary.BigEndian.PutUint64(p, uint64(v))
	case datatype.OctetString:
		copy(p, v)
	case datatype.UTF8String:
		copy(p, v)
	case datatype.DiameterIdentity:
		copy(p, v)
	case datatype.IPFilterRule:
		copy(p, v)
	default:
		copy(p, v.Serialize())
	}
	pad := a.Data.Padding()
	clear(p[n : n+pad])
	return hl + n + pad
}

// serializable reports whether every AVP of l has data (go-diameter's Serialize fails
// otherwise).
func serializable(l []*diam.AVP) bool {
	for _, a := range l {
		if a == nil || a.Data == nil {
			return false
		}
		if g, isG := a.Data.(*diam.GroupedAVP); isG && (g == nil || !serializable(g.AVP)) {
			return false
		}
	}
	return true
}
