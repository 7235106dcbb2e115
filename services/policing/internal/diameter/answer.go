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

// Answer starts the answer to req: same header identifiers, the T flag cleared, the E flag
// set for protocol errors (3xxx), Session-Id first when the request has one, then
// Result-Code and our Origin-Host/Origin-Realm.
func (id Identity) Answer(req *diam.Message, code uint32) *diam.Message {
	flags := req.Header.CommandFlags &^ (diam.RequestFlag | diam.RetransmittedFlag)
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
	return a
}

// FailedAVP is an answer naming the AVP at fault (RFC 6733 §7.5: for a missing AVP, an
// example of it with an empty value).
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
		diam.NewAVP(avpCode, flags, vendor, datatype.OctetString("")),
	}})
	return a
}
