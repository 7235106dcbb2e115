package eap

import (
	"context"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// A conversation whose method state is a small value (EAP-MD5's challenge; EAP-SIM's and
// AKA's stage, RANDs and identity) lives between rounds in the session store rather than in
// this node's memory, so that its next round continues on any node of any DC (docs/eap.md,
// "Multi-DC conversations"). Its State says so (stateShared): a round naming a State of the
// other kind never costs a store read. No key is stored: what a method keeps is what went over
// the air, and the node that continues recomputes the keys from the subscriber's record.

// portable is a method whose state between rounds is a small value.
type portable interface {
	// state is what restore needs to rebuild the method: never a key.
	state() []byte
}

// conversationFormat versions the stored value: 2 has a two-octet method state length (an
// AKA state carries the peer's AT_IDENTITY); 1 (one octet, EAP-MD5 only) is still read, so
// that a rolling upgrade loses no conversation.
const conversationFormat = 2

// marshal is the stored value of c (a portable method): format, lastID, type, rounds, the
// methods tried, the expiry (Unix ns), the method's state length (2 octets) and state, the
// identity.
func (c *conversation) marshal() []byte {
	st := c.method.(portable).state()
	b := make([]byte, 0, 5+len(c.tried)+8+2+len(st)+len(c.identity))
	b = append(b, conversationFormat, c.lastID, c.typ, byte(min(c.rounds, 255)), byte(len(c.tried)))
	b = append(b, c.tried...)
	b = binary.BigEndian.AppendUint64(b, uint64(c.expires.UnixNano()))
	b = binary.BigEndian.AppendUint16(b, uint16(len(st)))
	b = append(b, st...)
	return append(b, c.identity...)
}

var errStoredConversation = errors.New("eap: stored conversation malformed")

// unmarshal rebuilds a conversation marshal wrote.
func (s *Server) unmarshal(b []byte) (*conversation, error) {
	if len(b) < 5 || (b[0] != conversationFormat && b[0] != 1) {
		return nil, errStoredConversation
	}
	width := int(b[0]) // of the state length: 1 octet in format 1, 2 in format 2
	c := &conversation{lastID: b[1], typ: b[2], rounds: int(b[3])}
	if width == 1 && c.typ != TypeMD5 {
		return nil, errStoredConversation
	}
	n := int(b[4])
	b = b[5:]
	if len(b) < n+8+width {
		return nil, errStoredConversation
	}
	c.tried = append([]byte(nil), b[:n]...)
	c.expires = time.Unix(0, int64(binary.BigEndian.Uint64(b[n:])))
	m := int(b[n+8])
	if width == 2 {
		m = int(binary.BigEndian.Uint16(b[n+8:]))
	}
	b = b[n+8+width:]
	if len(b) < m {
		return nil, errStoredConversation
	}
	c.identity = string(b[m:])
	method, ok := s.restore(c, b[:m])
	if !ok {
		return nil, errStoredConversation
	}
	c.method = method
	return c, nil
}

// restore rebuilds the portable method of c from its state (false: malformed).
func (s *Server) restore(c *conversation, st []byte) (method, bool) {
	switch c.typ {
	case TypeMD5:
		m := &md5Method{srv: s, identity: c.identity}
		return m, copy(m.challenge[:], st) == len(m.challenge) && len(st) == len(m.challenge)
	case TypeSIM:
		m := &simMethod{srv: s, conv: c}
		return m, m.restore(st)
	case TypeAKA, TypeAKAPrime:
		m := &akaMethod{srv: s, typ: c.typ, conv: c}
		return m, m.restore(st)
	}
	return nil, false
}

// keepShared stores c under a new shared State. false: no store, or it failed (counted and
// logged); the caller keeps c in memory instead, so a store outage costs only the DC hop.
func (s *Server) keepShared(ctx context.Context, c *conversation) (string, bool) {
	if s.opt.Shared == nil {
		return "", false
	}
	if _, ok := c.method.(portable); !ok {
		return "", false
	}
	state := newState(s.opt.NodeID, stateShared)
	if err := s.opt.Shared.PutEphemeral(ctx, []byte(state), c.marshal(), time.Until(c.expires)); err != nil {
		s.opt.Metrics.sharedErrors.WithLabelValues("put").Inc()
		if s.warnStore.ok() {
			s.opt.Log.Warn("eap conversation not stored; kept on this node (run `policing migrate`?)", "err", err)
		}
		return "", false
	}
	return state, true
}

// takeShared reads and deletes the conversation a shared State names (nil: unknown, expired
// or used) or the reason it cannot be read.
func (s *Server) takeShared(ctx context.Context, state []byte, now time.Time) (*conversation, Reason) {
	if s.opt.Shared == nil {
		return nil, ReasonUnknownState
	}
	b, err := s.opt.Shared.TakeEphemeral(ctx, state)
	if errors.Is(err, session.ErrNotFound) {
		return nil, ReasonUnknownState
	}
	if err != nil {
		s.opt.Metrics.sharedErrors.WithLabelValues("take").Inc()
		if s.warnStore.ok() {
			s.opt.Log.Warn("eap conversation not read from the store", "err", err)
		}
		return nil, ReasonStateStore
	}
	c, err := s.unmarshal(b)
	if err != nil {
		s.opt.Metrics.sharedErrors.WithLabelValues("decode").Inc()
		return nil, ReasonInternal
	}
	if now.After(c.expires) {
		s.opt.Metrics.expired.Inc()
		return nil, ReasonUnknownState
	}
	return c, ""
}

// everyMinute lets a store error be logged once a minute; the metric counts them all.
type everyMinute struct{ last atomic.Int64 }

func (e *everyMinute) ok() bool {
	now, last := time.Now().UnixNano(), e.last.Load()
	return now-last >= int64(time.Minute) && e.last.CompareAndSwap(last, now)
}
