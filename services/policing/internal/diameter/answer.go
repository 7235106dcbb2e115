package diameter

import (
	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
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
	flags := req.Header.CommandFlags & diam.ProxiableFlag
	if code >= 3000 && code < 4000 {
		flags |= diam.ErrorFlag
	}
	a := diam.NewMessage(req.Header.CommandCode, flags, req.Header.ApplicationID,
		req.Header.HopByHopID, req.Header.EndToEndID, req.Dictionary())
	if sid, err := req.FindAVP(avp.SessionID, 0); err == nil && sid != nil {
		a.AddAVP(diam.NewAVP(avp.SessionID, avp.Mbit, 0, sid.Data))
	}
	a.NewAVP(avp.ResultCode, avp.Mbit, 0, datatype.Unsigned32(code))
	a.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity(id.Host))
	a.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity(id.Realm))
	for _, p := range req.AVP {
		if p.Code == avp.ProxyInfo && p.VendorID == 0 {
			a.AddAVP(p)
		}
	}
	return a
}

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
