package aaa

import (
	"crypto/rand"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"

	"layeh.com/radius"
	"layeh.com/radius/rfc2759"
	"layeh.com/radius/rfc3079"
	"layeh.com/radius/vendors/microsoft"

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
	// MS-MPPE-Encryption-Policy 1 (Encryption-Allowed) and -Types 6 (RC4 40 or 128 bit
	// allowed): what FreeRADIUS's rlm_mschap sends by default, so NASes see the same Accept.
	mppePolicyAllowed = 1
	mppeTypes40or128  = 6
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

// msCHAPUserName is the name in the challenge hash: without a Windows domain ("DOMAIN\user"
// hashes "user", RFC 2759 §8.2 and FreeRADIUS's with_ntdomain_hack).
func msCHAPUserName(user string) string {
	if i := strings.LastIndexByte(user, '\\'); i >= 0 {
		return user[i+1:]
	}
	return user
}

// verify checks the NT-Response against the password's NT hash (RFC 2759 §8.1) and returns
// the Access-Accept's MS-CHAP2-Success and MPPE attributes, built for req (the request
// authenticator and secret salt-encrypt the keys, RFC 2548 §2.4.2-3), or ok false.
func (m msCHAPv2) verify(req *radius.Packet, user string, ntHash []byte) (radius.Attributes, bool) {
	challenge := rfc2759.ChallengeHash(m.peerChallenge, m.challenge, []byte(msCHAPUserName(user)))
	want := rfc2759.ChallengeResponse(challenge, ntHash)
	if subtle.ConstantTimeCompare(want, m.ntResponse) != 1 {
		return nil, false
	}
	hashHash := rfc2759.NTPasswordHash(ntHash)
	send, recv, err := mppeKeys(hashHash, m.ntResponse)
	if err != nil {
		return nil, false
	}
	success := authenticatorResponse(hashHash, m.ntResponse, challenge)
	// A scratch packet with the request's authenticator and secret: the generated setters
	// encrypt with them, as an Access-Accept must (the response authenticator comes later).
	out := &radius.Packet{Secret: req.Secret, Authenticator: req.Authenticator}
	if microsoft.MSCHAP2Success_Add(out, append([]byte{m.ident}, success...)) != nil ||
		microsoft.MSMPPERecvKey_Add(out, recv) != nil ||
		microsoft.MSMPPESendKey_Add(out, send) != nil ||
		microsoft.MSMPPEEncryptionPolicy_Add(out, mppePolicyAllowed) != nil ||
		microsoft.MSMPPEEncryptionTypes_Add(out, mppeTypes40or128) != nil {
		return nil, false
	}
	return out.Attributes, true
}

// RFC 2759 §8.7's constants.
var (
	authMagic1 = []byte("Magic server to client signing constant")
	authMagic2 = []byte("Pad to make it do more than one iteration")
)

// authenticatorResponse is RFC 2759 §8.7's GenerateAuthenticatorResponse from the NT hash's
// hash (layeh's takes the clear-text password, which an ntPassword subscriber lacks).
func authenticatorResponse(hashHash, ntResponse, challenge []byte) string {
	d := sha1.New()
	d.Write(hashHash)
	d.Write(ntResponse)
	d.Write(authMagic1)
	digest := d.Sum(nil)
	d.Reset()
	d.Write(digest)
	d.Write(challenge)
	d.Write(authMagic2)
	return "S=" + strings.ToUpper(hex.EncodeToString(d.Sum(nil)))
}

// mppeKeys derives the 128-bit MS-MPPE-Send-Key and -Recv-Key of the NAS (RFC 3079 §3.4 on
// the server side: its send key is the peer's receive key).
func mppeKeys(hashHash, ntResponse []byte) (send, recv []byte, err error) {
	master := rfc3079.GetMasterKey(hashHash, ntResponse)
	if send, err = rfc3079.GetAsymmetricStartKey(master, rfc3079.KeyLength128Bit, true); err != nil {
		return nil, nil, err
	}
	if recv, err = rfc3079.GetAsymmetricStartKey(master, rfc3079.KeyLength128Bit, false); err != nil {
		return nil, nil, err
	}
	return send, recv, nil
}

// ntHash is the subscriber's NT hash: its ntPassword, else MD4 of the clear-text password in
// UTF-16LE (RFC 2759 §8.3); nil when it has neither.
func ntHash(sub *subscriber.Subscriber) []byte {
	if sub.Password == "" {
		h, ok := subscriber.NTHash(sub.NTPassword)
		if !ok {
			return nil // the sources check it when they load it
		}
		return h
	}
	u, err := rfc2759.ToUTF16([]byte(sub.Password))
	if err != nil {
		return nil
	}
	return rfc2759.NTPasswordHash(u)
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
	want := ntHash(sub)
	u, err := rfc2759.ToUTF16(clear)
	if want == nil || err != nil || subtle.ConstantTimeCompare(rfc2759.NTPasswordHash(u), want) != 1 {
		return reasonBadPassword
	}
	return ""
}
