package app

import (
	"context"
	"errors"

	"github.com/openaaa/openaaa/services/policing/internal/radiusd"
)

// radsecPart is the RadSec (RADIUS over TLS) listener when configured (docs/radsec.md).
type radsecPart struct {
	d        *deps
	radius   *radiusPart
	handlers *handlersPart
	radsec   *radiusd.RadSec
}

func newRadSec(d *deps, r *radiusPart, h *handlersPart) *radsecPart {
	return &radsecPart{d: d, radius: r, handlers: h}
}

func (p *radsecPart) Start(context.Context) error {
	c := p.d.cfg.Radius.RadSec
	if c.Address == "" {
		return nil
	}
	opt := radiusd.RadSecOptions{
		CertFile: c.CertFile, KeyFile: c.KeyFile, CAFile: c.CAFile, Secret: []byte(c.Secret),
		IdleTimeout: c.IdleTimeout.D(), HandshakeTimeout: c.HandshakeTimeout.D(), MaxConnections: c.MaxConnections,
	}
	p.d.reloader.Mark(c.CertFile, c.KeyFile, c.CAFile)
	rs, err := p.radius.server.ListenRadSec(c.Address, opt, p.handlers.auth, p.handlers.acct)
	if err != nil {
		return errors.New("radius.radsec: " + err.Error())
	}
	p.radsec = rs
	p.d.listening("radius.radsec.address", rs.Addr())
	// The certificates reload with the other mounted files (app/reload.go).
	p.d.reloader.Watch("certificates", []string{c.CertFile, c.KeyFile, c.CAFile}, func() error {
		_, err := rs.Reload()
		return err
	})
	return nil
}

// Stop stops taking RadSec requests and finishes those in flight (before the RADIUS
// server drains).
func (p *radsecPart) Stop(ctx context.Context) error {
	if p.radsec == nil {
		return nil
	}
	return p.radsec.Close(ctx)
}
