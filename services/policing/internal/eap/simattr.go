package eap

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
)

// The message format of EAP-SIM, EAP-AKA and EAP-AKA' (RFC 4186 §8.1, RFC 4187 §8.1): Subtype, two reserved
// octets, then attributes of Type, Length (in 4-octet units, header included) and value.

// Subtypes.
const (
	akaChallenge    = 1
	akaAuthReject   = 2
	akaSyncFailure  = 4
	akaIdentity     = 5
	akaClientError  = 14
	akaNotification = 12
	simStart        = 10 // EAP-SIM
	simChallenge    = 11
)

// Attribute types (RFC 4187 §10, RFC 9048 §3.1–3.2, RFC 5448 §4 AT_BIDDING).
const (
	atRAND            = 1
	atAUTN            = 2
	atRES             = 3
	atAUTS            = 4
	atNonceMT         = 7 // EAP-SIM
	atPermanentIDReq  = 10
	atMAC             = 11
	atIdentity        = 14
	atVersionList     = 15 // EAP-SIM
	atSelectedVersion = 16
	atClientErrorCode = 22
	atKDFInput        = 23
	atKDF             = 24
	atCheckcode       = 134
	atResultInd       = 135
	atBidding         = 136
)

var errAttr = errors.New("malformed EAP-AKA attribute")

// simMsg is a decoded message: its subtype and each attribute's value (after Type and
// Length), by type; macAt is the offset in the type-data of AT_MAC's MAC (0: none).
type simMsg struct {
	subtype byte
	attrs   map[byte][]byte
	macAt   int
}

func parseSim(data []byte) (simMsg, error) {
	if len(data) < 3 {
		return simMsg{}, errAttr
	}
	m := simMsg{subtype: data[0], attrs: map[byte][]byte{}}
	for off := 3; off < len(data); {
		if len(data)-off < 4 {
			return m, errAttr
		}
		t, n := data[off], int(data[off+1])*4
		if n == 0 || off+n > len(data) {
			return m, errAttr
		}
		if _, dup := m.attrs[t]; dup {
			return m, errAttr
		}
		if t == atMAC {
			if n != 20 {
				return m, errAttr
			}
			m.macAt = off + 4
		}
		m.attrs[t] = data[off+2 : off+n]
		off += n
	}
	return m, nil
}

// simBuilder writes a message's type-data.
type simBuilder struct {
	b     []byte
	macAt int
}

func newSim(subtype byte) *simBuilder { return &simBuilder{b: []byte{subtype, 0, 0}} }

// attr appends an attribute whose value (reserved octets included) is v, padded with zeros
// to a multiple of 4 octets.
func (s *simBuilder) attr(t byte, v ...[]byte) *simBuilder {
	n := 2
	for _, x := range v {
		n += len(x)
	}
	pad := (4 - n%4) % 4
	s.b = append(s.b, t, byte((n+pad)/4))
	for _, x := range v {
		s.b = append(s.b, x...)
	}
	s.b = append(s.b, make([]byte, pad)...)
	return s
}

// identity is the peer's AT_IDENTITY (its actual length, then the identity and padding).
func (m simMsg) identity() (string, bool) {
	v, ok := m.attrs[atIdentity]
	if !ok || len(v) < 2 || int(binary.BigEndian.Uint16(v)) > len(v)-2 {
		return "", false
	}
	return string(v[2 : 2+binary.BigEndian.Uint16(v)]), true
}

// withLength is a value preceded by its length in octets (AT_IDENTITY, AT_KDF_INPUT).
func withLength(v []byte) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(v))), v...)
}

// mac appends AT_MAC with a zero MAC, filled by seal.
func (s *simBuilder) mac() *simBuilder {
	s.attr(atMAC, make([]byte, 18))
	s.macAt = len(s.b) - 16
	return s
}

// seal fills AT_MAC over the EAP-Request of Identifier id that carries the type-data, and
// extra (EAP-SIM: NONCE_MT).
func (s *simBuilder) seal(typ, id byte, kAut, extra []byte) []byte {
	if s.macAt > 0 {
		copy(s.b[s.macAt:], simMAC(typ, kAut, request(id, typ, s.b), extra))
	}
	return s.b
}

// simMAC is AT_MAC's value over a whole EAP packet whose MAC field is zero, then extra:
// HMAC-SHA1-128 with K_aut (SIM, AKA: RFC 4186 §10.14, RFC 4187 §10.15) or HMAC-SHA-256-128
// (AKA', RFC 9048 §3.4.2).
func simMAC(typ byte, kAut, packet, extra []byte) []byte {
	f := sha1.New
	if typ == TypeAKAPrime {
		f = func() hash.Hash { return sha256.New() }
	}
	m := hmac.New(f, kAut)
	m.Write(packet)
	m.Write(extra)
	return m.Sum(nil)[:16]
}

// verifyMAC checks a Response's AT_MAC (Identifier id, type-data data, then extra: EAP-SIM's
// SRES values).
func (m simMsg) verifyMAC(typ, id byte, data, kAut, extra []byte) bool {
	if m.macAt == 0 {
		return false
	}
	got := append([]byte{}, data[m.macAt:m.macAt+16]...)
	zeroed := append([]byte{}, data...)
	clear(zeroed[m.macAt : m.macAt+16])
	pkt := request(id, typ, zeroed)
	pkt[0] = CodeResponse
	return hmac.Equal(got, simMAC(typ, kAut, pkt, extra))
}
