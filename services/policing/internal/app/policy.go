package app

import (
	"log/slog"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/policy/luapolicy"
)

// buildPolicy returns the built-in policy (it also checks profiles at load) and the policy
// that decides: the built-in one, or a Lua engine over it when policy.lua.file is set.
func (n *Node) buildPolicy() (*policy.Default, policy.Policy, error) {
	cfg := n.Config
	n.Reloader.Mark(cfg.Radius.Dictionaries...) // the includes are seen only once read
	d, err := n.loadDictionaries()
	if err != nil {
		return nil, nil, err
	}
	n.Dict = d
	dict.Export(d.Stats())
	builtin := &policy.Default{Dict: d, RateLimitAttribute: cfg.Policy.RateLimitAttribute, RejectMessage: cfg.Policy.RejectMessage}
	if err := builtin.CheckRateLimitAttribute(); err != nil {
		return nil, nil, err
	}
	l := cfg.Policy.Lua
	if l.File == "" {
		return builtin, builtin, nil
	}
	n.Reloader.Mark(l.File)
	e, err := luapolicy.New(luapolicy.Options{File: l.File, Budget: l.Budget.D(), PoolSize: cfg.EffectiveLuaPoolSize(),
		FailOpen: l.FailMode == "open", Memoize: l.Memoize, MemoSize: l.MemoSize,
		Dict: d, Builtin: builtin, Log: n.Log})
	if err != nil {
		return nil, nil, err // names policy.lua.file
	}
	n.lua = e
	return builtin, e, nil
}

// CheckPolicy loads cfg's Lua policy as Start would, and releases it (policing check-policy).
func CheckPolicy(cfg *config.Config, log *slog.Logger) error {
	n := &Node{Config: cfg, Log: log}
	if _, _, err := n.buildPolicy(); err != nil {
		return err
	}
	n.closePolicy()
	return nil
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
