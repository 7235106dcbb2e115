// Package aaa holds the RADIUS handlers: authentication (PAP, CHAP) and accounting. They
// are thin: decode the fields they need, ask the subscriber source and the policy, write
// to the store, reply. Data flows one way.
package aaa

import (
	"context"
	"crypto/md5"
	"crypto/subtle"
	"errors"
	"log/slog"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
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
}

// Reject reasons (logged and counted, never sent).
const (
	reasonNoUser      = "no User-Name"
	reasonUnknownUser = "unknown user"
	reasonBadPassword = "wrong password"
	reasonNoPassword  = "no User-Password or CHAP-Password"
	reasonTwoPassword = "both User-Password and CHAP-Password"
	reasonUnavailable = "subscriber source unavailable"
)

func (h *Auth) ServeRADIUS(w radiusd.ResponseWriter, r *radiusd.Request) {
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
	metrics.Requests.WithLabelValues("auth", result).Inc()
	metrics.Transactions.WithLabelValues("radius_auth").Inc()
	metrics.Duration.WithLabelValues("auth").Observe(time.Since(r.Received).Seconds())
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
	if twoPasswords(r.Packet) {
		return h.Policy.Reject(reasonTwoPassword)
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
	if reason := checkPassword(r.Packet, sub.Password); reason != "" {
		return h.Policy.Reject(reason)
	}
	return h.Policy.Authorize(ctx, r.Packet, sub)
}

// twoPasswords: an Access-Request must not carry both User-Password and CHAP-Password
// (RFC 2865 §5.44, note 1). FreeRADIUS 3.2.1 accepts it when the passwords are right: we
// follow the RFC.
func twoPasswords(p *radius.Packet) bool {
	_, pap := p.Lookup(rfc2865.UserPassword_Type)
	_, chap := p.Lookup(rfc2865.CHAPPassword_Type)
	return pap && chap
}

// checkPassword verifies PAP (RFC 2865 §5.2) or CHAP (RFC 2865 §5.3, RFC 1994) and returns
// a reject reason, or "" when the password is right.
func checkPassword(p *radius.Packet, password string) string {
	if enc, ok := p.Lookup(rfc2865.UserPassword_Type); ok {
		clear, err := radius.UserPassword(enc, p.Secret, p.Authenticator[:])
		if err != nil || subtle.ConstantTimeCompare(clear, []byte(password)) != 1 {
			return reasonBadPassword
		}
		return ""
	}
	if chap, ok := p.Lookup(rfc2865.CHAPPassword_Type); ok {
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
