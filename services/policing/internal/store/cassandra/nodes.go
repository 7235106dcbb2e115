package cassandra

import (
	"context"
	"errors"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// RegisterNode records a node in diameter_nodes for ttl (session.NodeRegistry; the hybrid
// store embeds Store: the registry is shared, never cached). The table keeps its name from
// when only Diameter nodes registered; eap_forward came with migration 0010.
func (st *Store) RegisterNode(ctx context.Context, n session.Node, ttl time.Duration) error {
	return st.s.Query("INSERT INTO diameter_nodes (node, origin_host, dc, admin_url, eap_forward, updated) VALUES (?, ?, ?, ?, ?, ?) USING TTL ?",
		n.Name, n.Host, n.DC, n.AdminURL, n.EAPForward, st.o.Now(), int(ttl/time.Second)).Consistency(st.cons).ExecContext(ctx)
}

// LookupNode reads a node's record (session.NodeRegistry).
func (st *Store) LookupNode(ctx context.Context, name string) (*session.Node, error) {
	n := session.Node{Name: name}
	err := st.s.Query("SELECT origin_host, dc, admin_url, eap_forward, updated FROM diameter_nodes WHERE node = ?", name).
		Consistency(st.cons).ScanContext(ctx, &n.Host, &n.DC, &n.AdminURL, &n.EAPForward, &n.Updated)
	if errors.Is(err, gocql.ErrNotFound) {
		return nil, session.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &n, nil
}
