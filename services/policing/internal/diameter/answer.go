package diameter

import (
	"sync/atomic"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"
)

// Identity is this node's Diameter identity; it starts every answer.
type Identity struct {
	Host  string
	Realm string
}

// Answer starts the answer to req: same header identifiers, the request's P flag, the E
// flag set for protocol errors (3xxx) and only then (RFC 6733 §3, §7.2), Session-Id first
// when the request has one, then Result-Code, our Origin-Host/Origin-Realm and the
// request's Proxy-Info AVPs in their order (§6.2).
func (id Identity) Answer(req *diam.Message, code uint32) *diam.Message {
	a := newAnswer(req.Header.CommandCode, answerFlags(req, code), req.Header.ApplicationID,
		req.Header.HopByHopID, req.Header.EndToEndID, req.Dictionary())
	id.answerAVPs(req, code, a.AddAVP)
	return a
}

// WriteAnswer is Answer written into w (Writer: its bytes are Answer's serialized).
func (id Identity) WriteAnswer(w *Writer, req *diam.Message, code uint32) {
	w.Header(answerFlags(req, code), req.Header.CommandCode, req.Header.ApplicationID,
		req.Header.HopByHopID, req.Header.EndToEndID)
	id.answerAVPs(req, code, w.AVP)
}

func answerFlags(req *diam.Message, code uint32) uint8 {
	flags := req.Header.CommandFlags & diam.ProxiableFlag
	if code >= 3000 && code < 4000 {
		flags |= diam.ErrorFlag
	}
	return flags
}

// answerAVPs adds an answer's AVPs, in their order, to what add builds.
func (id Identity) answerAVPs(req *diam.Message, code uint32, add func(*diam.AVP)) {
	if sid := SessionIDAVP(req); sid != nil && sid.Flags == avp.Mbit {
		add(sid) // as the answer sends it: shared, not copied (serializing only reads it)
	} else if sid != nil {
		add(diam.NewAVP(avp.SessionID, avp.Mbit, 0, sid.Data))
	}
	add(resultCodeAVP(code))
	host, realm := id.avps()
	add(host)
	add(realm)
	for _, p := range req.AVP {
		if p.Code == avp.ProxyInfo && p.VendorID == 0 {
			add(p)
		}
	}
}

// SessionIDAVP is the request's Session-Id AVP (nil without one): go-diameter's FindAVP
// allocates, this does not.
func SessionIDAVP(m *diam.Message) *diam.AVP {
	for _, a := range m.AVP {
		if a.Code == avp.SessionID && a.VendorID == 0 {
			return a
		}
	}
	return nil
}

// Answers share AVPs that never change (serializing only reads them): a node's Origin-Host
// and Origin-Realm, the frequent Result-Codes. Nothing may modify an answer's AVPs.
var (
	lastIdentity atomic.Pointer[identityAVPs]
	successAVP   = diam.NewAVP(avp.ResultCode, avp.Mbit, 0, datatype.Unsigned32(diam.Success))
)

type identityAVPs struct {
	id          Identity
	host, realm *diam.AVP
}

func (id Identity) avps() (host, realm *diam.AVP) {
	if c := lastIdentity.Load(); c != nil && c.id == id {
		return c.host, c.realm
	}
	c := &identityAVPs{id: id, host: diam.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity(id.Host)),
		realm: diam.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity(id.Realm))}
	lastIdentity.Store(c)
	return c.host, c.realm
}

func resultCodeAVP(code uint32) *diam.AVP {
	if code == diam.Success {
		return successAVP
	}
	return diam.NewAVP(avp.ResultCode, avp.Mbit, 0, datatype.Unsigned32(code))
}

// newMessage is diam.NewMessage in one allocation rather than two (the message and its
// header together).
func newMessage(cmd uint32, flags uint8, app, hopByHop, endToEnd uint32, d *dict.Parser) *diam.Message {
	x := &struct {
		m diam.Message
		h diam.Header
	}{}
	initMessage(&x.m, &x.h, cmd, flags, app, hopByHop, endToEnd, d)
	return &x.m
}

// newAnswer is newMessage with room for a CCA's AVPs in the same allocation (their list was
// an allocation of its own on every answer).
func newAnswer(cmd uint32, flags uint8, app, hopByHop, endToEnd uint32, d *dict.Parser) *diam.Message {
	x := &struct {
		m    diam.Message
		h    diam.Header
		avps [16]*diam.AVP
	}{}
	initMessage(&x.m, &x.h, cmd, flags, app, hopByHop, endToEnd, d)
	x.m.AVP = x.avps[:0]
	return &x.m
}

// initMessage makes m an empty message of d with the header h.
func initMessage(m *diam.Message, h *diam.Header, cmd uint32, flags uint8, app, hopByHop, endToEnd uint32, d *dict.Parser) {
	t := templates.Load()
	if t == nil || t.Dictionary() != d {
		t = diam.NewMessage(0, 0, 0, 1, 1, d)
		templates.Store(t)
	}
	*m = *t
	*h = diam.Header{Version: 1, MessageLength: diam.HeaderLength, CommandFlags: flags, CommandCode: cmd,
		ApplicationID: app, HopByHopID: hopByHop, EndToEndID: endToEnd}
	m.Header = h
}

// templates is an empty message of the last dictionary used: newMessage copies it for its
// unexported fields (the dictionary, the stream).
var templates atomic.Pointer[diam.Message]

// FailedAVP is an answer naming the AVP at fault (RFC 6733 §7.5: for a missing AVP, an
// example of it with a zero-filled payload of the minimum length of its type).
func (id Identity) FailedAVP(req *diam.Message, code, avpCode uint32) *diam.Message {
	return id.FailedAVPVendor(req, code, avpCode, 0)
}

// FailedAVPVendor is FailedAVP for a vendor-specific AVP.
func (id Identity) FailedAVPVendor(req *diam.Message, code, avpCode, vendor uint32) *diam.Message {
	flags := uint8(avp.Mbit)
	if vendor != 0 {
		flags |= avp.Vbit
	}
	a := id.Answer(req, code)
	a.NewAVP(avp.FailedAVP, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(avpCode, flags, vendor, datatype.OctetString(make([]byte, minLength(req, avpCode, vendor)))),
	}})
	return a
}

// minLength is the least payload of an AVP's type (its fixed size; 0 for the variable ones).
func minLength(req *diam.Message, code, vendor uint32) int {
	d, err := req.Dictionary().FindAVPWithVendor(req.Header.ApplicationID, code, vendor)
	if err != nil || d == nil {
		return 0
	}
	return fixedSize(d.Data.Type)
}

// fixedSize is the payload length of a fixed-size data type (RFC 6733 §4.2, §4.3), 0 for
// the others.
func fixedSize(t datatype.TypeID) int {
	switch t {
	case datatype.Unsigned32Type, datatype.Integer32Type, datatype.Float32Type, datatype.EnumeratedType, datatype.TimeType:
		return 4
	case datatype.Unsigned64Type, datatype.Integer64Type, datatype.Float64Type:
		return 8
	}
	return 0
}

// FailedAVPOf is an answer naming the request's AVP at fault with its value as received
// (RFC 6733 §7.5), or an example of it when the request lacks it.
func (id Identity) FailedAVPOf(req *diam.Message, code, avpCode, vendor uint32) *diam.Message {
	got, err := req.FindAVP(avpCode, vendor)
	if err != nil || got == nil {
		return id.FailedAVPVendor(req, code, avpCode, vendor)
	}
	a := id.Answer(req, code)
	a.NewAVP(avp.FailedAVP, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{got}})
	return a
}
