package eap

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"slices"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// Options configure a Server.
type Options struct {
	// Methods are the EAP types offered, in order of preference: the first is proposed after
	// the Identity, a Nak picks the first of the others the peer names.
	Methods []byte
	// NodeID is written in every State (conversation.go).
	NodeID string
	// MaxConversations bounds the conversations kept between rounds.
	MaxConversations int
	// Timeout is how long a conversation waits for the peer's next round; it is also the
	// Access-Challenge's Session-Timeout (RFC 3579 §2.2).
	Timeout time.Duration
	// RoundTimeout bounds one round of a TLS handshake (the worker waits no longer), and the
	// taking of an AKA sequence number from the store.
	RoundTimeout time.Duration
	// TLS is the server certificate set in force (tlsfiles), for EAP-TLS, PEAP and TTLS.
	TLS func() *tls.Config
	// TLSMaxVersion caps EAP-TLS, PEAP and TTLS (tls.VersionTLS12 or 13).
	TLSMaxVersion uint16
	// TLSIdentity names the EAP-TLS subscriber: "commonName" (the client certificate's
	// subject CN) or "subjectAltName" (its first e-mail, else DNS name).
	TLSIdentity string
	// TicketKeys are the session ticket keys in force (resumption.go), the first encrypts;
	// nil: no resumption, every TLS handshake is a full one.
	TicketKeys func() [][32]byte
	// TicketLifetime bounds how long after its full handshake a session may be resumed.
	TicketLifetime time.Duration
	Subscribers    subscriber.Source
	// SQN hands out the AKA sequence numbers (the session store); required by aka, aka-prime.
	SQN session.SQNCounter
	// AKANetworkName is the access network name of EAP-AKA prime (AT_KDF_INPUT, RFC 9048 §3.1).
	AKANetworkName string
	Log            *slog.Logger
	// Shared keeps the conversations whose state is small (EAP-MD5, SIM, AKA, AKA': no key)
	// between rounds, so that any node sharing the store continues them (shared.go); nil:
	// every conversation stays in this node's memory.
	Shared session.Ephemeral
	// Metrics are the node's; nil: unregistered ones.
	Metrics *Metrics
}

// Server runs EAP conversations.
type Server struct {
	opt       Options
	convs     *table
	warnStore everyMinute // shared.go
}

// New starts a server (its sweeper of expired conversations runs until Close).
func New(opt Options) *Server {
	if opt.Metrics == nil {
		opt.Metrics = NewMetrics(metrics.Factory{})
	}
	sweep := min(opt.Timeout/2, time.Second)
	return &Server{opt: opt, convs: newTable(opt.MaxConversations, max(sweep, 10*time.Millisecond), opt.Metrics)}
}

// NodeID is the node id this server writes in its States (eap.nodeID).
func (s *Server) NodeID() string { return s.opt.NodeID }

// Close forgets every conversation.
func (s *Server) Close() { s.convs.close() }

// Result is the answer to one Access-Request with EAP.
type Result struct {
	// Challenge: an Access-Challenge with EAP, State and Session-Timeout; Accept: EAP-Success
	// and the keys (the policy still decides); otherwise an Access-Reject with EAP-Failure.
	Challenge, Accept bool
	EAP               []byte
	State             []byte
	Timeout           time.Duration
	Subscriber        *subscriber.Subscriber
	MSK               []byte
	Reason            Reason
}

// Failure is the Result for a request refused before or after EAP (the policy's Reject):
// EAP-Failure with the Identifier of the request's EAP packet, when it has one.
func (m *Metrics) Failure(req *radius.Packet, r Reason) Result {
	var id byte
	if b, err := fromRADIUS(req); err == nil && len(b) > 1 {
		id = b[1]
	}
	return m.failure(id, r)
}

// Handle runs one round: the request's EAP Response, in the conversation its State names
// (or a new one for an Identity without State).
func (s *Server) Handle(ctx context.Context, req *radius.Packet) Result {
	raw, err := fromRADIUS(req)
	if err != nil {
		return s.reject(0, ReasonMalformed)
	}
	p, err := Parse(raw)
	if err != nil || p.Code != CodeResponse {
		id := byte(0)
		if len(raw) > 1 {
			id = raw[1]
		}
		return s.reject(id, ReasonMalformed)
	}
	now := time.Now()
	state, hasState := req.Lookup(rfc2865.State_Type)
	if !hasState {
		if p.Type != TypeIdentity {
			return s.reject(p.ID, ReasonNoState)
		}
		return s.begin(ctx, p, now)
	}
	var c *conversation
	if sharedState(state) {
		var r Reason
		if c, r = s.takeShared(ctx, state, now); c == nil {
			return s.reject(p.ID, r)
		}
	} else if c = s.convs.take(string(state), now); c == nil {
		return s.reject(p.ID, ReasonUnknownState)
	}
	if p.ID != c.lastID {
		c.close()
		return s.reject(p.ID, ReasonBadIdentifier)
	}
	if p.Type == TypeNak && c.rounds == 1 {
		return s.nak(ctx, c, p, now)
	}
	if p.Type != c.typ {
		c.close()
		return s.reject(p.ID, ReasonUnexpected)
	}
	o := c.method.step(ctx, p.ID, p.Data)
	return s.after(ctx, c, p.ID, o, now)
}

// begin starts a conversation with the first configured method.
func (s *Server) begin(ctx context.Context, p Packet, now time.Time) Result {
	c := &conversation{identity: string(p.Data), lastID: p.ID}
	return s.propose(ctx, c, s.opt.Methods[0], now)
}

// nak: the peer refused the proposed method and named those it wants (RFC 3748 §5.3.1).
func (s *Server) nak(ctx context.Context, c *conversation, p Packet, now time.Time) Result {
	c.close()
	for _, t := range s.opt.Methods {
		if slices.Contains(p.Data, t) && !slices.Contains(c.tried, t) {
			return s.propose(ctx, c, t, now)
		}
	}
	return s.reject(p.ID, ReasonNoMethod)
}

func (s *Server) propose(ctx context.Context, c *conversation, t byte, now time.Time) Result {
	m := s.newMethod(t, c)
	first, err := m.start(ctx)
	if err != nil {
		m.close()
		var r reasonError
		if errors.As(err, &r) {
			return s.reject(c.lastID, Reason(r))
		}
		s.opt.Log.Warn("eap method not started", "method", typeName(t), "err", err)
		return s.reject(c.lastID, ReasonInternal)
	}
	c.method, c.typ, c.rounds = m, t, 0
	c.tried = append(c.tried, t)
	return s.challenge(ctx, c, first, now)
}

// after turns a step's outcome into the round's Result.
func (s *Server) after(ctx context.Context, c *conversation, id byte, o outcome, now time.Time) Result {
	if !o.done {
		return s.challenge(ctx, c, o.next, now)
	}
	c.close()
	if o.reason != "" {
		return s.reject(id, o.reason)
	}
	s.opt.Metrics.successes.WithLabelValues(typeName(c.typ)).Inc()
	return Result{Accept: true, EAP: final(CodeSuccess, id), Subscriber: o.sub, MSK: o.msk}
}

// challenge sends the method's next Request and keeps the conversation under a new State:
// in the session store when its state is small (shared.go), else in this node's memory.
func (s *Server) challenge(ctx context.Context, c *conversation, data []byte, now time.Time) Result {
	c.lastID++
	c.rounds++
	c.expires = now.Add(s.opt.Timeout)
	state, ok := s.keepShared(ctx, c)
	if !ok {
		var err error
		if state, err = s.convs.put(s.opt.NodeID, c); err != nil {
			c.close()
			return s.reject(c.lastID-1, ReasonFull)
		}
	}
	return Result{Challenge: true, EAP: request(c.lastID, c.typ, data), State: []byte(state), Timeout: s.opt.Timeout}
}

func (s *Server) reject(id byte, r Reason) Result { return s.opt.Metrics.failure(id, r) }

func typeName(t byte) string {
	switch t {
	case TypeTLS:
		return "tls"
	case TypePEAP:
		return "peap"
	case TypeTTLS:
		return "ttls"
	case TypeMD5:
		return "md5"
	case TypeSIM:
		return "sim"
	case TypeAKA:
		return "aka"
	case TypeAKAPrime:
		return "aka-prime"
	}
	return "unknown"
}

// TypeOf is the EAP type of a method's configuration name ("tls", "peap", "ttls", "md5",
// "sim", "aka", "aka-prime").
func TypeOf(name string) (byte, bool) {
	for _, t := range []byte{TypeTLS, TypePEAP, TypeTTLS, TypeMD5, TypeSIM, TypeAKA, TypeAKAPrime} {
		if typeName(t) == name {
			return t, true
		}
	}
	return 0, false
}

// offers reports whether method t is configured.
func (s *Server) offers(t byte) bool { return slices.Contains(s.opt.Methods, t) }

// newMethod builds the server side of method t for conversation c.
func (s *Server) newMethod(t byte, c *conversation) method {
	switch t {
	case TypeMD5:
		return &md5Method{srv: s, identity: c.identity}
	case TypeSIM:
		return &simMethod{srv: s, conv: c, identity: c.identity}
	case TypeAKA, TypeAKAPrime:
		return &akaMethod{srv: s, typ: t, conv: c, identity: c.identity}
	case TypeTLS:
		return newTLSMethod(s, TypeTLS, nil)
	case TypePEAP:
		return newTLSMethod(s, TypePEAP, &peapInner{srv: s})
	case TypeTTLS:
		return newTLSMethod(s, TypeTTLS, &ttlsInner{srv: s})
	}
	panic("eap: unknown method type") // the configuration is validated
}

// lookup finds the subscriber named user, or a reject reason.
func (s *Server) lookup(ctx context.Context, user string) (*subscriber.Subscriber, Reason) {
	sub, err := s.opt.Subscribers.Lookup(ctx, user)
	switch {
	case errors.Is(err, subscriber.ErrNotFound):
		return nil, ReasonUnknownUser
	case err != nil:
		s.opt.Log.Warn("subscriber lookup failed", "err", err)
		return nil, ReasonUnavailable
	}
	return sub, ""
}

// Refused turns a successful Result into a refusal (the policy said no): EAP-Failure with
// the same Identifier, no keys.
func (m *Metrics) Refused(r Result, reason Reason) Result {
	var id byte
	if len(r.EAP) > 1 {
		id = r.EAP[1]
	}
	return m.failure(id, reason)
}
