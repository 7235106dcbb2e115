package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/tlsfiles"
)

// Check loads what Start loads from files before it listens — the clients and their
// secrets, the dictionaries, the policy, the subscriber file, the admin token — and refuses
// what Start would refuse (policing check-config). An LDAP directory is not contacted.
func Check(cfg *config.Config, log *slog.Logger) error {
	if _, err := buildClients(cfg); err != nil {
		return err
	}
	d := &deps{cfg: cfg, log: log, m: newNodeMetrics(nil)}
	pol := newPolicy(d)
	if err := pol.Start(context.Background()); err != nil {
		return err
	}
	defer pol.Stop(context.Background()) //nolint:errcheck // never fails
	if cfg.Subscribers.Source == "file" {
		if _, err := openSubscribers(cfg, pol.builtin, log, d.m.ldap); err != nil {
			return err
		}
	}
	if _, err := loadAdminToken(d); err != nil {
		return err
	}
	return checkCertificates(cfg, log)
}

// checkCertificates reads the certificate sets Start reads (RadSec, Diameter over TLS, EAP),
// each error naming its key (radius.radsec: certFile: open ...).
func checkCertificates(cfg *config.Config, log *slog.Logger) error {
	var errs []error
	if c := cfg.Radius.RadSec; c.Address != "" {
		f := &tlsfiles.Files{CertFile: c.CertFile, KeyFile: c.KeyFile, CAFile: c.CAFile, Name: "radsec", Log: log}
		if _, err := f.Reload(); err != nil {
			errs = append(errs, fmt.Errorf("radius.radsec.%w", err))
		}
	}
	if c := cfg.Diameter; c.Enabled && c.TLS.Address != "" {
		f := &tlsfiles.Files{CertFile: c.TLS.CertFile, KeyFile: c.TLS.KeyFile, CAFile: c.TLS.CAFile, Name: "diameter", Log: log}
		if _, err := f.Reload(); err != nil {
			errs = append(errs, fmt.Errorf("diameter.tls.%w", err))
		}
	}
	if c := cfg.EAP; len(c.Methods) > 0 && c.UsesTLS() {
		f := &tlsfiles.Files{CertFile: c.CertFile, KeyFile: c.KeyFile, CAFile: c.CAFile, CRLFile: c.CRLFile, Name: "eap", Log: log}
		if _, err := f.Reload(); err != nil {
			errs = append(errs, fmt.Errorf("eap.%w", err))
		}
	}
	return errors.Join(errs...)
}
