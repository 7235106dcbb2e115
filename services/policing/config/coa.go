package config

import "time"

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
	// PolicyTimeout bounds one request the policy sends (a disconnect, a Lua coa(), the Gx
	// quota's CoA): the session's read and the request with its retransmissions.
	PolicyTimeout Duration `json:"policyTimeout"`
	// APITimeout bounds one CoA or Disconnect call of the admin API (and the CLI): the
	// sessions' lookup and the requests to all of them.
	APITimeout Duration `json:"apiTimeout"`
}

// DefaultCoAPort is a client's coaPort when it sets none (RFC 5176): the one place of that
// default (the NAS table and CoA used to carry it each).
const DefaultCoAPort = 3799

func defaultCoA() CoA {
	return CoA{Timeout: Duration(time.Second), Retries: 2, PolicyDisconnect: true,
		ResendAfter: Duration(time.Minute), Concurrency: 64, PolicyTimeout: Duration(30 * time.Second),
		APITimeout: Duration(time.Minute)}
}

func (c CoA) validate(key string) []error {
	var errs []error
	bad := keyed(key, &errs)
	positive(bad, "timeout", c.Timeout)
	if c.Retries < 0 || c.Retries > 10 {
		bad("retries", "must be between 0 and 10, got %d", c.Retries)
	}
	notNegative(bad, "resendAfter", c.ResendAfter, "")
	if c.Concurrency < 1 {
		bad("concurrency", "must be at least 1")
	}
	// At most 5m: a request cut short loses only its last retransmissions, while a typo
	// (30m for 30s) would hold a policy slot or an API call that long.
	if p := timeoutProblem(c.PolicyTimeout, 5*time.Minute); p != "" {
		bad("policyTimeout", "%s", p)
	}
	if p := timeoutProblem(c.APITimeout, 5*time.Minute); p != "" {
		bad("apiTimeout", "%s", p)
	}
	return errs
}
