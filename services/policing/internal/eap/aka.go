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
// Between rounds the conversation is a few values that went over the air (the stage, RAND,
// SQN ⊕ AK, the identity), kept in the session store (shared.go) so that any node continues
// it: that node looks the subscriber up again and recomputes XRES and the keys (derive). No
// key is stored; on a node that made the vector itself they are kept until the next round.
type akaMethod struct {
	srv      *Server
	typ      byte          // TypeAKA or TypeAKAPrime
	conv     *conversation // its next Identifier is under AT_MAC
	identity string        // the identity the keys bind: the last AT_IDENTITY, else the EAP one
	imsi     string
	askedID  bool     // AKA-Identity sent
	resynced bool     // one resynchronisation per conversation
	sent     bool     // a Challenge is in flight
	rand     [16]byte // of the Challenge in flight
	sqnAK    [6]byte  // its SQN ⊕ AK (AUTN's first octets), which AKA' binds
	// Not stored: looked up, or recomputed by derive.
	sub  *subscriber.Subscriber
	xres [8]byte
	keys akaKeys
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
		return m.challengeResponse(ctx, data, msg)
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
	card, a, r := m.srv.usim(ctx, &m.sub, m.imsi)
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
	copy(m.sqnAK[:], v.AUTN[:6])
	m.derive(card)
	b := newSim(akaChallenge).attr(atRAND, []byte{0, 0}, v.RAND[:]).attr(atAUTN, []byte{0, 0}, v.AUTN[:])
	if m.typ == TypeAKAPrime {
		b.attr(atKDFInput, withLength([]byte(m.srv.opt.AKANetworkName))).attr(atKDF, []byte{0, 1})
	} else if m.srv.offers(TypeAKAPrime) { // against bidding down (RFC 9048 §4)
		b.attr(atBidding, []byte{0x80, 0})
	}
	m.sent = true
	return b.mac().seal(m.typ, m.conv.lastID+1, m.keys.kAut, nil), ""
}

// derive computes what the Challenge of RAND binds, from the subscriber's Ki and OPc: XRES,
// and the keys over the identity (AKA': over CK' and IK', from the network name and SQN ⊕
// AK). The node that makes the vector and one that continues the conversation from the
// store both come here.
func (m *akaMethod) derive(card *milenage.Card) {
	k := card.F2345(m.rand[:])
	m.xres = k.RES
	if m.typ == TypeAKAPrime {
		ckP, ikP := ckIKPrime(k.CK[:], k.IK[:], m.srv.opt.AKANetworkName, m.sqnAK[:])
		m.keys = akaPrimeDerive(m.identity, ikP, ckP)
	} else {
		m.keys = akaDerive(m.identity, k.IK[:], k.CK[:])
	}
}

// usim is the subscriber's USIM: Ki and OPc (from OP when the file gives OP). The subscriber
// is looked up first unless *sub holds it (a conversation restored from the store holds none).
func (s *Server) usim(ctx context.Context, sub **subscriber.Subscriber, imsi string) (*milenage.Card, subscriber.AKA, Reason) {
	if *sub == nil {
		found, r := s.lookup(ctx, imsi)
		if r != "" {
			return nil, subscriber.AKA{}, r
		}
		*sub = found
	}
	a, err := (*sub).AKA()
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
		s.opt.Log.Warn("eap-aka credentials unusable", "subscriber", imsi, "err", err)
		return nil, a, ReasonNoAKA
	}
	return c, a, ""
}

// rederive gives a conversation restored from the store (which keeps no key) the keys of its
// Challenge again, unless it has them: the subscriber looked up, then derive.
func (s *Server) rederive(ctx context.Context, have bool, sub **subscriber.Subscriber, imsi string, derive func(*milenage.Card)) Reason {
	if have {
		return ""
	}
	card, _, r := s.usim(ctx, sub, imsi)
	if r == "" {
		derive(card)
	}
	return r
}

// challengeResponse checks AT_MAC and AT_RES against the vector sent.
func (m *akaMethod) challengeResponse(ctx context.Context, data []byte, msg simMsg) outcome {
	if !m.sent {
		return fail(ReasonMalformed)
	}
	if r := m.srv.rederive(ctx, m.keys.kAut != nil, &m.sub, m.imsi, m.derive); r != "" {
		return fail(r)
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
	card, _, r := m.srv.usim(ctx, &m.sub, m.imsi)
	if r != "" {
		return fail(r)
	}
	sqnMS, err := card.Resync(m.rand[:], auts)
	if err != nil {
		return fail(ReasonResync)
	}
	m.resynced = true
	m.srv.opt.Metrics.resyncs.Inc()
	next, r := m.challenge(ctx, sqnMS+1)
	if r != "" {
		return fail(r)
	}
	return outcome{next: next}
}

// What state holds of the stage.
const (
	stAskedID = 1 << iota
	stResynced
	stSent
)

func stage(askedID, resynced, sent bool) byte {
	var b byte
	for i, f := range []bool{askedID, resynced, sent} {
		if f {
			b |= 1 << i
		}
	}
	return b
}

// akaStateLen is the fixed part of an AKA state: the stage, RAND, SQN ⊕ AK.
const akaStateLen = 1 + 16 + 6

// state is the stage, RAND and SQN ⊕ AK of the Challenge in flight (both went over the air, in
// AT_RAND and AT_AUTN; zeros before the first) and the identity the keys bind; the IMSI is
// the identity's. No key, no XRES: derive recomputes them.
func (m *akaMethod) state() []byte {
	b := make([]byte, 0, akaStateLen+len(m.identity))
	b = append(b, stage(m.askedID, m.resynced, m.sent))
	b = append(b, m.rand[:]...)
	b = append(b, m.sqnAK[:]...)
	return append(b, m.identity...)
}

// restore reads what state wrote (false: malformed, or a stage no conversation is in).
func (m *akaMethod) restore(st []byte) bool {
	if len(st) < akaStateLen || st[0]&^(stAskedID|stResynced|stSent) != 0 {
		return false
	}
	m.askedID, m.resynced, m.sent = st[0]&stAskedID != 0, st[0]&stResynced != 0, st[0]&stSent != 0
	copy(m.rand[:], st[1:17])
	copy(m.sqnAK[:], st[17:akaStateLen])
	m.identity = string(st[akaStateLen:])
	var permanent bool
	m.imsi, permanent = permanentIMSI(m.identity, akaPrefixes)
	// Between rounds: a Challenge in flight (to a permanent identity), or the identity asked.
	return permanent == m.sent && (m.sent || m.askedID && !m.resynced)
}
