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
	byHost map[string]nodeEntry
}

type nodeEntry struct {
	n       session.Node
	expires time.Time
}

// RegisterNode records n for ttl (session.NodeRegistry).
func (s *Store) RegisterNode(_ context.Context, n session.Node, ttl time.Duration) error {
	s.nodes.mu.Lock()
	defer s.nodes.mu.Unlock()
	if s.nodes.byHost == nil {
		s.nodes.byHost = map[string]nodeEntry{}
	}
	now := s.opt.Now()
	for h, e := range s.nodes.byHost { // few entries: expire on write
		if now.After(e.expires) {
			delete(s.nodes.byHost, h)
		}
	}
	n.Updated = now
	s.nodes.byHost[n.Host] = nodeEntry{n: n, expires: now.Add(ttl)}
	return nil
}

// LookupNode returns a registered node that has not expired (session.NodeRegistry).
func (s *Store) LookupNode(_ context.Context, host string) (*session.Node, error) {
	s.nodes.mu.Lock()
	defer s.nodes.mu.Unlock()
	e, ok := s.nodes.byHost[host]
	if !ok || s.opt.Now().After(e.expires) {
		return nil, session.ErrNotFound
	}
	n := e.n
	return &n, nil
}
