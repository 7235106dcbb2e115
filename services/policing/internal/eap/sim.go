package eap

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"

	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// EAP-SIM (RFC 4186) for a USIM: the GSM triplets are made here from the subscriber's Ki and
// OPc, Milenage's RES, CK and IK converted to SRES and Kc by c2 and c3 (TS 33.102 §6.8.1.2),
// which is what the USIM computes in a GSM context. A USIM answering a GSM challenge checks
// no AUTN, so no SQN is taken. Version 1 only; three RANDs per Challenge; the permanent
// identity ("1" + IMSI) only, asked with AT_PERMANENT_ID_REQ after any other; pseudonyms
// and fast re-authentication are not done. Like AKA's, the state is a few values.
type simMethod struct {
	srv      *Server
	conv     *conversation
	identity string
	imsi     string
	askedID  bool
	sent     bool // a Challenge is in flight
	sub      *subscriber.Subscriber
	sres     []byte // SRES1 ‖ SRES2 ‖ SRES3, under the peer's AT_MAC
	keys     akaKeys
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
		if r := m.lookup(ctx); r != "" {
			return nil, reasonError(r)
		}
		return b.b, nil
	}
	m.askedID = true
	return b.attr(atPermanentIDReq, []byte{0, 0}).b, nil
}

func (m *simMethod) lookup(ctx context.Context) Reason {
	sub, r := m.srv.lookup(ctx, m.imsi)
	if r != "" {
		return r
	}
	if _, err := sub.AKA(); err != nil {
		return ReasonNoAKA
	}
	m.sub = sub
	return ""
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
		if !m.sent || !msg.verifyMAC(TypeSIM, m.conv.lastID, data, m.keys.kAut, m.sres) {
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
		if r := m.lookup(ctx); r != "" {
			return fail(r)
		}
	}
	card, _, r := usimOf(m.srv, m.sub, m.imsi)
	if r != "" {
		return fail(r)
	}
	// MK = SHA1(Identity ‖ n*Kc ‖ NONCE_MT ‖ Version List ‖ Selected Version) (RFC 4186 §7).
	var rands []byte
	h := sha1.New()
	h.Write([]byte(m.identity))
	m.sres = m.sres[:0]
	for len(rands) < simRANDs*16 {
		var r [16]byte
		_, _ = rand.Read(r[:])
		sres, kc := card.GSM(r[:])
		rands = append(rands, r[:]...)
		m.sres = append(m.sres, sres[:]...)
		h.Write(kc[:])
	}
	h.Write(nonce[2:])
	h.Write(simVersionList[2:])
	h.Write(v)
	m.keys = prfKeys([20]byte(h.Sum(nil)))
	m.sent = true
	b := newSim(simChallenge).attr(atRAND, []byte{0, 0}, rands).mac()
	return outcome{next: b.seal(TypeSIM, m.conv.lastID+1, m.keys.kAut, nonce[2:])}
}
