package radiusd

import (
	"layeh.com/radius"

	"github.com/openaaa/openaaa/internal/radiusx"
)

// arena is the memory of one request, owned by a reader (inline) or a worker and reused
// request after request: parsing allocates nothing once it has grown to the largest
// request seen (radius.Parse allocates two objects per attribute, the profile's largest
// share of a request's garbage).
type arena struct {
	avps  []radius.AVP
	attrs radius.Attributes
	pkt   radius.Packet
	req   Request
	w     responseWriter
	in    inbound
	udp   udpOut
}

// parse decodes a length-checked request into layeh's Packet. The attribute values alias
// pkt: valid until the datagram's buffer is reused, after the handler returned.
func (a *arena) parse(pkt, secret []byte) (*radius.Packet, error) {
	body := pkt[radiusx.HeaderLen:]
	n := 0
	for off := 0; off < len(body); {
		if len(body)-off < 2 || body[off+1] < 2 || off+int(body[off+1]) > len(body) {
			return nil, radiusx.ErrMalformed
		}
		off += int(body[off+1])
		n++
	}
	if cap(a.avps) < n {
		a.avps = make([]radius.AVP, n)
		a.attrs = make(radius.Attributes, n)
	}
	avps, attrs := a.avps[:n], a.attrs[:n]
	for i, off := 0, 0; i < n; i++ {
		l := int(body[off+1])
		avps[i] = radius.AVP{Type: radius.Type(body[off]), Attribute: body[off+2 : off+l : off+l]}
		attrs[i] = &avps[i]
		off += l
	}
	a.pkt = radius.Packet{Code: radius.Code(pkt[0]), Identifier: pkt[1], Secret: secret, Attributes: attrs}
	copy(a.pkt.Authenticator[:], pkt[4:20])
	return &a.pkt, nil
}
