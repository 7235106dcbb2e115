package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// subscribersPart is the subscriber source: the file, or an LDAP directory's connection pool.
type subscribersPart struct {
	d      *deps
	pol    *policyPart // checks the profiles at load
	source subscriber.Source
}

func newSubscribers(d *deps, pol *policyPart) *subscribersPart {
	return &subscribersPart{d: d, pol: pol}
}

func (s *subscribersPart) Start(context.Context) error {
	if s.d.cfg.Subscribers.Source == "file" {
		s.d.reloader.Mark(s.d.cfg.Subscribers.File)
	}
	src, err := openSubscribers(s.d.cfg, s.pol.builtin, s.d.log, s.d.m.ldap)
	if err != nil {
		return err
	}
	s.source = src
	return nil
}

// Stop closes a source that holds connections (LDAP).
func (s *subscribersPart) Stop(context.Context) error {
	if c, ok := s.source.(io.Closer); ok {
		_ = c.Close()
	}
	return nil
}

func openSubscribers(cfg *config.Config, pol *policy.Default, log *slog.Logger, m *subscriber.Metrics) (subscriber.Source, error) {
	switch cfg.Subscribers.Source {
	case "file":
		f, err := subscriber.OpenFile(cfg.Subscribers.File, pol.CheckProfile)
		if err != nil {
			return nil, fmt.Errorf("subscribers.file: %w", err)
		}
		return f, nil
	case "ldap":
		l, err := subscriber.OpenLDAP(cfg.Subscribers.LDAP, pol.CheckProfile, log, m)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	return nil, fmt.Errorf("subscribers.source: %q is not available", cfg.Subscribers.Source)
}
