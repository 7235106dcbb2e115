package eap

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"strings"

	"github.com/openaaa/openaaa/internal/milenage"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// EAP-AKA (RFC 4187) and EAP-AKA' (RFC 9048, formerly 5448): the vector is computed here with
// Milenage from the subscriber's Ki and OPc (or OP), its SQN taken from the session store so
// that it only grows, across nodes and DCs (session.SQNCounter). The peer's permanent
// identity names the subscriber by IMSI; a peer that gives another identity is asked for it
// (AT_PERMANENT_ID_REQ). Pseudonyms and fast re-authentication are not done.
//
// The state between rounds is a few values (the identity, RAND, XRES, K_aut, the MSK and
// EMSK, two flags), so that it could be stored for another node to resume (docs/eap.md).
type akaMethod struct {
	srv      *Server
	typ      byte          // TypeAKA or TypeAKAPrime
	conv     *conversation // its next Identifier is under AT_MAC
	identity string        // the identity the keys bind: the last AT_IDENTITY, else the EAP one
	imsi     string
	askedID  bool // AKA-Identity sent
	resynced bool // one resynchronisation per conversation
	sent     bool // a Challenge is in flight
	sub      *subscriber.Subscriber
	rand     [16]byte
	xres     [8]byte
	keys     akaKeys
}

// permanentIMSI returns the IMSI of a permanent identity: one of prefixes ("0" AKA, "6" AKA',
// "1" SIM) then 5 to 15 digits, with an optional realm (RFC 4186 §4.2.1.6, RFC 4187
// §4.1.1.6, RFC 9048 §3.1).
func permanentIMSI(identity, prefixes string) (string, bool) {
	user, _, _ := strings.Cut(identity, "@")
	if len(user) < 6 || len(user) > 16 || !strings.ContainsRune(prefixes, rune(user[0])) {
		return "", false
	}
	for _, c := range user[1:] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return user[1:], true
}

// akaPrefixes: either method takes either permanent identity (the keys bind it anyway).
const akaPrefixes = "06"

func (m *akaMethod) start(ctx context.Context) ([]byte, error) {
	if imsi, ok := permanentIMSI(m.identity, akaPrefixes); ok {
		m.imsi = imsi
		data, r := m.challenge(ctx, 0)
		if r != "" {
			return nil, reasonError(r)
		}
		return data, nil
	}
	m.askedID = true
	return newSim(akaIdentity).attr(atPermanentIDReq, []byte{0, 0}).b, nil
}

func (m *akaMethod) step(ctx context.Context, _ byte, data []byte) outcome {
	msg, err := parseSim(data)
	if err != nil {
		return fail(ReasonMalformed)
	}
	switch msg.subtype {
	case akaIdentity:
		return m.identityResponse(ctx, msg)
	case akaChallenge:
		return m.challengeResponse(data, msg)
	case akaSyncFailure:
		return m.syncFailure(ctx, msg)
	case akaAuthReject:
		return fail(ReasonAKAReject)
	case akaClientError:
		return fail(ReasonClientError)
	}
	return fail(ReasonMalformed)
}

func (m *akaMethod) close() {}

// identityResponse: the peer's AT_IDENTITY, which must be permanent.
func (m *akaMethod) identityResponse(ctx context.Context, msg simMsg) outcome {
	id, ok := msg.identity()
	if !m.askedID || m.sent || !ok {
		return fail(ReasonMalformed)
	}
	m.identity = id
	imsi, ok := permanentIMSI(m.identity, akaPrefixes)
	if !ok {
		return fail(ReasonUnknownUser)
	}
	m.imsi = imsi
	next, r := m.challenge(ctx, 0)
	if r != "" {
		return fail(r)
	}
	return outcome{next: next}
}

// challenge makes a vector with the subscriber's next SQN (at least floor) and sends it.
func (m *akaMethod) challenge(ctx context.Context, floor uint64) ([]byte, Reason) {
	if m.sub == nil {
		sub, r := m.srv.lookup(ctx, m.imsi)
		if r != "" {
			return nil, r
		}
		m.sub = sub
	}
	card, a, r := m.card()
	if r != "" {
		return nil, r
	}
	if d := m.srv.opt.RoundTimeout; d > 0 { // a shared store's Paxos rounds hold no worker longer
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	sqn, err := m.srv.opt.SQN.NextSQN(ctx, m.imsi, max(a.SQN+1, floor))
	if err != nil {
		m.srv.opt.Log.Warn("eap-aka sequence number not taken", "err", err)
		return nil, ReasonSQNStore
	}
	if sqn >= milenage.SQNMax {
		return nil, ReasonInternal
	}
	_, _ = rand.Read(m.rand[:])
	v := card.Generate(m.rand, sqn, a.AMF)
	m.xres = v.XRES
	b := newSim(akaChallenge).attr(atRAND, []byte{0, 0}, v.RAND[:]).attr(atAUTN, []byte{0, 0}, v.AUTN[:])
	if m.typ == TypeAKAPrime {
		ckP, ikP := ckIKPrime(v.CK[:], v.IK[:], m.srv.opt.AKANetworkName, v.AUTN[:6])
		m.keys = akaPrimeDerive(m.identity, ikP, ckP)
		b.attr(atKDFInput, withLength([]byte(m.srv.opt.AKANetworkName))).attr(atKDF, []byte{0, 1})
	} else {
		m.keys = akaDerive(m.identity, v.IK[:], v.CK[:])
		if m.srv.offers(TypeAKAPrime) { // against bidding down (RFC 9048 §4)
			b.attr(atBidding, []byte{0x80, 0})
		}
	}
	m.sent = true
	return b.mac().seal(m.typ, m.conv.lastID+1, m.keys.kAut, nil), ""
}

func (m *akaMethod) card() (*milenage.Card, subscriber.AKA, Reason) {
	return usimOf(m.srv, m.sub, m.imsi)
}

// usimOf is the subscriber's USIM: Ki and OPc (from OP when the file gives OP).
func usimOf(srv *Server, sub *subscriber.Subscriber, imsi string) (*milenage.Card, subscriber.AKA, Reason) {
	a, err := sub.AKA()
	if errors.Is(err, subscriber.ErrNoAKA) {
		return nil, a, ReasonNoAKA
	}
	if err == nil && a.OPc == nil {
		a.OPc, err = milenage.OPc(a.Ki, a.OP)
	}
	var c *milenage.Card
	if err == nil {
		c, err = milenage.New(a.Ki, a.OPc)
	}
	if err != nil { // the error names a field, never a value
		srv.opt.Log.Warn("eap-aka credentials unusable", "subscriber", imsi, "err", err)
		return nil, a, ReasonNoAKA
	}
	return c, a, ""
}

// challengeResponse checks AT_MAC and AT_RES against the vector sent.
func (m *akaMethod) challengeResponse(data []byte, msg simMsg) outcome {
	if !m.sent {
		return fail(ReasonMalformed)
	}
	if !msg.verifyMAC(m.typ, m.conv.lastID, data, m.keys.kAut, nil) {
		return fail(ReasonBadResponse)
	}
	res, ok := msg.attrs[atRES]
	if !ok || len(res) < 2 || binary.BigEndian.Uint16(res) != 64 || len(res) < 10 ||
		subtle.ConstantTimeCompare(res[2:10], m.xres[:]) != 1 {
		return fail(ReasonBadResponse)
	}
	return outcome{done: true, sub: m.sub, msk: m.keys.msk}
}

// syncFailure: the card found our SQN stale and sent its own, SQNms, in AUTS (RFC 4187
// §6.3.1, TS 33.102 §6.3.5): the store's SQN moves past SQNms and a new Challenge follows.
// Once per conversation.
func (m *akaMethod) syncFailure(ctx context.Context, msg simMsg) outcome {
	auts, ok := msg.attrs[atAUTS]
	if !m.sent || m.resynced || !ok || len(auts) != 14 {
		return fail(ReasonResync)
	}
	card, _, r := m.card()
	if r != "" {
		return fail(r)
	}
	sqnMS, err := card.Resync(m.rand[:], auts)
	if err != nil {
		return fail(ReasonResync)
	}
	m.resynced = true
	resyncs.Inc()
	next, r := m.challenge(ctx, sqnMS+1)
	if r != "" {
		return fail(r)
	}
	return outcome{next: next}
}
