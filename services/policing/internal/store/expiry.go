package store

import (
	"time"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// expiryFunc returns how long a session may stay silent before it is closed: Multiplier ×
// its interim interval (the configured default when the session has none) + Grace.
// Zero means never.
func expiryFunc(e config.Expiry) func(*session.Session) time.Duration {
	if e.Multiplier == 0 {
		return nil
	}
	return func(s *session.Session) time.Duration {
		iv := e.InterimInterval.D()
		if s.InterimInterval > 0 {
			iv = time.Duration(s.InterimInterval) * time.Second
		}
		return time.Duration(e.Multiplier)*iv + e.Grace.D()
	}
}
