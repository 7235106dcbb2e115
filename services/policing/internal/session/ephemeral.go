package session

import (
	"context"
	"time"
)

// Ephemeral keeps small values for a short while, each read once: the state of an EAP
// conversation between two rounds, so that a round landing on another node, in another DC,
// continues it (docs/eap.md, "Multi-DC conversations"). The embedded, Cassandra and hybrid
// stores implement it; it is kept apart from Store because nothing about sessions needs it.
type Ephemeral interface {
	// PutEphemeral keeps value under key for ttl (rounded up to whole seconds by Cassandra).
	PutEphemeral(ctx context.Context, key, value []byte, ttl time.Duration) error
	// TakeEphemeral returns the value under key and deletes it: ErrNotFound when it was never
	// put, has expired or was taken already.
	TakeEphemeral(ctx context.Context, key []byte) ([]byte, error)
}
