package diameter

import (
	"bytes"
	"encoding/binary"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"
)

// Lean requests (issue 34): building a CCR's AVP tree (decodeChecked) and then reading the
// few values Gx uses out of it was a fifth of a CCR-U's CPU and half its allocations. A
// LeanHandler reads what it needs from the request's bytes instead, and the server decodes only
// the head it reads itself. That is done only for a request that decodeChecked would decode
// (checkAVPs, leanValue): anything else takes the path of before, so answers do not change.

// LeanHandler is a Handler that can serve requests from their bytes.
type LeanHandler interface {
	Handler
	// ServeLean serves r from its AVPs as bytes (sound and lean: checkAVPs passed them);
	// r.Message has the header and the top-level Session-Id AVPs only. ok false: the request
	// is decoded whole and served by ServeWire (a WireHandler's) or ServeDiameter.
	ServeLean(r *Request, avps AVPs) (ans Answer, resultCode uint32, ok bool)
}

// Answer is a LeanHandler's or WireHandler's answer: a message, or its wire form when the
// handler wrote it (Writer; Message nil), sent as it is.
type Answer struct {
	Message *diam.Message
	Wire    []byte
}

// WireHandler is a Handler that can write its answers in wire form (Writer): the server serves
// a request decoded whole with ServeWire rather than ServeDiameter (a LeanHandler's lean
// requests with ServeLean), so that a request that is not lean gets its answer without AVP
// objects either.
type WireHandler interface {
	Handler
	ServeWire(r *Request) (ans Answer, resultCode uint32)
}

// AVPs is a list of AVPs as bytes: a request's body, or a grouped AVP's payload.
type AVPs struct {
	b   []byte
	app uint32
	t   *appTable // app's types (tableOf), looked up once per request
}

// RawAVP is one AVP as bytes.
type RawAVP struct {
	Code, Vendor uint32
	app          uint32
	t            *appTable
	Flags        uint8
	// Data is the payload without padding, aliasing the request's frame: copy what is kept.
	Data []byte
}

// Type is the AVP's data type as the request's decoding gives it (decodeType): looked up when
// asked, for the AVPs a handler reads.
func (a RawAVP) Type() datatype.TypeID {
	t, _ := typesIn(a.t, a.app, a.Code, a.Vendor, dict.Default).decode()
	return t
}

// Group is the AVPs of a grouped AVP.
func (a RawAVP) Group() AVPs { return AVPs{a.Data, a.app, a.t} }

// Next reads the first AVP of l into a, and l then holds the rest; false when l is empty. A
// cursor, not an iterator function: the callers' values stay on their stacks (a, written in
// place: a copy returned for every AVP read was a cost of its own).
func (l *AVPs) Next(a *RawAVP) bool {
	b := l.b
	if len(b) < 8 {
		return false
	}
	a.Code, a.Flags, a.app, a.t, a.Vendor = binary.BigEndian.Uint32(b[0:4]), b[4], l.app, l.t, 0
	length := int(binary.BigEndian.Uint32(b[4:8]) & 0xffffff)
	hdr := 8
	if a.Flags&avp.Vbit != 0 {
		hdr, a.Vendor = 12, binary.BigEndian.Uint32(b[8:12])
	}
	a.Data = b[hdr:length:length]
	l.b = b[min((length+3)&^3, len(b)):]
	return true
}

// leanValue reports whether the value of a sound AVP (checkAVPs) of the types t is one
// decodeChecked takes without go-diameter's decoder failing on it — known to the dictionary, a
// string, a grouped AVP (checkAVPs walked its AVPs: both lookups make it grouped), a
// fixed-size number of its size, an IPv4 or IPv6 Address — so that reading the bytes gives
// what decoding them gives. Anything else (another type, another address family) is left to
// the path of before.
func leanValue(t avpTypes, payload []byte) bool {
	typ, known := t.decode()
	if !known {
		return false
	}
	switch typ {
	case datatype.GroupedType:
		checked, _ := t.check()
		return checked == datatype.GroupedType
	case datatype.OctetStringType, datatype.UTF8StringType, datatype.DiameterIdentityType:
		return true
	case datatype.Unsigned32Type, datatype.Integer32Type, datatype.EnumeratedType, datatype.TimeType,
		datatype.Unsigned64Type, datatype.Integer64Type:
		return lengthFits(typ, payload)
	case datatype.AddressType: // its family's length when the family is 1 or 2
		if !lengthFits(typ, payload) {
			return false
		}
		family := binary.BigEndian.Uint16(payload)
		return family == 1 || family == 2
	}
	return false
}

// decodeLean is the head of a request the application's handler can serve from its bytes
// (LeanHandler, DecodeLean), nil when the request is to be decoded whole (decode): another
// application's, or a Destination-Realm or -Host destination refuses (it answers from the
// decoded AVPs; the head has none, so destination lets it through). into, when not nil, is
// an inline reader's head of its previous request, reused: its frame is then frame itself,
// which must stay as it is until the request is served.
func (s *Server) decodeLean(frame []byte, into *leanHead) *leanHead {
	if len(frame) < diam.HeaderLength {
		return nil
	}
	if _, isLean := s.opt.Apps[binary.BigEndian.Uint32(frame[8:12])].(LeanHandler); !isLean {
		return nil
	}
	return decodeHead(frame, func(code uint32, value []byte) bool { return s.misaddressed(code, string(value)) == 0 }, into)
}

// leanHead is a lean request as the server serves it, in one allocation: its frame and AVPs,
// its head (m) and the Request its handler is given.
type leanHead struct {
	frame []byte // the request's bytes, its own (in inline when they fit): the reader reuses its buffer
	// borrowed: frame is the reader's buffer (an inline reader's head), valid until the
	// request is served.
	borrowed bool
	inline   [leanInline]byte
	avps     AVPs
	m        diam.Message
	h        diam.Header
	ptrs     [headMax]*diam.AVP
	sids     [headMax]diam.AVP
	req      Request
}

// reusable is x once its request is served, for an inline reader's next request; nil when a
// handler may still hold its context (it waited on it: Done derived one).
func (x *leanHead) reusable() *leanHead {
	if d := x.req.rc.derived; d != nil && d != canceled {
		return nil
	}
	return x
}

// leanInline is the frame size a lean head holds without a second allocation: a CCR-U with a
// few usage reports (aaa-loadgen's is 184 bytes).
const leanInline = 256

// headMax bounds the Session-Id AVPs of a lean request's head: more are decoded whole.
const headMax = 2

// DecodeLean is a request's head, its header and its top-level Session-Id AVPs decoded as
// decodeChecked decodes them, and its AVPs as bytes, when it can be served from them; nil
// when it is to be decoded whole: not a plain request (an answer, the E bit), a command the
// dictionary does not know, AVPs checkAVPs faults or finds not lean, a
// Proxy-Info (the answer carries it back decoded), a top-level Destination-Realm or -Host of
// vendor 0 that addressed (nil: any) refuses.
func DecodeLean(frame []byte, addressed func(code uint32, value []byte) bool) (*diam.Message, AVPs) {
	x := decodeHead(frame, addressed, nil)
	if x == nil {
		return nil, AVPs{}
	}
	return &x.m, x.avps
}

// decodeHead is DecodeLean's, into a new head or, when into is not nil, into that one, its
// frame borrowed (decodeLean).
func decodeHead(frame []byte, addressed func(code uint32, value []byte) bool, into *leanHead) *leanHead {
	var h diam.Header
	if h.DecodeFromBytes(frame) != nil || h.CommandFlags&(diam.RequestFlag|diam.ErrorFlag) != diam.RequestFlag {
		return nil
	}
	t := tableOf(h.ApplicationID, dict.Default)
	if !knownCommand(t, h.ApplicationID, h.CommandCode) {
		return nil
	}
	body := frame[diam.HeaderLength:]
	if f, lean := check(body, t, h.ApplicationID, dict.Default); f != nil || !lean {
		return nil
	}
	x := into
	if x != nil {
		*x = leanHead{frame: frame, borrowed: true}
	} else if x = new(leanHead); len(frame) <= leanInline {
		x.frame = x.inline[:len(frame)]
		copy(x.frame, frame)
	} else {
		x.frame = bytes.Clone(frame)
	}
	x.avps = AVPs{x.frame[diam.HeaderLength:], h.ApplicationID, t}
	initMessage(&x.m, &x.h, h.CommandCode, h.CommandFlags, h.ApplicationID, h.HopByHopID, h.EndToEndID, dict.Default)
	x.h.MessageLength = uint32(len(frame))
	x.m.AVP = x.ptrs[:0]
	var a RawAVP
	for l := x.avps; ; {
		if !l.Next(&a) {
			return x
		}
		switch a.Code {
		case avp.ProxyInfo:
			return nil
		case avp.DestinationRealm, avp.DestinationHost:
			if a.Vendor == 0 && addressed != nil && (!StringType(a.Type()) || !addressed(a.Code, a.Data)) {
				return nil
			}
		case avp.SessionID:
			n, typ := len(x.m.AVP), a.Type()
			if n == headMax || typ == datatype.GroupedType {
				return nil
			}
			d := &x.sids[n]
			hdr := 8
			if a.Flags&avp.Vbit != 0 {
				hdr = 12
			}
			d.Code, d.Flags, d.VendorID, d.Length, d.Data = a.Code, a.Flags, a.Vendor, hdr+len(a.Data), value(typ, a.Data)
			if d.Data == nil {
				return nil
			}
			x.m.AVP = append(x.m.AVP, d)
		}
	}
}

// StringType reports whether a type's values are text String reads.
func StringType(t datatype.TypeID) bool {
	return t == datatype.DiameterIdentityType || t == datatype.UTF8StringType || t == datatype.OctetStringType
}
