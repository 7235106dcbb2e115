package config

import (
	"fmt"
	"time"
)

// CoA configures the sending of CoA-Request and Disconnect-Request to NAS (RFC 5176,
// docs/coa.md). Each NAS's CoA port and secret come from its clients entry.
type CoA struct {
	// Timeout is the first retransmission timer; it doubles after each retransmission.
	Timeout Duration `json:"timeout"`
	// Retries is the number of retransmissions before the NAS counts as not answering.
	Retries int `json:"retries"`
	// PolicyDisconnect sends a Disconnect-Request when the policy marks a session
	// (session.disconnectReason, e.g. quota exhausted).
	PolicyDisconnect bool `json:"policyDisconnect"`
	// ResendAfter is how long a policy disconnect of one session is not repeated while
	// the NAS keeps reporting it.
	ResendAfter Duration `json:"resendAfter"`
	// Concurrency bounds the policy disconnects in flight; more are skipped (and counted)
	// until the next accounting message of the session.
	Concurrency int `json:"concurrency"`
}

// DefaultCoAPort is a client's coaPort when it sets none (RFC 5176): the one place of that
// default (the NAS table and CoA used to carry it each).
const DefaultCoAPort = 3799

func defaultCoA() CoA {
	return CoA{Timeout: Duration(time.Second), Retries: 2, PolicyDisconnect: true,
		ResendAfter: Duration(time.Minute), Concurrency: 64}
}

func (c CoA) validate(key string) []error {
	var errs []error
	bad := func(k, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", key, k, fmt.Sprintf(format, a...)))
	}
	if c.Timeout <= 0 {
		bad("timeout", "must be positive")
	}
	if c.Retries < 0 || c.Retries > 10 {
		bad("retries", "must be between 0 and 10, got %d", c.Retries)
	}
	if c.ResendAfter < 0 {
		bad("resendAfter", "must not be negative")
	}
	if c.Concurrency < 1 {
		bad("concurrency", "must be at least 1")
	}
	return errs
}
