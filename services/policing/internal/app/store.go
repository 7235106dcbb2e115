package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/aaa"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// storePart is the session store, what it serves besides sessions (each nil when its kind
// does not declare it: config/store.go), and the auth log it keeps (when it keeps one).
type storePart struct {
	d        *deps
	admin    *adminPort // says what the node waits for while the store does not open
	store    session.Store
	registry session.NodeRegistry
	sqn      session.SQNCounter
	shared   session.Ephemeral
	spool    spooler      // the store's spool, nil without one (shutdown.go)
	authLog  *aaa.AuthLog // nil when the store keeps none
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
	return s.capabilities(st, s.d.cfg.Session.Capabilities())
}

// capabilities takes from st what its kind declares, and fails when st lacks any of it: the
// configuration was checked against the declaration (config.Validate), not against st.
func (s *storePart) capabilities(st session.Store, caps config.StoreCapabilities) error {
	var missing []string
	check := func(ok bool, what string) {
		if !ok {
			missing = append(missing, what)
		}
	}
	var ok bool
	if caps.NodeRegistry {
		s.registry, ok = st.(session.NodeRegistry)
		check(ok, "a node registry")
	}
	if caps.SQN {
		s.sqn, ok = st.(session.SQNCounter)
		check(ok, "sequence numbers")
	}
	if caps.Ephemeral {
		s.shared, ok = st.(session.Ephemeral)
		check(ok, "ephemeral values")
	}
	if caps.AuthLog {
		var l session.AuthLogger
		l, ok = st.(session.AuthLogger)
		check(ok, "an auth log")
		if ok {
			s.authLog = aaa.NewAuthLog(l, aaa.AuthLogOptions{Metrics: s.d.m.aaa})
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("session.store %q: the store does not serve %s, which its kind declares", s.d.cfg.Session.Store, strings.Join(missing, ", "))
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
