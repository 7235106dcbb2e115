package aaa

import (
	"crypto/rand"
	"fmt"

	"layeh.com/radius"
	"layeh.com/radius/vendors/microsoft"

	"github.com/openaaa/openaaa/services/policing/internal/mschapv2"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// MS-CHAPv2 over RADIUS (RFC 2548 §2.3, RFC 2759, RFC 3079): the NAS ran the PPP or VPN
// exchange and sends the authenticator challenge (MS-CHAP-Challenge) and the peer's answer
// (MS-CHAP2-Response); the Access-Accept carries the authenticator response the peer checks
// (MS-CHAP2-Success) and the MPPE keys, the Access-Reject an MS-CHAP-Error. The checks below
// are pure: the handler adds their attributes to the policy's reply.

const (
	msCHAPChallengeLen = 16
	msCHAP2ResponseLen = 50 // Ident, Flags, Peer-Challenge(16), Reserved(8), Response(24)
)

// msCHAPv2 is an MS-CHAPv2 answer decoded from an Access-Request.
type msCHAPv2 struct {
	ident         byte
	challenge     []byte // the authenticator challenge (16)
	peerChallenge []byte // 16
	ntResponse    []byte // 24
}

// hasMSCHAP reports whether the request carries any MS-CHAP attribute.
func hasMSCHAP(p *radius.Packet) bool {
	_, c := microsoft.MSCHAPChallenge_Lookup(p)
	_, r := microsoft.MSCHAP2Response_Lookup(p)
	return c == nil || r == nil
}

// decodeMSCHAPv2 returns the request's MS-CHAPv2 answer, or a reject reason when it is
// malformed (wrong lengths, a missing half) or MS-CHAPv1, which we do not serve.
func decodeMSCHAPv2(p *radius.Packet) (msCHAPv2, string) {
	challenge, cerr := microsoft.MSCHAPChallenge_Lookup(p)
	resp, rerr := microsoft.MSCHAP2Response_Lookup(p)
	switch {
	case rerr != nil:
		if _, err := microsoft.MSCHAPResponse_Lookup(p); err == nil {
			return msCHAPv2{}, reasonMSCHAPv1
		}
		return msCHAPv2{}, reasonMSCHAPMalformed
	case cerr != nil || len(challenge) != msCHAPChallengeLen || len(resp) != msCHAP2ResponseLen:
		return msCHAPv2{}, reasonMSCHAPMalformed
	}
	return msCHAPv2{ident: resp[0], challenge: challenge, peerChallenge: resp[2:18], ntResponse: resp[26:50]}, ""
}

// verify checks the NT-Response against the password's NT hash (RFC 2759 §8.1) and returns
// the Access-Accept's MS-CHAP2-Success and MPPE attributes, built for req (the request
// authenticator and secret salt-encrypt the keys, RFC 2548 §2.4.2-3), or ok false.
func (m msCHAPv2) verify(req *radius.Packet, user string, ntHash []byte) (radius.Attributes, bool) {
	res, ok := mschapv2.Verify(ntHash, m.challenge, m.peerChallenge, m.ntResponse, user)
	if !ok {
		return nil, false
	}
	// A scratch packet with the request's authenticator and secret: the generated setters
	// encrypt with them, as an Access-Accept must (the response authenticator comes later).
	out := &radius.Packet{Secret: req.Secret, Authenticator: req.Authenticator}
	if microsoft.MSCHAP2Success_Add(out, append([]byte{m.ident}, res.AuthenticatorResponse...)) != nil ||
		mschapv2.AddMPPEKeys(out, res.SendKey, res.RecvKey) != nil {
		return nil, false
	}
	return out.Attributes, true
}

// msCHAPError is the Access-Reject's MS-CHAP-Error (RFC 2548 §2.1.5, RFC 2759 §6): error 691
// (authentication failure), no retry, a fresh challenge, version 3 (MS-CHAPv2).
func msCHAPError(ident byte) radius.Attributes {
	var challenge [msCHAPChallengeLen]byte
	_, _ = rand.Read(challenge[:])
	out := &radius.Packet{}
	_ = microsoft.MSCHAPError_Add(out, append([]byte{ident}, fmt.Sprintf("E=691 R=0 C=%X V=3 M=Authentication failed", challenge)...))
	return out.Attributes
}

// checkPAPHash checks a PAP password against the subscriber's NT hash.
func checkPAPHash(clear []byte, sub *subscriber.Subscriber) string {
	if !mschapv2.CheckPassword(clear, sub) {
		return reasonBadPassword
	}
	return ""
}
