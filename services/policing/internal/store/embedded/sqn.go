package embedded

import (
	"context"
	"sync"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// sqns are the subscribers' AKA sequence numbers (session.SQNCounter), kept in the snapshot.
type sqns struct {
	mu sync.Mutex
	m  map[string]uint64
}

// NextSQN implements session.SQNCounter.
func (s *Store) NextSQN(_ context.Context, subscriber string, floor uint64) (uint64, error) {
	s.sqns.mu.Lock()
	defer s.sqns.mu.Unlock()
	if s.sqns.m == nil {
		s.sqns.m = map[string]uint64{}
	}
	n := max(s.sqns.m[subscriber]+1, floor)
	s.sqns.m[subscriber] = n
	return n, nil
}

func (s *Store) allSQNs() map[string]uint64 {
	s.sqns.mu.Lock()
	defer s.sqns.mu.Unlock()
	out := make(map[string]uint64, len(s.sqns.m))
	for k, v := range s.sqns.m {
		out[k] = v
	}
	return out
}

var _ session.SQNCounter = (*Store)(nil)
