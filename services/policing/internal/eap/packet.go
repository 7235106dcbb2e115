// Package eap is EAP over RADIUS (RFC 3748, RFC 3579): an EAP server that runs one
// conversation per peer over several Access-Request/Access-Challenge rounds, with EAP-TLS,
// PEAPv0/EAP-MSCHAPv2, EAP-TTLS (PAP, MS-CHAPv2), EAP-MD5, EAP-SIM, EAP-AKA and EAP-AKA'
// behind one method interface (method.go). The aaa handler decodes, calls Server.Handle, and writes the Result's
// attributes. docs/eap.md.
package eap

import "github.com/openaaa/openaaa/internal/eapwire"

// EAP codes (RFC 3748 §4) and method types (IANA EAP registry), with the wire format in
// internal/eapwire (shared with aaa-loadgen's EAP peer).
const (
	CodeRequest  = eapwire.CodeRequest
	CodeResponse = eapwire.CodeResponse
	CodeSuccess  = eapwire.CodeSuccess
	CodeFailure  = eapwire.CodeFailure

	TypeIdentity  = eapwire.TypeIdentity
	TypeNak       = eapwire.TypeNak
	TypeMD5       = eapwire.TypeMD5
	TypeSIM       = eapwire.TypeSIM
	TypeAKA       = eapwire.TypeAKA
	TypeAKAPrime  = eapwire.TypeAKAPrime
	TypeTLS       = eapwire.TypeTLS
	TypeTTLS      = eapwire.TypeTTLS
	TypePEAP      = eapwire.TypePEAP
	TypeMSCHAPv2  = eapwire.TypeMSCHAPv2
	TypeExtension = eapwire.TypeExtension
)

// Packet is one decoded EAP packet; Data is the type-data (after the Type octet) of a
// Request or Response, and aliases the input.
type Packet = eapwire.Packet

// Parse decodes an EAP packet whose Length matches the input exactly.
func Parse(b []byte) (Packet, error) { return eapwire.Parse(b) }

// request encodes an EAP-Request of type t.
func request(id, t byte, data []byte) []byte {
	return eapwire.Encode(CodeRequest, id, t, data)
}

// final encodes an EAP-Success or EAP-Failure with the Identifier of the Response it
// answers (RFC 3748 §4.2).
func final(code, id byte) []byte { return eapwire.Final(code, id) }
