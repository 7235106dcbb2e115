package app

import (
	"fmt"

	"github.com/openaaa/openaaa/services/policing/internal/admin"
)

// loadAdminToken reads admin.tokenFile. A node without one still serves metrics and
// probes, but its API refuses every request; a file that is set and unreadable or too short
// stops the start, naming the key (the error never contains the token).
func loadAdminToken(d *deps) (*admin.Token, error) {
	tok := &admin.Token{}
	path := d.cfg.Admin.TokenFile
	if path == "" {
		if d.cfg.Admin.Address != "" {
			d.log.Warn("admin API disabled: admin.tokenFile is not set; /metrics, /healthz and /readyz are served, /api/v1 answers 403")
		}
		return tok, nil
	}
	d.reloader.Mark(path)
	b, err := admin.ReadTokenFile(path)
	if err != nil {
		return nil, fmt.Errorf("admin.tokenFile: %w", err)
	}
	tok.Set(b)
	return tok, nil
}

// watchAdminToken re-reads the token file when it changes (a rotated Secret): the new token
// works at once and the old one no longer does. A bad new file keeps the old token.
func watchAdminToken(d *deps, tok *admin.Token) {
	path := d.cfg.Admin.TokenFile
	if path == "" {
		return
	}
	d.reloader.Watch("admin-token", []string{path}, func() error {
		b, err := admin.ReadTokenFile(path)
		if err != nil {
			return fmt.Errorf("admin.tokenFile: %w", err)
		}
		tok.Set(b)
		d.log.Info("admin token reloaded")
		return nil
	})
}
