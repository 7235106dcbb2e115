package luapolicy

import (
	"context"
	"slices"

	lua "github.com/yuin/gopher-lua"

	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// GxDecision is what gx_initial or gx_update decided for a Gx session: reject it
// (CCR-I only), or PCC rules to install and remove on top of the data policy's.
type GxDecision struct {
	Reject  bool
	Reason  string
	Install []string
	Remove  []string
}

// Gx runs gx_initial (initial) or gx_update for a Gx session, memoized by its inputs like
// every hook: the script runs again only for declared inputs it has not decided for. ok is
// false when the script does not define the hook or the hook failed (the data policy alone
// decides).
// u is the session as stored after the CCR (counters include this CCR's usage).
func (e *Engine) Gx(ctx context.Context, initial bool, u *session.Update, sub *subscriber.Subscriber) (GxDecision, bool) {
	p := e.prog.Load()
	h := hookGxUpdate
	if initial {
		h = hookGxInitial
	}
	if !p.hooks[h] {
		return GxDecision{}, false
	}
	d, err := e.decide(ctx, p, h, args{sub: sub, sess: u, clock: e.opt.Now})
	if err != nil {
		e.opt.Metrics.Failed.WithLabelValues(hookNames[h]).Inc()
		return GxDecision{}, false
	}
	return GxDecision{Reject: d.reject, Reason: d.reason, Install: slices.Clip(d.install), Remove: slices.Clip(d.remove)}, true
}

// install_rule(name): a Gx hook installs a predefined PCC rule (Charging-Rule-Name).
func (st *state) installRule(L *lua.LState) int {
	st.only("install_rule", hookGxInitial, hookGxUpdate)
	st.d.install = append(st.d.install, L.CheckString(1))
	return 0
}

// remove_rule(name): a Gx hook removes a PCC rule.
func (st *state) removeRule(L *lua.LState) int {
	st.only("remove_rule", hookGxInitial, hookGxUpdate)
	st.d.remove = append(st.d.remove, L.CheckString(1))
	return 0
}
