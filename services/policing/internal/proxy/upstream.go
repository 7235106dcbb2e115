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
)

// upstream is one server of the pool and its liveness.
type upstream struct {
	name      string
	addr      string
	secret    []byte
	requireMA bool

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
// waits for its reply, retransmitting the same datagram with exponential backoff. A reply
// counts only if its identifier matches, its authenticator verifies with our request
// authenticator and secret, its Message-Authenticator verifies (when present, or when
// required), and it echoes our Proxy-State exactly once within the Proxy-State limit.
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
	timer := o.timeout
	buf := make([]byte, radius.MaxPacketLength)
	for try := 0; try <= o.retries; try++ {
		if try > 0 {
			retransmissions.WithLabelValues(u.name).Inc()
		}
		if _, err := conn.Write(wire); err != nil {
			return nil, err
		}
		deadline := time.Now().Add(timer)
		if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
			deadline = dl
		}
		_ = conn.SetReadDeadline(deadline)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					break
				}
				// ICMP port unreachable and the like: wait out the timer (bounded), then retry.
				if time.Now().Before(deadline) {
					time.Sleep(time.Until(deadline))
				}
				break
			}
			reply, reason := u.check(buf[:n], wire[1], code, reqAuth, state, o.maxProxyState)
			if reason != "" {
				repliesDropped.WithLabelValues(reason).Inc()
				continue
			}
			duration.Observe(time.Since(start).Seconds())
			return reply, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		timer = min(2*timer, o.maxTimeout)
	}
	return nil, fmt.Errorf("upstream %s (%s): %w after %d tries", u.name, u.addr, errTimeout, o.retries+1)
}

// check validates a reply and returns it, or the reason to ignore it.
func (u *upstream) check(b []byte, id byte, reqCode radius.Code, reqAuth, state []byte, maxPS int) (*radius.Packet, string) {
	n, err := radiusx.PacketLen(b)
	if err != nil {
		return nil, "malformed"
	}
	b = b[:n]
	if b[1] != id || radius.Code(b[0]) != radius.CodeAccountingResponse {
		return nil, "unexpected"
	}
	if err := radiusx.VerifyResponse(b, reqAuth, u.secret, u.requireMA); err != nil {
		return nil, "bad_authenticator"
	}
	reply, err := radius.Parse(b, u.secret)
	if err != nil {
		return nil, "malformed"
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
