package radiusd

import (
	"layeh.com/radius"

	"github.com/openaaa/openaaa/internal/radiusx"
)

// parse decodes a length-checked request into layeh's Packet with three allocations
// instead of two per attribute (radius.Parse copies each value into its own slice and
// allocates each AVP): one copy of the attribute bytes, one AVP array, one pointer slice.
// The packet's buffer goes back to the pool, so the values must not alias it.
func parse(pkt, secret []byte) (*radius.Packet, error) {
	body := pkt[radiusx.HeaderLen:]
	n := 0
	for off := 0; off < len(body); {
		if len(body)-off < 2 || body[off+1] < 2 || off+int(body[off+1]) > len(body) {
			return nil, radiusx.ErrMalformed
		}
		off += int(body[off+1])
		n++
	}
	data := append([]byte(nil), body...)
	avps := make([]radius.AVP, n)
	attrs := make(radius.Attributes, n)
	for i, off := 0, 0; i < n; i++ {
		l := int(data[off+1])
		avps[i] = radius.AVP{Type: radius.Type(data[off]), Attribute: data[off+2 : off+l : off+l]}
		attrs[i] = &avps[i]
		off += l
	}
	p := &radius.Packet{Code: radius.Code(pkt[0]), Identifier: pkt[1], Secret: secret, Attributes: attrs}
	copy(p.Authenticator[:], pkt[4:20])
	return p, nil
}
