package embedded

import (
	"context"
	"sync"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// ephemeral holds short-lived values read once (session.Ephemeral): with the embedded store
// no other node shares them, so they serve the nodes of one process (the tests) and keep the
// EAP server's code path the same as with Cassandra.
type ephemeral struct {
	mu    sync.Mutex
	m     map[string]ephemeralEntry
	swept time.Time
}

type ephemeralEntry struct {
	value   []byte
	expires time.Time
}

// PutEphemeral keeps value under key for ttl (session.Ephemeral). Expired values are dropped
// by the writes, at most once a second (a full scan).
func (s *Store) PutEphemeral(_ context.Context, key, value []byte, ttl time.Duration) error {
	now := s.opt.Now()
	e := &s.temp
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[string]ephemeralEntry{}
	}
	if now.Sub(e.swept) >= time.Second {
		for k, v := range e.m {
			if now.After(v.expires) {
				delete(e.m, k)
			}
		}
		e.swept = now
	}
	e.m[string(key)] = ephemeralEntry{value: append([]byte(nil), value...), expires: now.Add(ttl)}
	return nil
}

// TakeEphemeral returns and deletes the value under key (session.Ephemeral).
func (s *Store) TakeEphemeral(_ context.Context, key []byte) ([]byte, error) {
	e := &s.temp
	e.mu.Lock()
	v, ok := e.m[string(key)]
	delete(e.m, string(key))
	e.mu.Unlock()
	if !ok || s.opt.Now().After(v.expires) {
		return nil, session.ErrNotFound
	}
	return v.value, nil
}

var _ session.Ephemeral = (*Store)(nil)
