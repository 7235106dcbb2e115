package eap

import (
	"crypto/rand"
	"errors"
	"sync"
	"time"
)

// State names a conversation (RFC 2865 §5.24, RFC 3579 §2.1): "OA", a kind (stateLocal 1:
// the conversation is in the memory of its owner node; stateShared 2: in the session store,
// shared.go), the length of the owner node's id, the id, then 16 random octets. A new State is
// issued for every round and the previous one forgotten, so a replayed State names nothing.
// The node id lets another node route a round to the owner (internal/eapforward, docs/eap.md);
// the random part makes a State unguessable.
const (
	stateMagic  = "OA"
	stateLocal  = 1
	stateShared = 2
	stateRandom = 16
	// MaxNodeID bounds the node id in a State (a State attribute holds 253 octets).
	MaxNodeID = 64
)

func newState(node string, kind byte) string {
	b := make([]byte, 0, len(stateMagic)+2+len(node)+stateRandom)
	b = append(b, stateMagic...)
	b = append(b, kind, byte(len(node)))
	b = append(b, node...)
	var r [stateRandom]byte
	_, _ = rand.Read(r[:]) // never fails (crypto/rand, Go ≥ 1.24)
	return string(append(b, r[:]...))
}

// StateNode returns the id of the node that owns the conversation a State names.
func StateNode(state []byte) (string, bool) {
	if len(state) < len(stateMagic)+2+stateRandom || string(state[:2]) != stateMagic || (state[2] != stateLocal && state[2] != stateShared) {
		return "", false
	}
	n := int(state[3])
	if len(state) != len(stateMagic)+2+n+stateRandom {
		return "", false
	}
	return string(state[4 : 4+n]), true
}

// InMemoryOwner returns the node whose memory holds the conversation a State names (kind 1:
// a TLS handshake or tunnel, which only that node can continue; eapforward sends it there).
func InMemoryOwner(state []byte) (string, bool) {
	node, ok := StateNode(state)
	return node, ok && state[2] == stateLocal
}

// sharedState tells whether a State names a conversation kept in the session store.
func sharedState(state []byte) bool {
	_, ok := StateNode(state)
	return ok && state[2] == stateShared
}

// conversation is one peer's EAP conversation between rounds: small values, and the method's
// state (a TLS method's engine holds the only goroutine).
type conversation struct {
	identity string
	lastID   byte   // Identifier of the Request we sent last
	method   method // in progress
	typ      byte   // its type
	rounds   int    // Requests of this method sent so far
	tried    []byte // methods proposed so far (Nak)
	expires  time.Time
}

func (c *conversation) close() {
	if c.method != nil {
		c.method.close()
	}
}

var errFull = errors.New("too many EAP conversations")

// table holds the conversations between rounds, bounded, each forgotten when it expires.
type table struct {
	metrics *Metrics
	mu      sync.Mutex
	m       map[string]*conversation
	max     int
	stop    chan struct{}
	once    sync.Once
}

func newTable(max int, sweep time.Duration, m *Metrics) *table {
	t := &table{metrics: m, m: make(map[string]*conversation), max: max, stop: make(chan struct{})}
	go t.sweepEvery(sweep)
	return t
}

// take removes and returns the conversation a State names (nil: unknown, expired or used).
func (t *table) take(state string, now time.Time) *conversation {
	t.mu.Lock()
	c := t.m[state]
	delete(t.m, state)
	n := len(t.m)
	t.mu.Unlock()
	t.metrics.conversations.Set(float64(n))
	if c != nil && now.After(c.expires) {
		c.close()
		t.metrics.expired.Inc()
		return nil
	}
	return c
}

// put keeps c under a new State until it expires.
func (t *table) put(node string, c *conversation) (string, error) {
	state := newState(node, stateLocal)
	t.mu.Lock()
	if len(t.m) >= t.max {
		t.mu.Unlock()
		return "", errFull
	}
	t.m[state] = c
	n := len(t.m)
	t.mu.Unlock()
	t.metrics.conversations.Set(float64(n))
	return state, nil
}

func (t *table) sweepEvery(d time.Duration) {
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case now := <-tick.C:
			t.sweep(now)
		}
	}
}

// sweep forgets expired conversations (and stops their TLS engines).
func (t *table) sweep(now time.Time) {
	var old []*conversation
	t.mu.Lock()
	for k, c := range t.m {
		if now.After(c.expires) {
			old = append(old, c)
			delete(t.m, k)
		}
	}
	n := len(t.m)
	t.mu.Unlock()
	for _, c := range old {
		c.close()
		t.metrics.expired.Inc()
	}
	t.metrics.conversations.Set(float64(n))
}

// close stops the sweeper and forgets every conversation.
func (t *table) close() {
	t.once.Do(func() { close(t.stop) })
	t.mu.Lock()
	m := t.m
	t.m = map[string]*conversation{}
	t.mu.Unlock()
	for _, c := range m {
		c.close()
	}
	t.metrics.conversations.Set(0)
}
