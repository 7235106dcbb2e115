// Package milenage is the 3GPP authentication and key generation functions f1, f1*, f2–f5
// and f5* (TS 35.206) on AES-128, the authentication vectors built from them (TS 33.102
// §6.3), and the recovery of the card's SQN from a resynchronisation token (AUTS). It holds
// the subscriber's key: never log a Card, and no error here carries key material.
package milenage

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/subtle"
	"errors"
)

// SQNMax is one more than the largest SQN (48 bits).
const SQNMax = 1 << 48

// Card is a subscriber's key K and OPc (the operator variant OP mixed with K).
type Card struct {
	block cipher.Block // AES-128 with K
	opc   [16]byte
}

var errKeyLen = errors.New("milenage: K, OP and OPc are 16 octets each")

// New returns the card of key k and OPc opc.
func New(k, opc []byte) (*Card, error) {
	if len(k) != 16 || len(opc) != 16 {
		return nil, errKeyLen
	}
	b, err := aes.NewCipher(k)
	if err != nil {
		return nil, errKeyLen
	}
	c := &Card{block: b}
	copy(c.opc[:], opc)
	return c, nil
}

// OPc derives OPc from K and OP: OP ⊕ E_K(OP) (TS 35.206 §4.1).
func OPc(k, op []byte) ([]byte, error) {
	if len(k) != 16 || len(op) != 16 {
		return nil, errKeyLen
	}
	b, err := aes.NewCipher(k)
	if err != nil {
		return nil, errKeyLen
	}
	out := make([]byte, 16)
	b.Encrypt(out, op)
	subtle.XORBytes(out, out, op)
	return out, nil
}

// temp is E_K(RAND ⊕ OPc), the value every function starts from.
func (c *Card) temp(rand []byte) [16]byte {
	var t [16]byte
	subtle.XORBytes(t[:], rand[:16], c.opc[:])
	c.block.Encrypt(t[:], t[:])
	return t
}

// out is OUTn = E_K(rot(x ⊕ OPc, r) ⊕ cn) ⊕ OPc, with r in octets and cn's last octet cLast.
func (c *Card) out(x [16]byte, r int, cLast byte) [16]byte {
	var in, o [16]byte
	for i := range 16 {
		in[i] = x[(i+r)%16] ^ c.opc[(i+r)%16]
	}
	in[15] ^= cLast
	c.block.Encrypt(o[:], in[:])
	subtle.XORBytes(o[:], o[:], c.opc[:])
	return o
}

// F1 returns MAC-A (f1) and MAC-S (f1*) of rand, the 6-octet sqn and the 2-octet amf.
func (c *Card) F1(rand, sqn, amf []byte) (macA, macS [8]byte) {
	t := c.temp(rand)
	var in1 [16]byte
	copy(in1[0:6], sqn)
	copy(in1[6:8], amf)
	copy(in1[8:14], sqn)
	copy(in1[14:16], amf)
	// OUT1 = E_K(TEMP ⊕ rot(IN1 ⊕ OPc, r1 = 64) ⊕ c1 = 0) ⊕ OPc
	var x [16]byte
	for i := range 16 {
		x[i] = t[i] ^ in1[(i+8)%16] ^ c.opc[(i+8)%16]
	}
	var o [16]byte
	c.block.Encrypt(o[:], x[:])
	subtle.XORBytes(o[:], o[:], c.opc[:])
	copy(macA[:], o[:8])
	copy(macS[:], o[8:])
	return macA, macS
}

// Keys are the outputs of f2–f5 and f5* for one RAND.
type Keys struct {
	RES    [8]byte  // f2
	CK, IK [16]byte // f3, f4
	AK     [6]byte  // f5
	AKStar [6]byte  // f5*, which conceals SQNms in AUTS
}

// F2345 computes f2, f3, f4, f5 and f5* of rand.
func (c *Card) F2345(rand []byte) Keys {
	t := c.temp(rand)
	var k Keys
	o2 := c.out(t, 0, 1) // r2 = 0, c2 = 1
	copy(k.AK[:], o2[:6])
	copy(k.RES[:], o2[8:])
	k.CK = c.out(t, 4, 2) // r3 = 32 bits, c3 = 2
	k.IK = c.out(t, 8, 4) // r4 = 64 bits, c4 = 4
	o5 := c.out(t, 12, 8) // r5 = 96 bits, c5 = 8
	copy(k.AKStar[:], o5[:6])
	return k
}

// Vector is one authentication vector (TS 33.102 §6.3.2).
type Vector struct {
	RAND   [16]byte
	XRES   [8]byte
	CK, IK [16]byte
	AUTN   [16]byte // SQN ⊕ AK ‖ AMF ‖ MAC-A
}

// Generate builds the vector of rand, sqn (< SQNMax) and amf.
func (c *Card) Generate(rand [16]byte, sqn uint64, amf [2]byte) Vector {
	s := PutSQN(sqn)
	macA, _ := c.F1(rand[:], s[:], amf[:])
	k := c.F2345(rand[:])
	v := Vector{RAND: rand, XRES: k.RES, CK: k.CK, IK: k.IK}
	subtle.XORBytes(v.AUTN[:6], s[:], k.AK[:])
	copy(v.AUTN[6:8], amf[:])
	copy(v.AUTN[8:], macA[:])
	return v
}

// ErrAUTS is a resynchronisation token whose MAC-S does not verify.
var ErrAUTS = errors.New("milenage: AUTS does not verify (MAC-S)")

// Resync recovers the card's SQNms from AUTS = SQNms ⊕ AK* ‖ MAC-S, sent by the card in
// answer to rand (TS 33.102 §6.3.5); MAC-S is f1* with AMF 0 (§6.3.3).
func (c *Card) Resync(rand []byte, auts []byte) (uint64, error) {
	if len(auts) != 14 {
		return 0, ErrAUTS
	}
	k := c.F2345(rand)
	var s [6]byte
	subtle.XORBytes(s[:], auts[:6], k.AKStar[:])
	_, macS := c.F1(rand, s[:], []byte{0, 0})
	if subtle.ConstantTimeCompare(macS[:], auts[6:]) != 1 {
		return 0, ErrAUTS
	}
	return SQN(s[:]), nil
}

// PutSQN encodes a 48-bit SQN.
func PutSQN(sqn uint64) [6]byte {
	var s [6]byte
	for i := range 6 {
		s[i] = byte(sqn >> (8 * (5 - i)))
	}
	return s
}

// SQN decodes a 6-octet SQN.
func SQN(b []byte) uint64 {
	var v uint64
	for _, x := range b[:6] {
		v = v<<8 | uint64(x)
	}
	return v
}

// GSM returns the GSM triplet's SRES and Kc of rand through the conversion functions c2
// and c3 (TS 33.102 §6.8.1.2): a USIM answering a GSM challenge (EAP-SIM).
func (c *Card) GSM(rand []byte) (sres [4]byte, kc [8]byte) {
	k := c.F2345(rand)
	subtle.XORBytes(sres[:], k.RES[:4], k.RES[4:]) // c2, for an 8-octet RES
	for i := range 8 {                             // c3
		kc[i] = k.CK[i] ^ k.CK[i+8] ^ k.IK[i] ^ k.IK[i+8]
	}
	return sres, kc
}
