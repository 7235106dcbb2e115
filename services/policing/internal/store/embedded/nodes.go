package embedded

import (
	"context"
	"sync"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// nodes is the node registry of a store no other node shares: in practice it holds this
// node only, and answers lookups of it (session.NodeRegistry).
type nodes struct {
	mu     sync.Mutex
	byName map[string]nodeEntry
}

type nodeEntry struct {
	n       session.Node
	expires time.Time
}

// RegisterNode records n for ttl (session.NodeRegistry).
func (s *Store) RegisterNode(_ context.Context, n session.Node, ttl time.Duration) error {
	s.nodes.mu.Lock()
	defer s.nodes.mu.Unlock()
	if s.nodes.byName == nil {
		s.nodes.byName = map[string]nodeEntry{}
	}
	now := s.opt.Now()
	for name, e := range s.nodes.byName { // few entries: expire on write
		if now.After(e.expires) {
			delete(s.nodes.byName, name)
		}
	}
	n.Updated = now
	s.nodes.byName[n.Name] = nodeEntry{n: n, expires: now.Add(ttl)}
	return nil
}

// LookupNode returns a registered node that has not expired (session.NodeRegistry).
func (s *Store) LookupNode(_ context.Context, name string) (*session.Node, error) {
	s.nodes.mu.Lock()
	defer s.nodes.mu.Unlock()
	e, ok := s.nodes.byName[name]
	if !ok || s.opt.Now().After(e.expires) {
		return nil, session.ErrNotFound
	}
	n := e.n
	return &n, nil
}
