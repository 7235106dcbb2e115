package eapoltest

import (
	"bytes"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/openaaa/openaaa/internal/milenage"
)

// USIM is the card behind eapol_test's external SIM interface (external_sim=1): Debian's
// eapol_test 2.10 is built without wpa_supplicant's Milenage simulator (CONFIG_USIM_SIMULATOR,
// password="Ki:OPc:SQN"), so the test answers its CTRL-REQ-SIM UMTS-AUTH requests as a USIM
// does (TS 33.102 §6.3.3): AUTN's MAC checked, the SQN fresh (greater than the last accepted)
// or AUTS, then RES, CK and IK. eapol_test does the rest of EAP-AKA and AKA' (AT_MAC, the
// keys, CK'/IK', the MSK it compares with the MPPE keys). To EAP-SIM's GSM-AUTH it answers as
// a USIM in a GSM context: SRES and Kc by c2 and c3.
type USIM struct {
	card *milenage.Card
	mu   sync.Mutex
	sqn  uint64 // the last SQN accepted
}

// NewUSIM is a card with Ki and OPc (hex) whose last accepted SQN is sqn.
func NewUSIM(ki, opc string, sqn uint64) (*USIM, error) {
	k, err := hex.DecodeString(ki)
	if err != nil {
		return nil, fmt.Errorf("ki: %w", err)
	}
	o, err := hex.DecodeString(opc)
	if err != nil {
		return nil, fmt.Errorf("opc: %w", err)
	}
	c, err := milenage.New(k, o)
	if err != nil {
		return nil, err
	}
	return &USIM{card: c, sqn: sqn}, nil
}

// Answer is the card's reply to one request of eapol_test ("UMTS-AUTH:<RAND>:<AUTN>" or
// "GSM-AUTH:<RAND>:<RAND>[:<RAND>]"), as its control interface reads it.
func (u *USIM) Answer(req string) (string, error) {
	f := strings.Split(req, ":")
	switch {
	case len(f) == 3 && f[0] == "UMTS-AUTH":
		rand, err1 := hex.DecodeString(f[1])
		autn, err2 := hex.DecodeString(f[2])
		if err1 != nil || err2 != nil || len(rand) != 16 || len(autn) != 16 {
			return "", fmt.Errorf("malformed SIM request %q", req)
		}
		return u.umts(rand, autn), nil
	case len(f) >= 3 && f[0] == "GSM-AUTH":
		out := "GSM-AUTH"
		for _, r := range f[1:] {
			rand, err := hex.DecodeString(r)
			if err != nil || len(rand) != 16 {
				return "", fmt.Errorf("malformed SIM request %q", req)
			}
			sres, kc := u.card.GSM(rand)
			out += ":" + hex.EncodeToString(kc[:]) + ":" + hex.EncodeToString(sres[:])
		}
		return out, nil
	}
	return "", fmt.Errorf("unexpected SIM request %q", req)
}

// umts answers UMTS-AUTH with rand and autn.
func (u *USIM) umts(rand, autn []byte) string {
	ks := u.card.F2345(rand)
	var sqn [6]byte
	subtle.XORBytes(sqn[:], autn[:6], ks.AK[:])
	macA, _ := u.card.F1(rand, sqn[:], autn[6:8])
	if !bytes.Equal(macA[:], autn[8:]) {
		return "UMTS-FAIL" // not a network that knows our key: Authentication-Reject
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if milenage.SQN(sqn[:]) <= u.sqn {
		ms := milenage.PutSQN(u.sqn)
		auts := make([]byte, 14)
		subtle.XORBytes(auts[:6], ms[:], ks.AKStar[:])
		_, macS := u.card.F1(rand, ms[:], []byte{0, 0})
		copy(auts[6:], macS[:])
		return "UMTS-AUTS:" + hex.EncodeToString(auts)
	}
	u.sqn = milenage.SQN(sqn[:])
	return "UMTS-AUTH:" + hex.EncodeToString(ks.IK[:]) + ":" + hex.EncodeToString(ks.CK[:]) + ":" + hex.EncodeToString(ks.RES[:])
}
