package eap

import (
	"crypto/hmac"
	"encoding/binary"
	"errors"

	"github.com/openaaa/openaaa/internal/milenage"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// AnswerAKA is the peer's answer to an EAP-AKA or AKA' Challenge (req, a whole EAP-Request)
// as a USIM with ki and opc and its supplicant compute it, identity being the identity the
// keys bind and network AKA”s network name: the EAP-Response and the MSK. It checks the
// Challenge's AT_MAC, not AUTN's MAC-A (the SQN is not the peer's concern here). It lets the
// tests of other packages (store/cassandra) run AKA through the server; the eapol_test runs
// check the server against a real supplicant.
func AnswerAKA(req []byte, identity, network string, ki, opc []byte) (resp, msk []byte, err error) {
	p, err := Parse(req)
	if err != nil || p.Code != CodeRequest || (p.Type != TypeAKA && p.Type != TypeAKAPrime) {
		return nil, nil, errors.New("eap: not an EAP-AKA Request")
	}
	m, err := parseSim(p.Data)
	rnd, autn := m.attrs[atRAND], m.attrs[atAUTN]
	if err != nil || m.subtype != akaChallenge || len(rnd) != 18 || len(autn) != 18 || m.macAt == 0 {
		return nil, nil, errors.New("eap: not an AKA-Challenge")
	}
	card, err := milenage.New(ki, opc)
	if err != nil {
		return nil, nil, err
	}
	// The card's side of the vector is the server's derivation, over what the Challenge says.
	v := &akaMethod{srv: &Server{opt: Options{AKANetworkName: network, Metrics: NewMetrics(metrics.Factory{})}}, typ: p.Type, identity: identity}
	copy(v.rand[:], rnd[2:])
	copy(v.sqnAK[:], autn[2:8])
	v.derive(card)
	zeroed := append([]byte{}, p.Data...)
	clear(zeroed[m.macAt : m.macAt+16])
	if !hmac.Equal(p.Data[m.macAt:m.macAt+16], simMAC(p.Type, v.keys.kAut, request(p.ID, p.Type, zeroed), nil)) {
		return nil, nil, errors.New("eap: the Challenge's AT_MAC does not verify")
	}
	b := newSim(akaChallenge).attr(atRES, binary.BigEndian.AppendUint16(nil, 8*uint16(len(v.xres))), v.xres[:]).mac()
	pkt := request(p.ID, p.Type, b.b)
	pkt[0] = CodeResponse
	copy(pkt[5+b.macAt:], simMAC(p.Type, v.keys.kAut, pkt, nil))
	return pkt, v.keys.msk, nil
}
