package cassandra

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/spool"
)

// FromConfig opens the store named by session.store ("cassandra" or "hybrid") from the
// configuration. expiry gives an active session's TTL (nil: none); m and sm are the node's
// metrics of the store and of its spool (nil: unregistered ones).
func FromConfig(ctx context.Context, kind string, c config.Cassandra, expiry func(*session.Session) time.Duration, log *slog.Logger,
	m *Metrics, sm *spool.Metrics) (session.Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	conn, err := ConnOptionsFromConfig(c, log)
	if err != nil {
		return nil, err
	}
	hcons, err := gocql.ParseConsistencyWrapper(c.HistoryConsistency)
	if err != nil {
		return nil, fmt.Errorf("session.cassandra.historyConsistency: %w", err)
	}
	var sp *spool.Spool
	if c.Spool.Dir != "" {
		sp, err = spool.Open(spool.Options{Dir: c.Spool.Dir, MaxBytes: c.Spool.MaxBytes, DeliverWithin: c.Spool.DeliverWithin.D(), Log: log, Metrics: sm})
		if err != nil {
			return nil, fmt.Errorf("session.cassandra.spool.dir: %w", err)
		}
	}
	st, err := Open(ctx, Options{
		Conn: conn, HistoryConsistency: hcons, Expiry: expiry, StoppedTTL: c.StoppedTTL.D(),
		RowCacheSize: c.RowCache.Size, Spool: sp, ReplayInterval: c.Spool.ReplayInterval.D(), RemoteDCs: remoteDCs(c.RemoteDCs), Log: log,
		Metrics: m,
	})
	if err != nil {
		if sp != nil {
			_ = sp.Close()
		}
		return nil, err
	}
	if kind == "hybrid" {
		return NewHybrid(st, c.Cache.Size, c.Cache.TTL.D()), nil
	}
	return st, nil
}

func remoteDCs(in []config.RemoteDC) []RemoteDC {
	out := make([]RemoteDC, 0, len(in))
	for _, r := range in {
		out = append(out, RemoteDC{Name: r.Name, ContactPoints: r.ContactPoints})
	}
	return out
}
