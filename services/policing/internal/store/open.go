// Package store opens the session store selected by session.store.
package store

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/spool"
	"github.com/openaaa/openaaa/services/policing/internal/store/cassandra"
	"github.com/openaaa/openaaa/services/policing/internal/store/embedded"
)

// Metrics are what the stores count, the node's.
type Metrics struct {
	Shared    *metrics.Metrics
	Cassandra *cassandra.Metrics
	Spool     *spool.Metrics // the accounting spool's
}

// Open returns the configured store. The caller closes it.
func Open(ctx context.Context, cfg *config.Config, log *slog.Logger, m Metrics) (session.Store, error) {
	switch cfg.Session.Store {
	case "embedded":
		return embedded.Open(embedded.Options{
			Shards:        cfg.Session.Embedded.Shards,
			SnapshotFile:  cfg.Session.Embedded.SnapshotFile,
			HistorySize:   cfg.Session.Embedded.HistorySize,
			SweepInterval: cfg.Session.Embedded.SweepInterval.D(),
			Expiry:        expiryFunc(cfg.Session.Expiry),
			Log:           log,
			Metrics:       m.Shared,
		})
	case "none":
		return Noop{}, nil
	case "cassandra", "hybrid":
		return cassandra.FromConfig(ctx, cfg.Session.Store, cfg.Session.Cassandra, expiryFunc(cfg.Session.Expiry), log, m.Cassandra, m.Spool)
	}
	return nil, fmt.Errorf("session.store: unknown store %q", cfg.Session.Store)
}
