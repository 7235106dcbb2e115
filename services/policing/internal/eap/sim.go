package eap

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"

	"github.com/openaaa/openaaa/internal/milenage"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// EAP-SIM (RFC 4186) for a USIM: the GSM triplets are made here from the subscriber's Ki and
// OPc, Milenage's RES, CK and IK converted to SRES and Kc by c2 and c3 (TS 33.102 §6.8.1.2),
// which is what the USIM computes in a GSM context. A USIM answering a GSM challenge checks
// no AUTN, so no SQN is taken. Version 1 only; three RANDs per Challenge; the permanent
// identity ("1" + IMSI) only, asked with AT_PERMANENT_ID_REQ after any other; pseudonyms
// and fast re-authentication are not done. Like AKA's, the conversation between rounds is a
// few values that went over the air (the stage, the RANDs, NONCE_MT, the identity), kept in
// the session store; SRES and the keys are recomputed by the node that continues (derive).
type simMethod struct {
	srv      *Server
	conv     *conversation
	identity string
	imsi     string
	askedID  bool
	sent     bool                // a Challenge is in flight
	rands    [simRANDs * 16]byte // its RANDs
	nonce    [16]byte            // the peer's NONCE_MT
	// Not stored: looked up, or recomputed by derive.
	sub  *subscriber.Subscriber
	sres []byte // SRES1 ‖ SRES2 ‖ SRES3, under the peer's AT_MAC
	keys akaKeys
}

const (
	simPrefixes = "1"
	simVersion  = 1
	simRANDs    = 3
)

// simVersionList is AT_VERSION_LIST's value (its length, then version 1) and, without the
// length, the "Version List" the master key covers.
var simVersionList = []byte{0, 2, 0, simVersion}

func (m *simMethod) start(ctx context.Context) ([]byte, error) {
	b := newSim(simStart).attr(atVersionList, simVersionList)
	if imsi, ok := permanentIMSI(m.identity, simPrefixes); ok {
		m.imsi = imsi
		if _, _, r := m.srv.usim(ctx, &m.sub, m.imsi); r != "" {
			return nil, reasonError(r)
		}
		return b.b, nil
	}
	m.askedID = true
	return b.attr(atPermanentIDReq, []byte{0, 0}).b, nil
}

func (m *simMethod) step(ctx context.Context, _ byte, data []byte) outcome {
	msg, err := parseSim(data)
	if err != nil {
		return fail(ReasonMalformed)
	}
	switch msg.subtype {
	case simStart:
		return m.startResponse(ctx, msg)
	case simChallenge:
		if !m.sent {
			return fail(ReasonBadResponse)
		}
		if r := m.srv.rederive(ctx, m.keys.kAut != nil, &m.sub, m.imsi, m.derive); r != "" {
			return fail(r)
		}
		if !msg.verifyMAC(TypeSIM, m.conv.lastID, data, m.keys.kAut, m.sres) {
			return fail(ReasonBadResponse)
		}
		return outcome{done: true, sub: m.sub, msk: m.keys.msk}
	case akaClientError:
		return fail(ReasonClientError)
	}
	return fail(ReasonMalformed)
}

func (m *simMethod) close() {}

// startResponse takes the peer's NONCE_MT, selected version and (if asked) identity, and
// sends the Challenge.
func (m *simMethod) startResponse(ctx context.Context, msg simMsg) outcome {
	nonce, v := msg.attrs[atNonceMT], msg.attrs[atSelectedVersion]
	if m.sent || len(nonce) != 18 || !bytes.Equal(v, []byte{0, simVersion}) {
		return fail(ReasonMalformed)
	}
	if m.askedID {
		id, ok := msg.identity()
		if !ok {
			return fail(ReasonMalformed)
		}
		m.identity = id
		if m.imsi, ok = permanentIMSI(m.identity, simPrefixes); !ok {
			return fail(ReasonUnknownUser)
		}
	}
	card, _, r := m.srv.usim(ctx, &m.sub, m.imsi)
	if r != "" {
		return fail(r)
	}
	_, _ = rand.Read(m.rands[:])
	copy(m.nonce[:], nonce[2:])
	m.derive(card)
	m.sent = true
	b := newSim(simChallenge).attr(atRAND, []byte{0, 0}, m.rands[:]).mac()
	return outcome{next: b.seal(TypeSIM, m.conv.lastID+1, m.keys.kAut, m.nonce[:])}
}

// derive computes what the Challenge of the RANDs binds, from the subscriber's Ki and OPc:
// each RAND's SRES and Kc, then MK = SHA1(Identity ‖ n*Kc ‖ NONCE_MT ‖ Version List ‖
// Selected Version) (RFC 4186 §7) and the keys. The node that sends the Challenge and one
// that continues the conversation from the store both come here.
func (m *simMethod) derive(card *milenage.Card) {
	h := sha1.New()
	h.Write([]byte(m.identity))
	m.sres = m.sres[:0]
	for r := range simRANDs {
		sres, kc := card.GSM(m.rands[16*r : 16*(r+1)])
		m.sres = append(m.sres, sres[:]...)
		h.Write(kc[:])
	}
	h.Write(m.nonce[:])
	h.Write(simVersionList[2:])
	h.Write([]byte{0, simVersion}) // the only one taken
	m.keys = prfKeys([20]byte(h.Sum(nil)))
}

// simStateLen is the fixed part of a SIM state: the stage, NONCE_MT, the RANDs.
const simStateLen = 1 + 16 + simRANDs*16

// state is the stage, the peer's NONCE_MT and the Challenge's RANDs (zeros before it; all
// went over the air) and the identity the keys bind; the IMSI is the identity's, the version
// is 1. No SRES, no Kc, no key: derive recomputes them.
func (m *simMethod) state() []byte {
	b := make([]byte, 0, simStateLen+len(m.identity))
	b = append(b, stage(m.askedID, false, m.sent))
	b = append(b, m.nonce[:]...)
	b = append(b, m.rands[:]...)
	return append(b, m.identity...)
}

// restore reads what state wrote (false: malformed, or a stage no conversation is in).
func (m *simMethod) restore(st []byte) bool {
	if len(st) < simStateLen || st[0]&^(stAskedID|stSent) != 0 {
		return false
	}
	m.askedID, m.sent = st[0]&stAskedID != 0, st[0]&stSent != 0
	copy(m.nonce[:], st[1:17])
	copy(m.rands[:], st[17:simStateLen])
	m.identity = string(st[simStateLen:])
	var permanent bool
	m.imsi, permanent = permanentIMSI(m.identity, simPrefixes)
	// Between rounds: a Challenge in flight (to a permanent identity), or the Start sent,
	// asking the identity unless the EAP identity was permanent.
	return permanent == (m.sent || !m.askedID)
}
