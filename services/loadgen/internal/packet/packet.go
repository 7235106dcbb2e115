// Package packet builds the RADIUS requests aaa-loadgen sends and checks the replies, on raw
// bytes: a load generator shares the CPU with the server it measures, so it encodes without
// maps, reflection or per-attribute allocations. Signing and reply verification (response
// authenticator, Message-Authenticator) come from internal/radiusx.
package packet

import (
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/openaaa/openaaa/internal/radiusx"
)

// Packet codes.
const (
	CodeAccessRequest      byte = 1
	CodeAccessAccept       byte = 2
	CodeAccessReject       byte = 3
	CodeAccountingRequest  byte = 4
	CodeAccountingResponse byte = 5
	CodeAccessChallenge    byte = 11
)

// Attribute types (RFC 2865, 2866, 2869).
const (
	AttrUserName            byte = 1
	AttrUserPassword        byte = 2
	AttrCHAPPassword        byte = 3
	AttrNASIPAddress        byte = 4
	AttrNASPort             byte = 5
	AttrServiceType         byte = 6
	AttrFramedProtocol      byte = 7
	AttrFramedIPAddress     byte = 8
	AttrState               byte = 24
	AttrClass               byte = 25
	AttrSessionTimeout      byte = 27
	AttrCalledStationID     byte = 30
	AttrCallingStationID    byte = 31
	AttrNASIdentifier       byte = 32
	AttrAcctStatusType      byte = 40
	AttrAcctDelayTime       byte = 41
	AttrAcctInputOctets     byte = 42
	AttrAcctOutputOctets    byte = 43
	AttrAcctSessionID       byte = 44
	AttrAcctSessionTime     byte = 46
	AttrAcctInputPackets    byte = 47
	AttrAcctOutputPackets   byte = 48
	AttrAcctTerminateCause  byte = 49
	AttrAcctInputGigawords  byte = 52
	AttrAcctOutputGigawords byte = 53
	AttrEventTimestamp      byte = 55
	AttrCHAPChallenge       byte = 60
	AttrNASPortType         byte = 61
	AttrEAPMessage          byte = 79
	AttrAcctInterimInterval byte = 85
)

// Acct-Status-Type values.
const (
	AcctStart   uint32 = 1
	AcctStop    uint32 = 2
	AcctInterim uint32 = 3
)

// Builder encodes one request into a reusable buffer.
type Builder struct {
	buf []byte
}

// Begin starts a packet with code, identifier and authenticator (for Access-Request the
// random request authenticator; for accounting it is computed by Finish).
func (b *Builder) Begin(code, id byte, auth [16]byte) {
	if b.buf == nil {
		b.buf = make([]byte, 0, 512)
	}
	b.buf = append(b.buf[:0], code, id, 0, 0)
	b.buf = append(b.buf, auth[:]...)
}

// Bytes appends an attribute with a raw value (at most 253 octets; longer values are cut).
func (b *Builder) Bytes(t byte, v []byte) {
	if len(v) > 253 {
		v = v[:253]
	}
	b.buf = append(b.buf, t, byte(len(v)+2))
	b.buf = append(b.buf, v...)
}

// String appends a text attribute.
func (b *Builder) String(t byte, s string) {
	if len(s) > 253 {
		s = s[:253]
	}
	b.buf = append(b.buf, t, byte(len(s)+2))
	b.buf = append(b.buf, s...)
}

// Uint32 appends an integer attribute.
func (b *Builder) Uint32(t byte, v uint32) {
	b.buf = append(b.buf, t, 6)
	b.buf = binary.BigEndian.AppendUint32(b.buf, v)
}

// IPv4 appends an address attribute.
func (b *Builder) IPv4(t byte, ip [4]byte) {
	b.buf = append(b.buf, t, 6)
	b.buf = append(b.buf, ip[:]...)
}

// EAPMessage appends an EAP packet as consecutive EAP-Message attributes of at most 253
// octets (RFC 3579 §3.1).
func (b *Builder) EAPMessage(eap []byte) {
	for len(eap) > 0 {
		n := min(len(eap), 253)
		b.Bytes(AttrEAPMessage, eap[:n])
		eap = eap[n:]
	}
}

// UserPassword appends User-Password hidden as in RFC 2865 §5.2 with the request
// authenticator already set by Begin.
func (b *Builder) UserPassword(password string, secret []byte) {
	n := (len(password) + 15) / 16 * 16
	if n == 0 {
		n = 16
	}
	if n > 128 {
		n = 128
	}
	b.buf = append(b.buf, AttrUserPassword, byte(n+2))
	start := len(b.buf)
	b.buf = append(b.buf, make([]byte, n)...)
	out := b.buf[start : start+n]
	copy(out, password)
	prev := b.buf[4:20]
	var sum [16]byte
	for i := 0; i < n; i += 16 {
		h := md5.New()
		h.Write(secret)
		h.Write(prev)
		h.Sum(sum[:0])
		for j := 0; j < 16; j++ {
			out[i+j] ^= sum[j]
		}
		prev = out[i : i+16]
	}
}

// CHAPPassword appends CHAP-Password (RFC 2865 §5.3) for CHAP identifier chapID, using the
// request authenticator as the challenge (no CHAP-Challenge attribute, as most NAS do).
func (b *Builder) CHAPPassword(chapID byte, password string) {
	h := md5.New()
	h.Write([]byte{chapID})
	h.Write([]byte(password))
	h.Write(b.buf[4:20])
	var v [17]byte
	v[0] = chapID
	h.Sum(v[1:1])
	b.Bytes(AttrCHAPPassword, v[:])
}

// Finish appends a Message-Authenticator, sets the length and signs the packet with
// radiusx.SignRequest. The returned slice is valid until the next Begin.
func (b *Builder) Finish(secret []byte) []byte {
	binary.BigEndian.PutUint16(b.buf[2:4], uint16(len(b.buf)))
	var off int
	b.buf, off = radiusx.AppendMessageAuthenticator(b.buf)
	radiusx.SignRequest(b.buf, off, secret)
	return b.buf
}

// Reply is what aaa-loadgen needs from a reply.
type Reply struct {
	Code     byte
	FramedIP [4]byte
	HasIP    bool
	// EAP is the EAP packet joined from an Access-Challenge's EAP-Messages (a new slice);
	// State aliases the reply's.
	EAP, State []byte
}

// HeaderLenForReply is how much of a request ParseReply reads (code, identifier,
// authenticator): an asynchronous sender keeps only this much per request in flight.
const HeaderLenForReply = radiusx.HeaderLen

// ErrWrongID reports a reply to another (earlier) request: a late answer to a timed-out
// request. The caller keeps waiting for its own.
var ErrWrongID = errors.New("reply to another request")

// ParseReply checks a reply to the request req: identifier, response authenticator and
// Message-Authenticator (when present; requireMA: it must be present), then extracts the
// code and Framed-IP-Address.
func ParseReply(pkt, req, secret []byte, requireMA bool) (Reply, error) {
	var r Reply
	n, err := radiusx.PacketLen(pkt)
	if err != nil {
		return r, err
	}
	pkt = pkt[:n]
	if pkt[1] != req[1] {
		return r, ErrWrongID
	}
	if err := radiusx.VerifyResponse(pkt, req[4:20], secret, requireMA); err != nil {
		return r, err
	}
	r.Code = pkt[0]
	switch req[0] {
	case CodeAccessRequest:
		if r.Code != CodeAccessAccept && r.Code != CodeAccessReject && r.Code != CodeAccessChallenge {
			return r, fmt.Errorf("unexpected reply code %d to Access-Request", r.Code)
		}
	case CodeAccountingRequest:
		if r.Code != CodeAccountingResponse {
			return r, fmt.Errorf("unexpected reply code %d to Accounting-Request", r.Code)
		}
	}
	if r.Code == CodeAccessChallenge {
		r.EAP, r.State = challenge(pkt)
	}
	if r.Code == CodeAccessAccept {
		off, l, err := radiusx.FindAttr(pkt, AttrFramedIPAddress)
		if err != nil {
			return r, err
		}
		if off >= 0 && l == 4 {
			copy(r.FramedIP[:], pkt[off:off+4])
			r.HasIP = true
		}
	}
	return r, nil
}

// challenge reads an Access-Challenge's EAP-Messages (joined, in order) and State; the
// packet's length and attributes were checked by VerifyResponse.
func challenge(pkt []byte) (eap, state []byte) {
	for i := radiusx.HeaderLen; i+2 <= len(pkt); {
		t, l := pkt[i], int(pkt[i+1])
		if l < 2 || i+l > len(pkt) {
			break
		}
		switch t {
		case AttrEAPMessage:
			eap = append(eap, pkt[i+2:i+l]...)
		case AttrState:
			state = pkt[i+2 : i+l]
		}
		i += l
	}
	return eap, state
}
