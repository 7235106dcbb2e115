// Package eap is EAP over RADIUS (RFC 3748, RFC 3579): an EAP server that runs one
// conversation per peer over several Access-Request/Access-Challenge rounds, with EAP-TLS,
// PEAPv0/EAP-MSCHAPv2, EAP-TTLS (PAP, MS-CHAPv2), EAP-MD5, EAP-SIM, EAP-AKA and EAP-AKA'
// behind one method interface (method.go). The aaa handler decodes, calls Server.Handle, and writes the Result's
// attributes. docs/eap.md.
package eap

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
	TypeSIM       = 18
	TypeAKA       = 23
	TypeAKAPrime  = 50
	TypeTLS       = 13
	TypeTTLS      = 21
	TypePEAP      = 25
	TypeMSCHAPv2  = 26
	TypeExtension = 33 // PEAP's EAP-TLV (Result TLV)
)

const headerLen = 4

// Packet is one decoded EAP packet; Data is the type-data (after the Type octet) of a
// Request or Response, and aliases the input.
type Packet struct {
	Code, ID, Type byte
	Data           []byte
}

var errMalformed = errors.New("malformed EAP packet")

// Parse decodes an EAP packet whose Length field must match the input exactly (RFC 3748
// §4: octets beyond Length are padding on a link, but RADIUS has no padding to strip).
func Parse(b []byte) (Packet, error) {
	if len(b) < headerLen || int(binary.BigEndian.Uint16(b[2:4])) != len(b) {
		return Packet{}, errMalformed
	}
	p := Packet{Code: b[0], ID: b[1]}
	switch p.Code {
	case CodeRequest, CodeResponse:
		if len(b) < headerLen+1 {
			return Packet{}, errMalformed
		}
		p.Type, p.Data = b[4], b[5:]
	case CodeSuccess, CodeFailure:
		if len(b) != headerLen {
			return Packet{}, errMalformed
		}
	default:
		return Packet{}, errMalformed
	}
	return p, nil
}

// request encodes an EAP-Request of type t.
func request(id, t byte, data []byte) []byte {
	b := make([]byte, headerLen+1, headerLen+1+len(data))
	b[0], b[1], b[4] = CodeRequest, id, t
	b = append(b, data...)
	binary.BigEndian.PutUint16(b[2:4], uint16(len(b)))
	return b
}

// final encodes an EAP-Success or EAP-Failure with the Identifier of the Response it
// answers (RFC 3748 §4.2).
func final(code, id byte) []byte { return []byte{code, id, 0, headerLen} }
