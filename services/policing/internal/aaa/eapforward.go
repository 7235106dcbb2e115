package aaa

import (
	"time"

	"layeh.com/radius"

	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/eapforward"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
	"github.com/openaaa/openaaa/services/policing/internal/radiusd"
)

// forwardEAP relays a round of a conversation in another node's memory to that node and
// its answer to the NAS (internal/eapforward). The owner decides, logs and counts the
// round; this node counts the forwarding only. An owner that cannot be reached ends the
// conversation: its TLS state is nowhere else.
func (h *Auth) forwardEAP(w radiusd.ResponseWriter, r *radiusd.Request, owner string) {
	code, attrs, err := h.Forward.Exchange(r.Context(), r.Packet, r.Client.Name, owner)
	if err != nil { // logged by Exchange
		code = radius.CodeAccessReject
		attrs, _ = h.Metrics.eap.Failure(r.Packet, eap.ReasonOwnerGone).Attributes(r.Packet) // no keys: never fails
	}
	reply := r.Response(code)
	reply.Attributes = attrs
	_ = w.Write(reply)
	h.Metrics.auth.time.Observe(time.Since(r.Received).Seconds())
}

// ForwardedEAP is the handler of the forwarding listener (eap.forward.address): requests
// other nodes forwarded, authenticated by radiusd under the inter-node secret. Each is
// served as the NAS it names (its client entry here, for the policy and the auth log) and
// never forwarded again; the reply, keys included, is under the inter-node secret.
func (h *Auth) ForwardedEAP(clients func() *nas.Table) radiusd.Handler {
	return radiusd.HandlerFunc(func(w radiusd.ResponseWriter, r *radiusd.Request) {
		name, ok := eapforward.ClientName(r.Packet)
		if !ok || !eap.Has(r.Packet) { // a node would not send it: no answer, counted
			h.Metrics.shared.Dropped.WithLabelValues(metrics.DropMalformed).Inc()
			return
		}
		h.Metrics.forward.Received.Inc()
		fr := *r
		fr.Client = clientNamed(clients(), name)
		h.serveEAP(w, &fr)
	})
}

// clientNamed is the client entry of the NAS a forwarded request names; a NAS this node
// does not list (another DC's clients) is known by its name alone.
func clientNamed(t *nas.Table, name string) *nas.Client {
	if c := t.Named(name); c != nil {
		return c
	}
	return &nas.Client{Name: name}
}
