package radiusx

import (
	"errors"
	"slices"

	"layeh.com/radius"
)

// ErrUnexpected: a well-formed datagram that is not an answer to the request (another
// Identifier, or a Code the request cannot get).
var ErrUnexpected = errors.New("radius: not an answer to the request")

// ParseReply checks a datagram received for a request sent with Identifier id and Request
// Authenticator reqAuth under secret — its framing, Identifier, Code (one of codes), Response
// Authenticator and Message-Authenticator (required when requireMA) — and parses it. Every
// client of policing (the accounting proxy, CoA and Disconnect, the EAP forwarding) accepts
// an answer only so; what each checks beyond (Proxy-State) is its own. The errors:
// ErrMalformed, ErrUnexpected, or VerifyResponse's.
func ParseReply(b []byte, id byte, reqAuth, secret []byte, requireMA bool, codes ...radius.Code) (*radius.Packet, error) {
	n, err := PacketLen(b)
	if err != nil {
		return nil, err
	}
	b = b[:n]
	if b[1] != id || !slices.Contains(codes, radius.Code(b[0])) {
		return nil, ErrUnexpected
	}
	if err := VerifyResponse(b, reqAuth, secret, requireMA); err != nil {
		return nil, err
	}
	p, err := radius.Parse(b, secret)
	if err != nil {
		return nil, ErrMalformed
	}
	return p, nil
}
