package session

import (
	"context"
	"time"
)

// Node is a policing node that holds Diameter peer connections, as the other nodes find it:
// a RAR must leave from the node holding the PCEF's connection, so a node asked for one it
// cannot send forwards the request to that node's admin API (docs/diameter-gx.md).
type Node struct {
	// Host is the node's Diameter identity (Origin-Host), as Gx sessions record it.
	Host string `json:"host"`
	// DC is the node's data center.
	DC string `json:"dc,omitempty"`
	// AdminURL is the base URL of the node's admin API, reachable from the other nodes.
	AdminURL string    `json:"adminUrl"`
	Updated  time.Time `json:"updated"`
}

// NodeRegistry is implemented by the stores: the shared ones (Cassandra, hybrid) let every
// node of every DC find the others; the embedded one knows only its own node.
type NodeRegistry interface {
	// RegisterNode records n for ttl; a node refreshes its record while it runs.
	RegisterNode(ctx context.Context, n Node, ttl time.Duration) error
	// LookupNode returns the node with Diameter identity host, or ErrNotFound.
	LookupNode(ctx context.Context, host string) (*Node, error)
}
