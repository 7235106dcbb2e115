package app

import (
	"context"
	"errors"

	"github.com/openaaa/openaaa/services/policing/internal/radiusd"
)

// startRadSec opens the RadSec (RADIUS over TLS) listener when configured (docs/radsec.md).
func (n *Node) startRadSec(auth, acct radiusd.Handler) error {
	c := n.Config.Radius.RadSec
	if c.Address == "" {
		return nil
	}
	opt := radiusd.RadSecOptions{
		CertFile: c.CertFile, KeyFile: c.KeyFile, CAFile: c.CAFile, Secret: []byte(c.Secret),
		IdleTimeout: c.IdleTimeout.D(), MaxConnections: c.MaxConnections,
	}
	n.Reloader.Mark(c.CertFile, c.KeyFile, c.CAFile)
	rs, err := n.Radius.ListenRadSec(c.Address, opt, auth, acct)
	if err != nil {
		return errors.New("radius.radsec: " + err.Error())
	}
	n.RadSec = rs
	n.RadSecAddr = rs.Addr()
	// The certificates reload with the other mounted files (app/reload.go).
	n.Reloader.Watch("certificates", []string{c.CertFile, c.KeyFile, c.CAFile}, func() error {
		_, err := rs.Reload()
		return err
	})
	return nil
}

// stopRadSec stops taking RadSec requests and finishes those in flight (before the RADIUS
// server drains).
func (n *Node) stopRadSec(ctx context.Context) error {
	if n.RadSec == nil {
		return nil
	}
	return n.RadSec.Close(ctx)
}
