package app

import (
	"context"
	"errors"

	"github.com/openaaa/openaaa/services/policing/internal/aaa"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// storePart is the session store and the auth log it keeps (when it keeps one).
type storePart struct {
	d       *deps
	admin   *adminPort // says what the node waits for while the store does not open
	store   session.Store
	spool   spooler      // the store's spool, nil without one (shutdown.go)
	authLog *aaa.AuthLog // nil when the store keeps none
}

func newStore(d *deps, admin *adminPort) *storePart { return &storePart{d: d, admin: admin} }

func (s *storePart) Start(ctx context.Context) error {
	st, err := openStore(ctx, s.d, s.admin.sw) // startup.go
	if err != nil {
		return err
	}
	s.store = st
	if afterStoreOpen != nil {
		afterStoreOpen() // tests: a file changes between the first read and the watch
	}
	s.spool, _ = st.(spooler)
	if l, ok := st.(session.AuthLogger); ok {
		s.authLog = aaa.NewAuthLog(l, aaa.AuthLogOptions{})
	}
	return nil
}

// Stop writes the queued auth log records, then closes the store, both bounded by ctx: the
// embedded store writes its snapshot, a spool is delivered to Cassandra (any datacenter that
// takes it). At shutdown what the spool delivered and left is counted.
func (s *storePart) Stop(ctx context.Context) error {
	before := 0
	if s.spool != nil {
		before = s.spool.Spooled()
	}
	if s.authLog != nil {
		if err := s.authLog.Close(ctx); err != nil {
			s.d.log.Warn("auth log: records left unwritten at shutdown", "err", err)
		}
	}
	err := s.store.Close(ctx)
	if s.spool != nil && s.d.draining.Load() {
		err = errors.Join(err, accountDrain(s.d, "spool", s.d.cfg.Session.Cassandra.Spool.Dir, before, s.spool.Spooled()))
	}
	return err
}
