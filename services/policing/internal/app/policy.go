package app

import (
	"fmt"

	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/policy/luapolicy"
)

// buildPolicy returns the built-in policy (it also checks profiles at load) and the policy
// that decides: the built-in one, or a Lua engine over it when policy.lua.file is set.
func (n *Node) buildPolicy() (*policy.Default, policy.Policy, error) {
	cfg := n.Config
	builtin := &policy.Default{Dict: dict.Builtin, RateLimitAttribute: cfg.Policy.RateLimitAttribute, RejectMessage: cfg.Policy.RejectMessage}
	if _, ok := dict.Builtin.Lookup(cfg.Policy.RateLimitAttribute); !ok && cfg.Policy.RateLimitAttribute != "" {
		return nil, nil, fmt.Errorf("policy.rateLimitAttribute: no attribute %q in the dictionary", cfg.Policy.RateLimitAttribute)
	}
	l := cfg.Policy.Lua
	if l.File == "" {
		return builtin, builtin, nil
	}
	e, err := luapolicy.New(luapolicy.Options{File: l.File, Budget: l.Budget.D(), PoolSize: cfg.EffectiveLuaPoolSize(),
		FailOpen: l.FailMode == "open", Memoize: l.Memoize, MemoSize: l.MemoSize,
		Dict: dict.Builtin, Builtin: builtin, Log: n.Log})
	if err != nil {
		return nil, nil, err // names policy.lua.file
	}
	n.lua = e
	return builtin, e, nil
}

// watchPolicy reloads the Lua script when its file changes (or on SIGHUP): compiled and
// self-tested before it replaces the one in force (docs/hot-reload.md).
func (n *Node) watchPolicy() {
	if n.lua != nil {
		n.Reloader.Watch("policy", []string{n.Config.Policy.Lua.File}, n.lua.Reload)
	}
}

func (n *Node) closePolicy() {
	if n.lua != nil {
		n.lua.Close()
	}
}
