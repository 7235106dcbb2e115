package eap

import (
	"errors"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2869"

	"github.com/openaaa/openaaa/services/policing/internal/mschapv2"
)

// maxAttr is the longest attribute value: an EAP packet longer than that is split over
// consecutive EAP-Message attributes (RFC 3579 §3.1).
const maxAttr = 253

// Has reports whether an Access-Request carries EAP (an EAP-Message attribute).
func Has(p *radius.Packet) bool {
	_, ok := p.Lookup(rfc2869.EAPMessage_Type)
	return ok
}

var errEmptyFragment = errors.New("empty EAP-Message attribute")

// fromRADIUS reassembles the EAP packet from the request's EAP-Message attributes, in order
// (RFC 3579 §3.1), into a new slice: the request's memory is reused after the handler.
func fromRADIUS(p *radius.Packet) ([]byte, error) {
	var b []byte
	for _, a := range p.Attributes {
		if a.Type != rfc2869.EAPMessage_Type {
			continue
		}
		if len(a.Attribute) == 0 {
			return nil, errEmptyFragment
		}
		b = append(b, a.Attribute...)
	}
	return b, nil
}

// Attributes is the reply's EAP part for req (whose secret and authenticator encrypt the
// keys): the EAP packet in 253-octet EAP-Messages, and on a challenge the State and
// Session-Timeout, on an Accept the MSK as MS-MPPE-Recv-Key/Send-Key (RFC 3579 §3.1, RFC
// 5216 §2.3: the first 32 octets are the Recv-Key). Message-Authenticator is added by the
// writer, as on every reply.
func (r Result) Attributes(req *radius.Packet) (radius.Attributes, error) {
	out := &radius.Packet{Secret: req.Secret, Authenticator: req.Authenticator}
	for b := r.EAP; len(b) > 0; {
		n := min(len(b), maxAttr)
		out.Add(rfc2869.EAPMessage_Type, radius.Attribute(b[:n]))
		b = b[n:]
	}
	if r.Challenge {
		out.Add(rfc2865.State_Type, radius.Attribute(r.State))
		_ = rfc2865.SessionTimeout_Add(out, rfc2865.SessionTimeout(r.Timeout/time.Second))
	}
	if len(r.MSK) >= 64 {
		if err := mschapv2.AddMPPEKeys(out, r.MSK[32:64], r.MSK[:32]); err != nil {
			return nil, err
		}
	}
	return out.Attributes, nil
}
