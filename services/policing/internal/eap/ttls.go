package eap

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/binary"

	"github.com/openaaa/openaaa/services/policing/internal/mschapv2"
)

// EAP-TTLSv0 (RFC 5281) with PAP or MS-CHAPv2 inside: the peer sends Diameter-style AVPs
// (§10) in the tunnel; the server answers PAP with EAP-Success, MS-CHAPv2 with the
// MS-CHAP2-Success AVP (acknowledged by the peer) then EAP-Success.

// AVP codes: RADIUS attribute numbers, vendor 311 (Microsoft) for MS-CHAP.
const (
	avpUserName      = 1
	avpUserPassword  = 2
	avpMSCHAPChal    = 11 // vendor 311
	avpMSCHAP2Resp   = 25 // vendor 311
	avpMSCHAP2Succes = 26 // vendor 311
	vendorMicrosoft  = 311
	avpFlagVendor    = 0x80
	avpFlagMandatory = 0x40
)

type avpKey struct {
	vendor uint32
	code   uint32
}

// parseAVPs decodes the tunnel's AVPs (§10.1: Code, Flags, Length (3), Vendor-ID when V is
// set, Data, padded to 4 octets).
func parseAVPs(b []byte) (map[avpKey][]byte, bool) {
	m := map[avpKey][]byte{}
	for len(b) > 0 {
		if len(b) < 8 {
			return nil, false
		}
		code, flags := binary.BigEndian.Uint32(b), b[4]
		n := int(binary.BigEndian.Uint32(b[4:8]) & 0xFFFFFF)
		hdr := 8
		var vendor uint32
		if flags&avpFlagVendor != 0 {
			if len(b) < 12 {
				return nil, false
			}
			vendor, hdr = binary.BigEndian.Uint32(b[8:12]), 12
		}
		if n < hdr || n > len(b) {
			return nil, false
		}
		m[avpKey{vendor, code}] = b[hdr:n]
		b = b[min(len(b), (n+3)&^3):]
	}
	return m, true
}

// appendAVP encodes one mandatory AVP.
func appendAVP(b []byte, vendor, code uint32, data []byte) []byte {
	hdr := 8
	flags := byte(avpFlagMandatory)
	if vendor != 0 {
		hdr, flags = 12, flags|avpFlagVendor
	}
	b = binary.BigEndian.AppendUint32(b, code)
	b = binary.BigEndian.AppendUint32(b, uint32(flags)<<24|uint32(hdr+len(data)))
	if vendor != 0 {
		b = binary.BigEndian.AppendUint32(b, vendor)
	}
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// ttlsInner is TTLS's inner authentication.
type ttlsInner struct {
	srv     *Server
	success *outcome // MS-CHAPv2 verified: waiting for the peer's acknowledgement
}

// begin: the peer speaks first; an empty Request invites it.
func (t *ttlsInner) begin() []byte { return nil }

func (t *ttlsInner) handle(ctx context.Context, e *engine, plain []byte) ([]byte, outcome) {
	if t.success != nil {
		return nil, *t.success // the peer acknowledged MS-CHAP2-Success
	}
	avps, ok := parseAVPs(plain)
	user, hasUser := avps[avpKey{0, avpUserName}]
	if !ok || !hasUser {
		return nil, fail(ReasonMalformed)
	}
	sub, r := t.srv.lookup(ctx, string(user))
	if r != "" {
		return nil, fail(r)
	}
	if pw, ok := avps[avpKey{0, avpUserPassword}]; ok {
		// §11.2.5: padded with nulls to a multiple of 16 octets.
		if !mschapv2.CheckPassword(bytes.TrimRight(pw, "\x00"), sub) {
			return nil, fail(ReasonBadPassword)
		}
		return nil, outcome{done: true, sub: sub}
	}
	chal, ok1 := avps[avpKey{vendorMicrosoft, avpMSCHAPChal}]
	resp, ok2 := avps[avpKey{vendorMicrosoft, avpMSCHAP2Resp}]
	if !ok1 || !ok2 || len(chal) != 16 || len(resp) != 50 {
		return nil, fail(ReasonMalformed)
	}
	// §11.2.4: the challenge and its ident come from the tunnel's keys, so that they cannot
	// be replayed from another conversation (TLS 1.3: the exporter with an empty context, as
	// wpa_supplicant 2.10 derives it).
	implicit, err := e.Export("ttls challenge", nil, 17)
	if err != nil || subtle.ConstantTimeCompare(implicit[:16], chal) != 1 || implicit[16] != resp[0] {
		return nil, fail(ReasonMalformed)
	}
	hash := mschapv2.NTHash(sub)
	res, ok := mschapv2.Result{}, false
	if hash != nil {
		res, ok = mschapv2.Verify(hash, chal, resp[2:18], resp[26:50], string(user))
	}
	if !ok {
		return nil, fail(ReasonBadPassword)
	}
	t.success = &outcome{done: true, sub: sub}
	return appendAVP(nil, vendorMicrosoft, avpMSCHAP2Succes, append([]byte{resp[0]}, res.AuthenticatorResponse...)), outcome{}
}
