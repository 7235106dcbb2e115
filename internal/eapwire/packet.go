// Package eapwire is the EAP wire format (RFC 3748) and the TLS-based methods' framing (RFC
// 5216 §3.1), shared by policing's EAP server and aaa-loadgen's EAP peer so that both read
// and write the same octets with the same code.
package eapwire

import (
	"encoding/binary"
	"errors"
)

// EAP codes (RFC 3748 §4).
const (
	CodeRequest  = 1
	CodeResponse = 2
	CodeSuccess  = 3
	CodeFailure  = 4
)

// EAP method types (IANA EAP registry).
const (
	TypeIdentity  = 1
	TypeNak       = 3
	TypeMD5       = 4
	TypeTLS       = 13
	TypeSIM       = 18
	TypeTTLS      = 21
	TypeAKA       = 23
	TypePEAP      = 25
	TypeMSCHAPv2  = 26
	TypeExtension = 33 // PEAP's EAP-TLV (Result TLV)
	TypeAKAPrime  = 50
)

// HeaderLen is the Code, Identifier and Length octets.
const HeaderLen = 4

// Packet is one decoded EAP packet; Data is the type-data (after the Type octet) of a
// Request or Response, and aliases the input.
type Packet struct {
	Code, ID, Type byte
	Data           []byte
}

// ErrMalformed reports an EAP packet that does not parse.
var ErrMalformed = errors.New("malformed EAP packet")

// Parse decodes an EAP packet whose Length field must match the input exactly (RFC 3748
// §4: octets beyond Length are padding on a link, but RADIUS has no padding to strip).
func Parse(b []byte) (Packet, error) {
	if len(b) < HeaderLen || int(binary.BigEndian.Uint16(b[2:4])) != len(b) {
		return Packet{}, ErrMalformed
	}
	p := Packet{Code: b[0], ID: b[1]}
	switch p.Code {
	case CodeRequest, CodeResponse:
		if len(b) < HeaderLen+1 {
			return Packet{}, ErrMalformed
		}
		p.Type, p.Data = b[4], b[5:]
	case CodeSuccess, CodeFailure:
		if len(b) != HeaderLen {
			return Packet{}, ErrMalformed
		}
	default:
		return Packet{}, ErrMalformed
	}
	return p, nil
}

// Encode is an EAP Request or Response (code) of type t.
func Encode(code, id, t byte, data []byte) []byte {
	b := make([]byte, HeaderLen+1, HeaderLen+1+len(data))
	b[0], b[1], b[4] = code, id, t
	b = append(b, data...)
	binary.BigEndian.PutUint16(b[2:4], uint16(len(b)))
	return b
}

// Final is an EAP-Success or EAP-Failure with the Identifier of the Response it answers
// (RFC 3748 §4.2).
func Final(code, id byte) []byte { return []byte{code, id, 0, HeaderLen} }
