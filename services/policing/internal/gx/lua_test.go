package gx

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"

	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/policy/luapolicy"
)

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
	// testdata/throttle.lua: a throttle rule in Lua, gx_initial rejecting a blocked profile.
	file := filepath.Join("testdata", "throttle.lua")
	eng, err := luapolicy.New(luapolicy.Options{File: file, Budget: 50 * time.Millisecond, PoolSize: 2, Memoize: true, MemoSize: 100,
		Dict: dict.Builtin, Builtin: &policy.Default{Dict: dict.Builtin}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics: testLuaMetrics})
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
	// gx_initial is memoized by its inputs: the subscriber's next session (the same inputs) reuses it.
	initialReuses := counter(t, "openaaa_policy_lua_reuses_total", map[string]string{"hook": "gx_initial"})
	if code := r.code(r.send(ccr("pgw.test;lua;3", Initial, 0, initialAVPs()...))); code != diam.Success {
		t.Fatalf("second session's CCA-I %d", code)
	}
	if counter(t, "openaaa_policy_lua_reuses_total", map[string]string{"hook": "gx_initial"}) != initialReuses+1 {
		t.Fatal("gx_initial not memoized for the subscriber's second session")
	}
	// gx_initial rejects the blocked profile: 5003, nothing stored.
	blocked := ccr("pgw.test;lua;2", Initial, 0, initialAVPs()...)
	blocked.DeleteAVP(avp.SubscriptionID, 0)
	blocked.AddAVP(imsi("001010000000002"))
	if code := r.code(r.send(blocked)); code != resultAuthorizationRejected {
		t.Fatalf("blocked profile: %d, want 5003", code)
	}
}
