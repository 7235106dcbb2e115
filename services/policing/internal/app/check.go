package app

import (
	"log/slog"

	"github.com/openaaa/openaaa/services/policing/internal/config"
)

// Check loads what Start loads from files before it listens — the clients and their
// secrets, the dictionaries, the policy, the subscriber file, the admin token — and refuses
// what Start would refuse (policing check-config). An LDAP directory is not contacted.
func Check(cfg *config.Config, log *slog.Logger) error {
	if _, err := buildClients(cfg); err != nil {
		return err
	}
	n := &Node{Config: cfg, Log: log}
	builtin, _, err := n.buildPolicy()
	if err != nil {
		return err
	}
	defer n.closePolicy()
	if cfg.Subscribers.Source == "file" {
		if _, err := openSubscribers(cfg, builtin, log); err != nil {
			return err
		}
	}
	_, err = n.loadAdminToken()
	return err
}
