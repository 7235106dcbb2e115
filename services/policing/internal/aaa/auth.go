// Package aaa holds the RADIUS handlers: authentication (PAP, CHAP, MS-CHAPv2) and accounting. They
// are thin: decode the fields they need, ask the subscriber source and the policy, write
// to the store, reply. Data flows one way.
package aaa

import (
	"context"
	"crypto/md5"
	"crypto/subtle"
	"errors"
	"log/slog"
	"slices"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"

	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/eapforward"
	"github.com/openaaa/openaaa/services/policing/internal/mschapv2"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/radiusd"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// Auth answers Access-Requests.
type Auth struct {
	Subscribers subscriber.Source
	Policy      policy.Policy
	Log         *slog.Logger
	// LookupTimeout bounds the subscriber lookup so auth never hangs on a slow source; 0:
	// none (a file source never waits).
	LookupTimeout time.Duration
	// AuthLog, when set, receives every decision after the reply was sent (asynchronous,
	// bounded: it never delays a reply).
	AuthLog *AuthLog
	// EAP runs EAP conversations (docs/eap.md); nil: EAP is off and refused.
	EAP *eap.Server
	// Forward sends a round of a conversation in another node's memory to that node
	// (eapforward.go); nil: such a round is unknown_state.
	Forward *eapforward.Forwarder
	// Metrics are the node's (NewMetrics); required.
	Metrics *Metrics
}

// Reject reasons (logged and counted, never sent).
const (
	reasonNoUser      = "no User-Name"
	reasonUnknownUser = "unknown user"
	reasonBadPassword = "wrong password"
	reasonNoPassword  = "no User-Password, CHAP-Password or MS-CHAP2-Response"
	reasonTwoPassword = "more than one of User-Password, CHAP-Password and MS-CHAP"
	// MS-CHAP attributes that cannot be an MS-CHAPv2 answer (RFC 2548 §2.3.2 lengths).
	reasonMSCHAPMalformed = "malformed MS-CHAP-Challenge or MS-CHAP2-Response"
	reasonMSCHAPv1        = "MS-CHAPv1 (not supported)"
	reasonNoClearText     = "CHAP needs a clear-text password (the subscriber has an ntPassword only)"
	reasonUnavailable     = "subscriber source unavailable"
)

func (h *Auth) ServeRADIUS(w radiusd.ResponseWriter, r *radiusd.Request) {
	if eap.Has(r.Packet) {
		h.serveEAP(w, r)
		return
	}
	d := h.decide(r)
	code := radius.CodeAccessReject
	result := "reject"
	if d.Accept {
		code, result = radius.CodeAccessAccept, "accept"
	} else if h.Log.Enabled(context.Background(), slog.LevelDebug) {
		h.Log.Debug("access rejected", "client", r.Client.Name, "user", rfc2865.UserName_GetString(r.Packet), "reason", d.Reason)
	}
	reply := r.Response(code)
	reply.Attributes = d.Reply
	if err := w.Write(reply); err != nil {
		result = "error"
	}
	if h.AuthLog != nil {
		h.logAuth(r, d, result)
	}
	h.Metrics.auth.count(r, result)
}

func (h *Auth) logAuth(r *radiusd.Request, d policy.AuthDecision, result string) {
	user := rfc2865.UserName_GetString(r.Packet)
	if user == "" {
		return // the auth log is partitioned by user
	}
	h.AuthLog.Log(session.AuthRecord{
		UserName: user, NAS: NASKey(r), CallingStationID: rfc2865.CallingStationID_GetString(r.Packet),
		Result: result, Reason: d.Reason, At: r.Received,
	})
}

func (h *Auth) decide(r *radiusd.Request) policy.AuthDecision {
	user := rfc2865.UserName_GetString(r.Packet)
	if user == "" {
		return h.Policy.Reject(reasonNoUser)
	}
	ms := hasMSCHAP(r.Packet)
	if !onePasswordKind(r.Packet, ms) {
		return h.Policy.Reject(reasonTwoPassword)
	}
	var mschap *msCHAPv2
	if ms {
		m, reason := decodeMSCHAPv2(r.Packet)
		if reason != "" {
			return h.Policy.Reject(reason)
		}
		mschap = &m
	}
	ctx, cancel := withTimeout(r.Context(), h.LookupTimeout)
	defer cancel()
	sub, err := h.Subscribers.Lookup(ctx, user)
	switch {
	case errors.Is(err, subscriber.ErrNotFound):
		return h.Policy.Reject(reasonUnknownUser)
	case err != nil:
		h.Log.Warn("subscriber lookup failed", "err", err)
		return h.Policy.Reject(reasonUnavailable)
	}
	if mschap != nil {
		return h.authorizeMSCHAPv2(ctx, r.Packet, *mschap, user, sub)
	}
	if reason := checkPassword(r.Packet, sub); reason != "" {
		return h.Policy.Reject(reason)
	}
	return h.Policy.Authorize(ctx, r.Packet, sub)
}

// authorizeMSCHAPv2: the policy's decision, with MS-CHAP2-Success and the MPPE keys added to
// an Accept, MS-CHAP-Error to a wrong password's Reject (the NAS relays both to the peer).
func (h *Auth) authorizeMSCHAPv2(ctx context.Context, req *radius.Packet, m msCHAPv2, user string, sub *subscriber.Subscriber) policy.AuthDecision {
	var extra radius.Attributes
	ok := false
	if hash := mschapv2.NTHash(sub); hash != nil {
		extra, ok = m.verify(req, user, hash)
	}
	if !ok {
		d := h.Policy.Reject(reasonBadPassword)
		d.Reply = append(slices.Clip(d.Reply), msCHAPError(m.ident)...)
		return d
	}
	d := h.Policy.Authorize(ctx, req, sub)
	if d.Accept {
		// Clip: the policy's reply may be shared (a profile's cached attributes).
		d.Reply = append(slices.Clip(d.Reply), extra...)
	}
	return d
}

// onePasswordKind: an Access-Request carries one of User-Password, CHAP-Password or the
// MS-CHAP attributes (msCHAP: hasMSCHAP's answer, read once per request) (RFC 2865 §5.44,
// note 1, for the first two; a mix is ambiguous). FreeRADIUS 3.2.1 accepts PAP with CHAP when both passwords are right: we follow the RFC.
func onePasswordKind(p *radius.Packet, msCHAP bool) bool {
	n := 0
	if _, ok := p.Lookup(rfc2865.UserPassword_Type); ok {
		n++
	}
	if _, ok := p.Lookup(rfc2865.CHAPPassword_Type); ok {
		n++
	}
	if msCHAP {
		n++
	}
	return n <= 1
}

// checkPassword verifies PAP (RFC 2865 §5.2) or CHAP (RFC 2865 §5.3, RFC 1994) and returns
// a reject reason, or "" when the password is right. PAP is checked against the NT hash of a
// subscriber that has no clear-text password; CHAP cannot be.
func checkPassword(p *radius.Packet, sub *subscriber.Subscriber) string {
	password := sub.Password
	if enc, ok := p.Lookup(rfc2865.UserPassword_Type); ok {
		clear, err := radius.UserPassword(enc, p.Secret, p.Authenticator[:])
		if err != nil {
			return reasonBadPassword
		}
		if password == "" && sub.NTPassword != "" {
			return checkPAPHash(clear, sub)
		}
		if subtle.ConstantTimeCompare(clear, []byte(password)) != 1 {
			return reasonBadPassword
		}
		return ""
	}
	if chap, ok := p.Lookup(rfc2865.CHAPPassword_Type); ok {
		if password == "" {
			return reasonNoClearText
		}
		if len(chap) != 17 {
			return reasonBadPassword
		}
		challenge := p.Authenticator[:]
		if c, ok := p.Lookup(rfc2865.CHAPChallenge_Type); ok {
			challenge = c
		}
		h := md5.New()
		h.Write(chap[:1])
		h.Write([]byte(password))
		h.Write(challenge)
		if subtle.ConstantTimeCompare(h.Sum(nil), chap[1:]) != 1 {
			return reasonBadPassword
		}
		return ""
	}
	return reasonNoPassword
}

// withTimeout bounds a handler's wait on a remote system; d == 0 means nothing waits, and
// skipping the timer saves a tenth of a request's allocations.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
