package gx

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"

	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/policy/luapolicy"
)

// A Lua rule throttles: once the session's octets reach the subscriber's quota, gx_update
// removes the internet rule and installs its own throttle rule; gx_initial rejects a
// blocked profile. The hooks are memoized on their declared inputs.
const throttleLua = `
inputs = {
  gx_initial = {"sub.profile"},
  gx_update = {"session.octets", "sub.quotaOctets"},
}
function gx_initial(req, sub)
  if sub.profile == "blocked" then reject("blocked profile") end
end
function gx_update(req, session, sub)
  if sub.quotaOctets > 0 and session.octets >= sub.quotaOctets then
    remove_rule("internet")
    install_rule("lua-throttle-1m")
  end
end
`

const luaSubscribers = `
profiles:
  data:
    quotaOctets: 700
    dataPolicy: {rules: [internet], qci: 9}
  blocked:
    dataPolicy: {rules: [internet]}
subscribers:
  - {username: "001010000000001", password: x, profileName: data}
  - {username: "001010000000002", password: x, profileName: blocked}
`

func TestLuaThrottle(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.lua")
	if err := os.WriteFile(file, []byte(throttleLua), 0o600); err != nil {
		t.Fatal(err)
	}
	eng, err := luapolicy.New(luapolicy.Options{File: file, Budget: 50 * time.Millisecond, PoolSize: 2, Memoize: true, MemoSize: 100,
		Dict: dict.Builtin, Builtin: &policy.Default{Dict: dict.Builtin}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	st, addr, _ := newServerWith(t, eng, luaSubscribers, "pgw.test")
	r := dialRig(t, st, addr)
	sid := "pgw.test;lua;1"
	if code := r.code(r.send(ccr(sid, Initial, 0, initialAVPs()...))); code != diam.Success {
		t.Fatalf("CCA-I %d", code)
	}
	runs := counter(t, "openaaa_policy_lua_runs_total", map[string]string{"hook": "gx_update"})
	reuses := counter(t, "openaaa_policy_lua_reuses_total", map[string]string{"hook": "gx_update"})
	a := r.send(ccr(sid, Update, 1, usedOctets(300)))
	if got := ruleNames(t, a, avp.ChargingRuleInstall); len(got) != 0 {
		t.Fatalf("under the quota, installed %v", got)
	}
	// An update without usage: the same inputs, the memoized decision.
	r.send(ccr(sid, Update, 2))
	if counter(t, "openaaa_policy_lua_reuses_total", map[string]string{"hook": "gx_update"}) != reuses+1 {
		t.Fatal("gx_update not memoized on unchanged inputs")
	}
	a = r.send(ccr(sid, Update, 3, usedOctets(400)))
	if got := ruleNames(t, a, avp.ChargingRuleInstall); len(got) != 1 || got[0] != "lua-throttle-1m" {
		t.Fatalf("at the quota, installed %v, want [lua-throttle-1m]", got)
	}
	if got := ruleNames(t, a, avp.ChargingRuleRemove); len(got) != 1 || got[0] != "internet" {
		t.Fatalf("at the quota, removed %v, want [internet]", got)
	}
	if got := counter(t, "openaaa_policy_lua_runs_total", map[string]string{"hook": "gx_update"}); got != runs+2 {
		t.Fatalf("gx_update ran %v times, want 2", got-runs)
	}
	// gx_initial rejects the blocked profile: 5003, nothing stored.
	blocked := ccr("pgw.test;lua;2", Initial, 0, initialAVPs()...)
	blocked.DeleteAVP(avp.SubscriptionID, 0)
	blocked.AddAVP(imsi("001010000000002"))
	if code := r.code(r.send(blocked)); code != resultAuthorizationRejected {
		t.Fatalf("blocked profile: %d, want 5003", code)
	}
}
