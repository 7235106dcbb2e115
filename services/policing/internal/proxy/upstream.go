package proxy

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"layeh.com/radius"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/internal/radclient"
)

// upstream is one server of the pool and its liveness.
type upstream struct {
	name      string
	addr      string
	secret    []byte
	requireMA bool
	m         *Metrics

	alive     atomic.Bool
	fails     atomic.Int32
	deadSince atomic.Int64 // unix nanos
}

var (
	errTimeout    = errors.New("no reply")
	errNoUpstream = errors.New("no live upstream")
)

// exchangeOpts are the retransmission settings of one exchange.
type exchangeOpts struct {
	timeout       time.Duration // first timer
	maxTimeout    time.Duration
	retries       int
	maxProxyState int
}

// exchange sends one request (attrs, without Message-Authenticator and Proxy-State) and
// waits for its reply, retransmitting the same datagram with exponential backoff
// (radclient.Exchange). A reply counts only if its identifier matches, its authenticator
// verifies with our request authenticator and secret, its Message-Authenticator verifies
// (when present, or when required), and it echoes our Proxy-State exactly once within the
// Proxy-State limit.
func (u *upstream) exchange(ctx context.Context, code radius.Code, attrs radius.Attributes, o exchangeOpts) (*radius.Packet, error) {
	var rnd [25]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	state := rnd[17:25]
	p := &radius.Packet{Code: code, Identifier: rnd[0], Secret: u.secret}
	copy(p.Authenticator[:], rnd[1:17])
	for _, a := range attrs {
		if a.Type == radiusx.TypeMessageAuthenticator || a.Type == radiusx.TypeProxyState {
			continue
		}
		p.Attributes = append(p.Attributes, a)
	}
	if code == radius.CodeAccountingRequest {
		p.Add(radiusx.TypeProxyState, radius.Attribute(state))
	}
	wire, err := p.MarshalBinary()
	if err != nil {
		return nil, err
	}
	wire, off := radiusx.AppendMessageAuthenticator(wire)
	if len(wire) > radius.MaxPacketLength {
		return nil, errors.New("request too large")
	}
	radiusx.SignRequest(wire, off, u.secret)
	reqAuth := append([]byte(nil), wire[4:20]...)

	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", u.addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	start := time.Now()
	var reply *radius.Packet
	ro := radclient.Options{Timeout: o.timeout, MaxTimeout: o.maxTimeout, Retries: o.retries,
		OnRetransmit: func() { u.m.retransmissions.WithLabelValues(u.name).Inc() }}
	_, err = radclient.Exchange(ctx, conn, wire, ro, func(b []byte) bool {
		r, reason := u.check(b, wire[1], code, reqAuth, state, o.maxProxyState)
		if reason != "" {
			u.m.repliesDropped.WithLabelValues(reason).Inc()
			return false
		}
		reply = r
		return true
	})
	if errors.Is(err, radclient.ErrTimeout) {
		return nil, fmt.Errorf("upstream %s (%s): %w after %d tries", u.name, u.addr, errTimeout, o.retries+1)
	}
	if err != nil {
		return nil, err
	}
	u.m.duration.Observe(time.Since(start).Seconds())
	return reply, nil
}

// check validates a reply and returns it, or the reason to ignore it.
func (u *upstream) check(b []byte, id byte, reqCode radius.Code, reqAuth, state []byte, maxPS int) (*radius.Packet, string) {
	reply, err := radiusx.ParseReply(b, id, reqAuth, u.secret, u.requireMA, radius.CodeAccountingResponse)
	switch {
	case errors.Is(err, radiusx.ErrMalformed):
		return nil, "malformed"
	case errors.Is(err, radiusx.ErrUnexpected):
		return nil, "unexpected"
	case err != nil:
		return nil, "bad_authenticator"
	}
	// RFC 2865 §5.33: the server echoes Proxy-State unchanged. A reply with more than the
	// limit, or without ours, is not the answer to what we sent (BlastRADIUS hardening).
	count, ours := 0, false
	for _, a := range reply.Attributes {
		if a.Type == radiusx.TypeProxyState {
			count++
			if string(a.Attribute) == string(state) {
				ours = true
			}
		}
	}
	if reqCode == radius.CodeAccountingRequest && (!ours || count > maxPS) {
		return nil, "proxy_state"
	}
	if count > maxPS {
		return nil, "proxy_state"
	}
	return reply, ""
}

// statusServer sends a Status-Server (RFC 5997) and reports whether it was answered.
func (u *upstream) statusServer(ctx context.Context, o exchangeOpts) error {
	var attrs radius.Attributes
	_, err := u.exchange(ctx, radius.CodeStatusServer, attrs, o)
	return err
}
