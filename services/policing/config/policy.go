package config

import "time"

// Policy tunes the built-in policy and selects a Lua policy.
type Policy struct {
	RateLimitAttribute string    `json:"rateLimitAttribute"`
	RejectMessage      string    `json:"rejectMessage"`
	Lua                PolicyLua `json:"lua"`
}

// PolicyLua configures the Lua policy engine (docs/policy.md). No file: the built-in
// policy decides alone.
type PolicyLua struct {
	// File is the script; it is watched and reloaded on change (reload.interval, SIGHUP).
	File string `json:"file,omitempty"`
	// Budget bounds one hook call (wall clock); a call past it fails with kind "budget".
	Budget Duration `json:"budget"`
	// PoolSize is the most Lua states (0: one per RADIUS worker, radius.workers).
	PoolSize int `json:"poolSize"`
	// FailMode is what a failed authorize decides: closed (Access-Reject) or open (the
	// built-in policy). A failed accounting hook is always stored and acknowledged.
	FailMode string `json:"failMode"`
	// Memoize reuses a hook's decision for declared inputs it already decided, whichever
	// user or session it decided them for.
	Memoize bool `json:"memoize"`
	// MemoSize bounds the decisions kept (one per hook and distinct inputs).
	MemoSize int `json:"memoSize"`
}

func defaultPolicy() Policy {
	return Policy{RateLimitAttribute: "Mikrotik-Rate-Limit", RejectMessage: "Authentication failed",
		Lua: PolicyLua{Budget: Duration(50 * time.Millisecond), FailMode: "closed", Memoize: true, MemoSize: 1_000_000}}
}

// EffectiveLuaPoolSize is policy.lua.poolSize, or one state per RADIUS worker (inline dispatch runs
// requests on the readers, at most one per CPU, fewer than the workers).
func (c *Config) EffectiveLuaPoolSize() int {
	if c.Policy.Lua.PoolSize > 0 {
		return c.Policy.Lua.PoolSize
	}
	return c.Radius.Workers
}

func (l PolicyLua) validate(key string) []error {
	var errs []error
	bad := keyed(key, &errs)
	if l.Budget < Duration(time.Millisecond) || l.Budget > Duration(10*time.Second) {
		bad("budget", "must be between 1ms and 10s, got %s", l.Budget.D())
	}
	notNegative(bad, "poolSize", l.PoolSize, "0: radius.workers")
	switch l.FailMode {
	case "closed", "open":
	default:
		bad("failMode", "must be closed or open, got %q", l.FailMode)
	}
	if l.MemoSize < 1 {
		bad("memoSize", "must be at least 1")
	}
	return errs
}
