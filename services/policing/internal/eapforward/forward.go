// Package eapforward carries a round of an EAP conversation that lives in another node's
// memory (a TLS handshake or tunnel: State kind 1, docs/eap.md "Multi-DC conversations") to
// that node, as a RADIUS proxy would: the owner's forwarding listener takes it under the
// inter-node secret and answers as to the NAS; this node relays the answer, the MPPE keys
// encrypted again for the NAS. Pure parts in wire.go.
package eapforward

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/radclient"
)

// Forwarder sends rounds of other nodes' conversations to them.
type Forwarder struct {
	// Self is this node's EAP node id: its own States are never forwarded.
	Self string
	// Secret is the inter-node shared secret (eap.forward.secretFile).
	Secret []byte
	// Lookup returns the forwarding address (host:port) of the node named in a State, or an
	// error (ErrNotFound of the registry: the owner is gone or never forwarded).
	Lookup func(ctx context.Context, node string) (string, error)
	// Timeout is the wait for the owner's answer before each retransmission, Retries their
	// number: the round takes at most Timeout × (Retries+1).
	Timeout time.Duration
	Retries int
	Log     *slog.Logger
	Metrics *Metrics // the node's (NewMetrics); required
	// lastLog is when a failure was last logged (unix seconds): at most one a second.
	lastLog atomic.Int64
}

// Owner returns the node a request's round must go to: the owner named by a State of kind 1
// (a conversation in that node's memory) that is not this node. A request that arrived
// forwarded is never forwarded again (no loops), whatever its State.
func (f *Forwarder) Owner(p *radius.Packet) (string, bool) {
	if _, fwd := ClientName(p); fwd {
		return "", false
	}
	state, ok := p.Lookup(rfc2865.State_Type)
	if !ok {
		return "", false
	}
	if node, ok := eap.InMemoryOwner(state); ok && node != f.Self {
		return node, true
	}
	return "", false
}

// Errors of Exchange, by the forwarded_rounds_total result they count as.
var (
	ErrOwnerUnknown = errors.New("eapforward: the owner is not in the node registry")
	ErrTimeout      = errors.New("eapforward: the owner did not answer")
)

// Exchange forwards the NAS's request (from the client named client) to owner and returns
// the attributes of the answer to the NAS with the owner's code. Every outcome is counted.
func (f *Forwarder) Exchange(ctx context.Context, nas *radius.Packet, client, owner string) (radius.Code, radius.Attributes, error) {
	code, attrs, err := f.exchange(ctx, nas, client, owner)
	result := "answered"
	switch {
	case errors.Is(err, ErrOwnerUnknown):
		result = "owner_unknown"
	case errors.Is(err, ErrTimeout):
		result = "timeout"
	case err != nil:
		result = "error"
	}
	f.Metrics.forwarded.WithLabelValues(result).Inc()
	if err != nil {
		if now, last := time.Now().Unix(), f.lastLog.Load(); now != last && f.lastLog.CompareAndSwap(last, now) {
			f.Log.Warn("eap round not forwarded to its owner: refused (owner_unreachable)", "owner", owner, "client", client, "result", result, "err", err.Error())
		}
	}
	return code, attrs, err
}

func (f *Forwarder) exchange(ctx context.Context, nas *radius.Packet, client, owner string) (radius.Code, radius.Attributes, error) {
	addr, err := f.Lookup(ctx, owner)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %s: %v", ErrOwnerUnknown, owner, err)
	}
	if addr == "" {
		return 0, nil, fmt.Errorf("%w: %s does not forward", ErrOwnerUnknown, owner)
	}
	var rnd [25]byte
	_, _ = rand.Read(rnd[:]) // never fails (crypto/rand, Go ≥ 1.24)
	var auth [16]byte
	copy(auth[:], rnd[1:17])
	state := rnd[17:25]
	wire, err := Request(nas, client, f.Secret, rnd[0], auth, state)
	if err != nil {
		return 0, nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close()
	var reply *radius.Packet
	// The same datagram again after each timer: the owner's duplicate cache answers it
	// without running the round twice.
	_, err = radclient.Exchange(ctx, conn, wire, radclient.Options{Timeout: f.Timeout, MaxTimeout: f.Timeout, Retries: f.Retries},
		func(b []byte) bool {
			reply = f.check(b, wire[1], auth, state)
			return reply != nil
		})
	if errors.Is(err, radclient.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return 0, nil, fmt.Errorf("%w: %s (%s) after %d tries", ErrTimeout, owner, addr, f.Retries+1)
	}
	if err != nil {
		return 0, nil, err
	}
	attrs, err := Reply(reply, auth, nas)
	return reply.Code, attrs, err
}

// check returns the owner's reply to our request, or nil for anything else: a datagram
// whose Identifier, authenticators (Message-Authenticator required) or Proxy-State are not
// those of our request under the inter-node secret.
func (f *Forwarder) check(b []byte, id byte, auth [16]byte, state []byte) *radius.Packet {
	p, err := radiusx.ParseReply(b, id, auth[:], f.Secret, true,
		radius.CodeAccessAccept, radius.CodeAccessReject, radius.CodeAccessChallenge)
	if err != nil {
		return nil
	}
	if ps, ok := p.Lookup(radiusx.TypeProxyState); !ok || string(ps) != string(state) {
		return nil
	}
	return p
}
