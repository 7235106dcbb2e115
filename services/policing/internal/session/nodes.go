package session

import (
	"context"
	"time"
)

// Node is a policing node as the other nodes find it. One that holds Diameter peer
// connections: a RAR must leave from the node holding the PCEF's connection, so a node asked
// for one it cannot send forwards the request to that node's admin API
// (docs/diameter-gx.md). One that forwards EAP: a round of a conversation in its memory is
// sent to its EAPForward address (docs/eap.md). A node doing both under one name has one
// record with both; under two names (diameter.nodeName, eap.nodeID), two records.
type Node struct {
	// Name tells the node apart from the others, those sharing its Diameter identity
	// included (the pods of a data center): Gx sessions record it (diameter.nodeName), EAP
	// States name it (eap.nodeID).
	Name string `json:"name"`
	// Host is the node's Diameter identity (Origin-Host).
	Host string `json:"host"`
	// DC is the node's data center.
	DC string `json:"dc,omitempty"`
	// AdminURL is the base URL of the node's admin API, reachable from the other nodes.
	AdminURL string `json:"adminUrl"`
	// EAPForward is the host:port of the node's EAP forwarding listener (eap.forward).
	EAPForward string    `json:"eapForward,omitempty"`
	Updated    time.Time `json:"updated"`
}

// WideGetter is implemented by the stores whose DCs each hold replicas (Cassandra, hybrid).
// GetWide reads a session from a majority of all replicas, other DCs' included, for a caller
// that must not miss a write another DC made: its own DC's replicas receive it asynchronously,
// and a DC back from an outage lacks what was written meanwhile until hints or a repair bring
// it. Unlike Get it also returns a stopped session (kept a while after its stop), so that a
// retransmitted stop can be told from an unknown session; ErrNotFound when there is none.
type WideGetter interface {
	GetWide(ctx context.Context, k Key) (*Session, error)
}

// NodeRegistry is implemented by the stores: the shared ones (Cassandra, hybrid) let every
// node of every DC find the others; the embedded one knows only its own node.
type NodeRegistry interface {
	// RegisterNode records n for ttl; a node refreshes its record while it runs.
	RegisterNode(ctx context.Context, n Node, ttl time.Duration) error
	// LookupNode returns the node named name, or ErrNotFound.
	LookupNode(ctx context.Context, name string) (*Node, error)
}

// SQNCounter is implemented by the stores (embedded, Cassandra, hybrid): each subscriber's
// EAP-AKA sequence number (TS 33.102 §6.3), shared by every node of every DC of a shared
// store, so that no two vectors carry the same SQN and a card never sees one go back.
type SQNCounter interface {
	// NextSQN returns a new SQN for subscriber: one more than the last it returned, and at
	// least floor (the subscriber file's SQN + 1, or a resynchronised card's SQNms + 1). It
	// is atomic: concurrent callers on any node get distinct, increasing values.
	NextSQN(ctx context.Context, subscriber string, floor uint64) (uint64, error)
}
