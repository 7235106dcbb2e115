package eap

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
)

// The keys of EAP-AKA (RFC 4187 §7) and EAP-AKA' (RFC 9048 §3.3, §3.4.1).

// akaKeys are what a Challenge derives: K_aut keys AT_MAC, the MSK goes to the NAS, the
// EMSK is kept for nothing yet (RFC 5295 usages are not done). K_encr would protect
// AT_ENCR_DATA (pseudonyms, fast re-authentication: not done).
type akaKeys struct {
	kAut      []byte
	msk, emsk []byte
}

// akaDerive: MK = SHA1(Identity ‖ IK ‖ CK), then K_encr ‖ K_aut ‖ MSK ‖ EMSK = PRF(MK),
// FIPS 186-2's generator (RFC 4187 §7).
func akaDerive(identity string, ik, ck []byte) akaKeys {
	h := sha1.New()
	h.Write([]byte(identity))
	h.Write(ik)
	h.Write(ck)
	return prfKeys([20]byte(h.Sum(nil)))
}

// prfKeys: K_encr ‖ K_aut ‖ MSK ‖ EMSK = PRF(MK), the key layout of EAP-SIM and EAP-AKA.
func prfKeys(mk [20]byte) akaKeys {
	out := fips186PRF(mk, 16+16+64+64)
	return akaKeys{kAut: out[16:32], msk: out[32:96], emsk: out[96:160]}
}

// akaPrimeDerive: MK = PRF'(IK' ‖ CK', "EAP-AKA'" ‖ Identity); K_encr (16) ‖ K_aut (32) ‖
// K_re (32) ‖ MSK (64) ‖ EMSK (64) (RFC 9048 §3.3).
func akaPrimeDerive(identity string, ikP, ckP []byte) akaKeys {
	key := append(append([]byte{}, ikP...), ckP...)
	out := prfPrime(key, append([]byte("EAP-AKA'"), identity...), 16+32+32+64+64)
	return akaKeys{kAut: out[16:48], msk: out[80:144], emsk: out[144:208]}
}

// ckIKPrime: CK' ‖ IK' = HMAC-SHA-256(CK ‖ IK, S), S = FC 0x20 ‖ access network name ‖ its
// length (2 octets) ‖ SQN ⊕ AK ‖ 0x0006 (RFC 9048 §3.3, TS 33.402 Annex A.2).
func ckIKPrime(ck, ik []byte, network string, sqnAK []byte) (ckP, ikP []byte) {
	m := hmac.New(sha256.New, append(append([]byte{}, ck...), ik...))
	m.Write([]byte{0x20})
	m.Write([]byte(network))
	m.Write(binary.BigEndian.AppendUint16(nil, uint16(len(network))))
	m.Write(sqnAK)
	m.Write([]byte{0, 6})
	out := m.Sum(nil)
	return out[:16], out[16:]
}

// prfPrime is PRF'(K, S) = T1 ‖ T2 ‖ …, Tn = HMAC-SHA-256(K, Tn-1 ‖ S ‖ n) (RFC 9048 §3.4.1).
func prfPrime(key, s []byte, n int) []byte {
	var out, t []byte
	for i := byte(1); len(out) < n; i++ {
		m := hmac.New(sha256.New, key)
		m.Write(t)
		m.Write(s)
		m.Write([]byte{i})
		t = m.Sum(nil)
		out = append(out, t...)
	}
	return out[:n]
}

// fips186PRF is FIPS 186-2 (change notice 1) §3.1's generator with b = 160 and no seed, as
// RFC 4186 §7 and RFC 4187 §7 use it: w = G(XKEY), XKEY = (1 + XKEY + w) mod 2^160.
func fips186PRF(xkey [20]byte, n int) []byte {
	out := make([]byte, 0, n+20)
	for len(out) < n {
		w := sha1G(xkey)
		out = append(out, w[:]...)
		carry := 1
		for k := 19; k >= 0; k-- {
			s := int(xkey[k]) + int(w[k]) + carry
			xkey[k], carry = byte(s), s>>8
		}
	}
	return out[:n]
}

// sha1G is SHA-1's compression function on one block, x padded with zeros and no length
// (FIPS 186-2 Appendix 3.3); crypto/sha1 does not expose it.
func sha1G(x [20]byte) [20]byte {
	var w [80]uint32
	for i := range 5 {
		w[i] = binary.BigEndian.Uint32(x[4*i:])
	}
	for i := 16; i < 80; i++ {
		w[i] = bits.RotateLeft32(w[i-3]^w[i-8]^w[i-14]^w[i-16], 1)
	}
	h := [5]uint32{0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0}
	a, b, c, d, e := h[0], h[1], h[2], h[3], h[4]
	for i := range 80 {
		var f, k uint32
		switch {
		case i < 20:
			f, k = b&c|^b&d, 0x5A827999
		case i < 40:
			f, k = b^c^d, 0x6ED9EBA1
		case i < 60:
			f, k = b&c|b&d|c&d, 0x8F1BBCDC
		default:
			f, k = b^c^d, 0xCA62C1D6
		}
		t := bits.RotateLeft32(a, 5) + f + e + k + w[i]
		a, b, c, d, e = t, a, bits.RotateLeft32(b, 30), c, d
	}
	var out [20]byte
	for i, v := range []uint32{h[0] + a, h[1] + b, h[2] + c, h[3] + d, h[4] + e} {
		binary.BigEndian.PutUint32(out[4*i:], v)
	}
	return out
}
