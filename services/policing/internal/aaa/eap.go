package aaa

import (
	"context"
	"log/slog"
	"slices"

	"layeh.com/radius"

	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/radiusd"
)

// serveEAP answers an Access-Request that carries EAP (RFC 3579): the EAP server runs the
// round; a conversation that succeeded is still the policy's to accept, and a refusal turns
// its EAP-Success into EAP-Failure. radiusd already dropped requests without a valid
// Message-Authenticator (RFC 3579 §3.2). A round of a conversation in another node's
// memory goes to that node (eapforward.go).
func (h *Auth) serveEAP(w radiusd.ResponseWriter, r *radiusd.Request) {
	if h.Forward != nil {
		if owner, ok := h.Forward.Owner(r.Packet); ok {
			h.forwardEAP(w, r, owner)
			return
		}
	}
	ctx, cancel := withTimeout(r.Context(), h.LookupTimeout)
	defer cancel()
	var res eap.Result
	if h.EAP == nil {
		res = h.Metrics.eap.Failure(r.Packet, eap.ReasonDisabled)
	} else {
		res = h.EAP.Handle(ctx, r.Packet)
	}
	var d policy.AuthDecision
	code, result := radius.CodeAccessReject, "reject"
	switch {
	case res.Challenge:
		code, result = radius.CodeAccessChallenge, "challenge"
	case res.Accept:
		if d = h.Policy.Authorize(ctx, r.Packet, res.Subscriber); d.Accept {
			code, result = radius.CodeAccessAccept, "accept"
		} else {
			res = h.Metrics.eap.Refused(res, eap.ReasonPolicy)
		}
	default:
		d = h.Policy.Reject("eap: " + string(res.Reason))
	}
	attrs, err := res.Attributes(r.Packet)
	reply := r.Response(code)
	if err != nil { // the keys did not encrypt: nothing half-made leaves
		h.Log.Warn("eap reply not built", "err", err)
		reply = r.Response(radius.CodeAccessReject)
		attrs, _ = h.Metrics.eap.Refused(res, eap.ReasonInternal).Attributes(r.Packet)
		d.Reply, result = nil, "reject"
	}
	// Clip: the policy's reply may be shared (a profile's cached attributes).
	reply.Attributes = append(slices.Clip(d.Reply), attrs...)
	if code == radius.CodeAccessReject && h.Log.Enabled(context.Background(), slog.LevelDebug) {
		h.Log.Debug("eap access rejected", "client", r.Client.Name, "reason", string(res.Reason), "policy", d.Reason)
	}
	if err := w.Write(reply); err != nil {
		result = "error"
	}
	if h.AuthLog != nil && !res.Challenge {
		if d.Reason == "" {
			d.Reason = string(res.Reason)
		}
		h.logAuth(r, d, result)
	}
	h.Metrics.auth.count(r, result)
}
