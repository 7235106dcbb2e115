package eap

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"

	"github.com/openaaa/openaaa/services/policing/internal/mschapv2"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// PEAPv0 (draft-kamath-pppext-peapv0, [MS-PEAP]) with EAP-MSCHAPv2 inside
// (draft-kamath-pppext-eap-mschapv2): inside the tunnel the inner EAP packets travel without
// their 4-octet header ("compressed"), except the Extensions (EAP-TLV) packet that carries
// the Result; the inner conversation is Identity, MS-CHAPv2 Challenge, Success, Result.
// Crypto-binding is not sent (the peer's default makes it optional).

// EAP-MSCHAPv2 op-codes.
const (
	msChallenge = 1
	msResponse  = 2
	msSuccess   = 3
)

// peapInner is PEAP's inner conversation.
type peapInner struct {
	srv       *Server
	id        byte // Identifier of the inner Request sent last
	stage     int
	identity  string
	challenge [16]byte
	sub       *subscriber.Subscriber
}

const (
	peapIdentity  = iota // Identity sent
	peapChallenge        // MS-CHAPv2 Challenge sent
	peapSuccess          // MS-CHAPv2 Success sent
	peapResult           // Result TLV sent
)

// serverName is the Name field of the MS-CHAPv2 Challenge.
const serverName = "openaaa"

func (p *peapInner) begin() []byte {
	p.stage = peapIdentity
	return []byte{TypeIdentity}
}

// handle takes the peer's inner Response (compressed, or a whole EAP packet for the
// Extensions type).
func (p *peapInner) handle(ctx context.Context, _ *engine, plain []byte) ([]byte, outcome) {
	typ, data, ok := peapDecode(plain)
	if !ok {
		return nil, fail(ReasonMalformed)
	}
	switch {
	case p.stage == peapIdentity && typ == TypeIdentity:
		p.identity = string(data)
		sub, r := p.srv.lookup(ctx, p.identity)
		if r != "" {
			return nil, fail(r)
		}
		p.sub = sub
		p.stage = peapChallenge
		_, _ = rand.Read(p.challenge[:])
		p.id++
		return msCHAPv2Request(msChallenge, p.id, append(append([]byte{16}, p.challenge[:]...), serverName...)), outcome{}
	case p.stage == peapChallenge && typ == TypeMSCHAPv2:
		// OpCode, MS-CHAPv2-ID, MS-Length (2), Value-Size (49), Peer-Challenge (16),
		// Reserved (8), NT-Response (24), Flags, Name.
		if len(data) < 54 || data[0] != msResponse || data[4] != 49 {
			return nil, fail(ReasonMalformed)
		}
		hash := mschapv2.NTHash(p.sub)
		res, ok := mschapv2.Result{}, false
		if hash != nil {
			res, ok = mschapv2.Verify(hash, p.challenge[:], data[5:21], data[29:53], p.identity)
		}
		if !ok {
			return nil, fail(ReasonBadPassword)
		}
		p.stage = peapSuccess
		p.id++
		return msCHAPv2Request(msSuccess, p.id, []byte(res.AuthenticatorResponse+" M=OK")), outcome{}
	case p.stage == peapSuccess && typ == TypeMSCHAPv2:
		if len(data) < 1 || data[0] != msSuccess {
			return nil, fail(ReasonMalformed)
		}
		p.stage = peapResult
		p.id++
		return resultTLV(CodeRequest, p.id), outcome{}
	case p.stage == peapResult && typ == TypeExtension:
		if !bytes.Equal(data, resultTLV(CodeResponse, 0)[5:]) {
			return nil, fail(ReasonMalformed) // the peer's Result is not Success
		}
		return nil, outcome{done: true, sub: p.sub}
	}
	return nil, fail(ReasonUnexpected)
}

// peapDecode reads an inner Response: a whole EAP packet (code 2: PEAPv0's Extensions), or
// the compressed form (Type, Data).
func peapDecode(b []byte) (typ byte, data []byte, ok bool) {
	if len(b) == 0 {
		return 0, nil, false
	}
	if b[0] == CodeResponse {
		p, err := Parse(b)
		if err != nil || p.Code != CodeResponse {
			return 0, nil, false
		}
		return p.Type, p.Data, true
	}
	return b[0], b[1:], true
}

// msCHAPv2Request is a compressed inner EAP-MSCHAPv2 Request: Type, OpCode, MS-CHAPv2-ID,
// MS-Length (from the OpCode on), value.
func msCHAPv2Request(op, id byte, value []byte) []byte {
	b := []byte{TypeMSCHAPv2, op, id, 0, 0}
	binary.BigEndian.PutUint16(b[3:5], uint16(4+len(value)))
	return append(b, value...)
}

// resultTLV is a whole Extensions packet with a mandatory Result TLV of Success ([MS-PEAP]
// 2.2.8.1: type 3, length 2, status 1).
func resultTLV(code, id byte) []byte {
	return []byte{code, id, 0, 11, TypeExtension, 0x80, 0x03, 0x00, 0x02, 0x00, 0x01}
}
