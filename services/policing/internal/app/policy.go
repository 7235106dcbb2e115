package app

import (
	"context"
	"log/slog"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/policy/luapolicy"
)

// policyPart is the dictionaries and the policy: the built-in one (it also checks profiles
// at load) and the one that decides, the built-in one or a Lua engine over it when
// policy.lua.file is set.
type policyPart struct {
	d       *deps
	dict    *dict.Dict // the built-in dictionary and radius.dictionaries, swapped on reload
	builtin *policy.Default
	decide  policy.Policy
	lua     *luapolicy.Engine // nil without a Lua policy
}

func newPolicy(d *deps) *policyPart { return &policyPart{d: d} }

func (p *policyPart) Start(context.Context) error {
	cfg := p.d.cfg
	p.d.reloader.Mark(cfg.Radius.Dictionaries...) // the includes are seen only once read
	d, err := p.loadDictionaries()
	if err != nil {
		return err
	}
	p.dict = d
	p.d.m.dict.Export(d.Stats())
	p.builtin = &policy.Default{Dict: d, RateLimitAttribute: cfg.Policy.RateLimitAttribute, RejectMessage: cfg.Policy.RejectMessage,
		Disconnects: p.d.m.shared.PolicyDisconnects}
	if err := p.builtin.CheckRateLimitAttribute(); err != nil {
		return err
	}
	p.decide = p.builtin
	l := cfg.Policy.Lua
	if l.File == "" {
		return nil
	}
	p.d.reloader.Mark(l.File)
	e, err := luapolicy.New(luapolicy.Options{File: l.File, Budget: l.Budget.D(), PoolSize: cfg.EffectiveLuaPoolSize(),
		FailOpen: l.FailMode == "open", Memoize: l.Memoize, MemoSize: l.MemoSize,
		Dict: d, Builtin: p.builtin, Log: p.d.log, Metrics: p.d.m.lua})
	if err != nil {
		return err // names policy.lua.file
	}
	p.lua, p.decide = e, e
	return nil
}

func (p *policyPart) Stop(context.Context) error {
	if p.lua != nil {
		p.lua.Close()
	}
	return nil
}

// CheckPolicy loads cfg's Lua policy as Start would, and releases it (policing check-policy).
func CheckPolicy(cfg *config.Config, log *slog.Logger) error {
	p := newPolicy(&deps{cfg: cfg, log: log, m: newNodeMetrics(nil)})
	if err := p.Start(context.Background()); err != nil {
		return err
	}
	return p.Stop(context.Background())
}

// watchPolicy reloads the Lua script when its file changes (or on SIGHUP): compiled and
// self-tested before it replaces the one in force (docs/hot-reload.md).
func (p *policyPart) watchPolicy() {
	if p.lua != nil {
		p.d.reloader.Watch("policy", []string{p.d.cfg.Policy.Lua.File}, p.lua.Reload)
	}
}
