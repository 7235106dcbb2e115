package eappeer

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"

	"layeh.com/radius/rfc2759"

	"github.com/openaaa/openaaa/internal/eapwire"
)

// PEAPv0's inner conversation ([MS-PEAP], draft-kamath-pppext-eap-mschapv2): inner EAP
// packets travel without their 4-octet header, except the Extensions packet with the Result
// TLV; Identity, MS-CHAPv2 Challenge and Success, then the Result.
type mschap struct {
	challenge, peerChallenge [16]byte
	ntResponse               []byte
	succeeded                bool
}

// EAP-MSCHAPv2 op-codes.
const (
	msChallenge = 1
	msResponse  = 2
	msSuccess   = 3
	msFailure   = 4
)

// The Result TLV (mandatory, type 3, length 2): Success, Failure.
var (
	resultSuccess = []byte{0x80, 0x03, 0x00, 0x02, 0x00, 0x01}
	resultFailure = []byte{0x80, 0x03, 0x00, 0x02, 0x00, 0x02}
)

var errInner = errors.New("unexpected PEAP inner request")

// handle answers the server's inner Request (plaintext from the tunnel).
func (m *mschap) handle(cfg *Config, plain []byte) ([]byte, error) {
	if p, err := eapwire.Parse(plain); err == nil && p.Code == eapwire.CodeRequest && p.Type == eapwire.TypeExtension {
		// Success only after MS-CHAPv2 succeeded; otherwise Failure, and the server rejects.
		res := resultFailure
		if bytes.HasSuffix(p.Data, resultSuccess[2:]) && m.succeeded {
			res = resultSuccess
		}
		return eapwire.Encode(eapwire.CodeResponse, p.ID, eapwire.TypeExtension, res), nil
	}
	typ, data := plain[0], plain[1:]
	switch {
	case typ == eapwire.TypeIdentity:
		return append([]byte{eapwire.TypeIdentity}, cfg.User...), nil
	case typ != eapwire.TypeMSCHAPv2 || len(data) < 4:
		return nil, errInner
	}
	switch data[0] {
	case msChallenge:
		// OpCode, MS-CHAPv2-ID, MS-Length, Value-Size (16), Challenge, Name.
		if len(data) < 21 || data[4] != 16 {
			return nil, errInner
		}
		copy(m.challenge[:], data[5:21])
		_, _ = rand.Read(m.peerChallenge[:])
		nt, err := rfc2759.GenerateNTResponse(m.challenge[:], m.peerChallenge[:], []byte(cfg.User), []byte(cfg.Password))
		if err != nil {
			return nil, err
		}
		m.ntResponse = nt
		// OpCode, MS-CHAPv2-ID, MS-Length, Value-Size (49), Peer-Challenge, Reserved (8),
		// NT-Response, Flags, Name.
		b := []byte{eapwire.TypeMSCHAPv2, msResponse, data[1], 0, 0, 49}
		b = append(b, m.peerChallenge[:]...)
		b = append(b, make([]byte, 8)...)
		b = append(b, nt...)
		b = append(b, 0)
		b = append(b, cfg.User...)
		binary.BigEndian.PutUint16(b[3:5], uint16(len(b)-1))
		return b, nil
	case msSuccess:
		want, err := rfc2759.GenerateAuthenticatorResponse(m.challenge[:], m.peerChallenge[:], m.ntResponse, []byte(cfg.User), []byte(cfg.Password))
		if err != nil {
			return nil, err
		}
		if m.ntResponse == nil || !bytes.HasPrefix(data[4:], []byte(want)) {
			return nil, errors.New("MS-CHAPv2: wrong authenticator response")
		}
		m.succeeded = true
		return []byte{eapwire.TypeMSCHAPv2, msSuccess}, nil
	case msFailure:
		// Acknowledged: the server ends the conversation with a Reject.
		return []byte{eapwire.TypeMSCHAPv2, msFailure}, nil
	}
	return nil, errInner
}
