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
	hl := putHeader(b, a.Code, a.Flags, a.VendorID)
	if g, ok := a.Data.(*diam.GroupedAVP); ok {
		// Its length is its children's as written (GroupedAVP.Len, which is no padding, walks
		// them again at every level).
		off := 0
		for _, c := range g.AVP {
			off += putAVP(b[hl+off:], c)
		}
		putLength(b, hl+off)
		return hl + off
	}
	n := a.Data.Len()
	putLength(b, hl+n)
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

// putHeader writes an AVP's header but its length into b and returns the header's length: the
// vendor is written when the flags have the V bit, as go-diameter does.
func putHeader(b []byte, code uint32, flags uint8, vendor uint32) int {
	binary.BigEndian.PutUint32(b[0:4], code)
	b[4] = flags
	if flags&avp.Vbit != 0 {
		binary.BigEndian.PutUint32(b[8:12], vendor)
	}
	return headerLen(flags)
}

func headerLen(flags uint8) int {
	if flags&avp.Vbit != 0 {
		return 12
	}
	return 8
}

// putLength writes the length of the AVP at b (its flags kept).
func putLength(b []byte, n int) {
	b[5], b[6], b[7] = byte(n>>16), byte(n>>8), byte(n)
}

// Writer writes a message's wire form as its AVPs come, with no AVP objects (issue 34:
// building a CCA's AVPs, then serializing them, were a tenth of a CCR-U's CPU and a third of
// its allocations): byte for byte what serialize writes for the same AVPs (a test compares
// them). Start it with Header; Bytes is the message. A Writer on the stack writes a message of
// up to len(first) bytes without allocating before Bytes: first is an array, not a slice of
// one (a pointer to itself would send it to the heap).
type Writer struct {
	first [512]byte
	n     int    // bytes written in first, while more is nil
	more  []byte // the message once past first
	// open are the offsets of the grouped AVPs begun and not ended.
	open  [8]int
	depth int
}

// Header starts the message.
func (w *Writer) Header(flags uint8, cmd, app, hopByHop, endToEnd uint32) {
	clear(w.first[:w.n]) // grow gives first's bytes as they are: zero unless written before
	w.n, w.more, w.depth = 0, nil, 0
	h := diam.Header{Version: 1, CommandFlags: flags, CommandCode: cmd, ApplicationID: app, HopByHopID: hopByHop, EndToEndID: endToEnd}
	h.SerializeTo(w.grow(diam.HeaderLength))
}

// grow extends the message by n zero bytes and returns them.
func (w *Writer) grow(n int) []byte {
	if w.more == nil && w.n+n <= len(w.first) {
		w.n += n
		return w.first[w.n-n : w.n]
	}
	if w.more == nil {
		w.more = append(make([]byte, 0, 2*len(w.first)), w.first[:w.n]...)
	}
	w.more = append(w.more, make([]byte, n)...)
	return w.more[len(w.more)-n:]
}

// written is the message so far.
func (w *Writer) written() []byte {
	if w.more != nil {
		return w.more
	}
	return w.first[:w.n]
}

// AVP writes a.
func (w *Writer) AVP(a *diam.AVP) {
	switch v := a.Data.(type) { // an answer's head (Identity.WriteAnswer): no Len, no putAVP
	case datatype.UTF8String:
		w.String(a.Code, a.Flags, a.VendorID, string(v))
		return
	case datatype.DiameterIdentity:
		w.String(a.Code, a.Flags, a.VendorID, string(v))
		return
	case datatype.Unsigned32:
		w.U32(a.Code, a.Flags, a.VendorID, uint32(v))
		return
	}
	n := a.Len()
	if written := putAVP(w.grow(n), a); written != n {
		panic("diameter: an AVP's length is not what it writes")
	}
}

// U32 writes an AVP of a 4-octet value (Unsigned32, Enumerated, Time…).
func (w *Writer) U32(code uint32, flags uint8, vendor uint32, v uint32) {
	w.number(code, flags, vendor, 4, uint64(v))
}

// U64 writes an AVP of an 8-octet value (Unsigned64…).
func (w *Writer) U64(code uint32, flags uint8, vendor uint32, v uint64) {
	w.number(code, flags, vendor, 8, v)
}

func (w *Writer) number(code uint32, flags uint8, vendor uint32, size int, v uint64) {
	hl := headerLen(flags)
	b := w.grow(hl + size)
	putHeader(b, code, flags, vendor)
	if size == 4 {
		binary.BigEndian.PutUint32(b[hl:], uint32(v))
	} else {
		binary.BigEndian.PutUint64(b[hl:], v)
	}
	putLength(b, hl+size)
}

// String writes an AVP of an octet string (OctetString, UTF8String, DiameterIdentity…),
// padded.
func (w *Writer) String(code uint32, flags uint8, vendor uint32, s string) {
	hl := headerLen(flags)
	b := w.grow(hl + (len(s)+3)&^3)
	putHeader(b, code, flags, vendor)
	copy(b[hl:], s)
	putLength(b, hl+len(s))
}

// Begin starts a grouped AVP: the AVPs written until its End are its own.
func (w *Writer) Begin(code uint32, flags uint8, vendor uint32) {
	if w.depth == len(w.open) {
		panic("diameter: grouped AVPs nested too deep")
	}
	w.open[w.depth] = len(w.written())
	w.depth++
	putHeader(w.grow(headerLen(flags)), code, flags, vendor)
}

// End ends the grouped AVP begun last.
func (w *Writer) End() {
	w.depth--
	b := w.written()
	at := w.open[w.depth]
	putLength(b[at:], len(b)-at)
}

// Bytes is the message written (its length set), in a slice of its own.
func (w *Writer) Bytes() []byte { return w.AppendTo(nil) }

// AppendTo appends the message written (its length set) to dst.
func (w *Writer) AppendTo(dst []byte) []byte {
	if w.depth != 0 {
		panic("diameter: a grouped AVP not ended")
	}
	b := w.written()
	n := len(b)
	b[1], b[2], b[3] = byte(n>>16), byte(n>>8), byte(n)
	return append(dst, b...)
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
