// Package mschapv2 holds the MS-CHAPv2 computations (RFC 2759, RFC 3079) shared by MS-CHAPv2
// over RADIUS (aaa) and the EAP methods that carry it (EAP-MSCHAPv2 inside PEAP, MS-CHAPv2
// inside EAP-TTLS): layeh.com/radius's rfc2759 and rfc3079, plus the two steps layeh does
// from a clear-text password only.
package mschapv2

import (
	"crypto/sha1"
	"crypto/subtle"
	"encoding/hex"
	"strings"

	"layeh.com/radius"
	"layeh.com/radius/rfc2759"
	"layeh.com/radius/rfc3079"
	"layeh.com/radius/vendors/microsoft"

	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// UserName is the name in the challenge hash: without a Windows domain ("DOMAIN\user"
// hashes "user", RFC 2759 §8.2 and FreeRADIUS's with_ntdomain_hack).
func UserName(user string) string {
	if i := strings.LastIndexByte(user, '\\'); i >= 0 {
		return user[i+1:]
	}
	return user
}

// Result is a verified NT-Response: the authenticator response the peer checks
// ("S=<40 hex>") and the NAS's 128-bit MPPE keys (RFC 3079 §3.4 on the server side).
type Result struct {
	AuthenticatorResponse string
	SendKey, RecvKey      []byte
}

// Verify checks ntResponse against the NT hash (RFC 2759 §8.1) for the authenticator
// challenge and the peer challenge; ok false when it is wrong.
func Verify(ntHash, challenge, peerChallenge, ntResponse []byte, user string) (Result, bool) {
	ch := rfc2759.ChallengeHash(peerChallenge, challenge, []byte(UserName(user)))
	if subtle.ConstantTimeCompare(rfc2759.ChallengeResponse(ch, ntHash), ntResponse) != 1 {
		return Result{}, false
	}
	hashHash := rfc2759.NTPasswordHash(ntHash)
	send, recv, err := mppeKeys(hashHash, ntResponse)
	if err != nil {
		return Result{}, false
	}
	return Result{AuthenticatorResponse: authenticatorResponse(hashHash, ntResponse, ch), SendKey: send, RecvKey: recv}, true
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

// NTHash is the subscriber's NT hash: its ntPassword, else MD4 of the clear-text password in
// UTF-16LE (RFC 2759 §8.3); nil when it has neither.
func NTHash(sub *subscriber.Subscriber) []byte {
	if sub.Password == "" {
		h, ok := subscriber.NTHash(sub.NTPassword)
		if !ok {
			return nil // the sources check it when they load it
		}
		return h
	}
	return passwordHash([]byte(sub.Password))
}

func passwordHash(clear []byte) []byte {
	u, err := rfc2759.ToUTF16(clear)
	if err != nil {
		return nil
	}
	return rfc2759.NTPasswordHash(u)
}

// CheckPassword checks a clear-text password (PAP, or PAP inside a tunnel) against the
// subscriber: its clear-text password, else its NT hash.
func CheckPassword(clear []byte, sub *subscriber.Subscriber) bool {
	if sub.Password != "" {
		return subtle.ConstantTimeCompare(clear, []byte(sub.Password)) == 1
	}
	want, got := NTHash(sub), passwordHash(clear)
	return want != nil && got != nil && subtle.ConstantTimeCompare(got, want) == 1
}

// MS-MPPE-Encryption-Policy 1 (Encryption-Allowed) and -Types 6 (RC4 40 or 128 bit allowed):
// what FreeRADIUS sends by default, so NASes see the same Accept.
const (
	mppePolicyAllowed = 1
	mppeTypes40or128  = 6
)

// AddMPPEKeys adds the NAS's MS-MPPE-Recv-Key and -Send-Key (RFC 2548 §2.4.2-3: encrypted
// with out's secret and authenticator, which must be the request's) and the encryption policy
// and types: MS-CHAPv2's keys, or an EAP method's MSK (RFC 3579 §3.1 via RFC 2548).
func AddMPPEKeys(out *radius.Packet, send, recv []byte) error {
	if err := microsoft.MSMPPERecvKey_Add(out, recv); err != nil {
		return err
	}
	if err := microsoft.MSMPPESendKey_Add(out, send); err != nil {
		return err
	}
	if err := microsoft.MSMPPEEncryptionPolicy_Add(out, mppePolicyAllowed); err != nil {
		return err
	}
	return microsoft.MSMPPEEncryptionTypes_Add(out, mppeTypes40or128)
}
