package app

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"

	"github.com/openaaa/openaaa/services/policing/internal/apptest"
)

// hostileScript matches a string whose length the request sets (Session-Timeout) against a
// pattern that backtracks cubically: with 2,000 bytes each decision runs out of its budget.
const hostileScript = `
function authorize(req, sub)
  local n = req["Session-Timeout"]
  if n then
    local s = string.rep("a", n)
    if string.find(s, ".-.-b") then reject("found") end
  end
  reply("Mikrotik-Rate-Limit", "10M/10M")
end`

// How long a normal user's request may take while budget-exhausting decisions are in
// flight: every one within answeredWithin, and their median within medianWithin. On the
// shared 2-core box this was written on (load average 12–15 from other builds) the median
// was 0.5–3 ms and single requests took up to 152 ms with two in flight and 328 ms with
// twenty: the OS's scheduling, the bounds leave room for it. Before issue 35 none was
// answered (the decisions ran on both readers and never ended).
const (
	answeredWithin = time.Second
	medianWithin   = 50 * time.Millisecond
)

// TestLuaHostileDecisionsDoNotStallOthers (issue 35): with two budget-exhausting decisions
// in flight on a node whose readers are as many as its CPUs (2), then twenty, another
// subscriber's requests are answered. Before, the decisions ran on the readers (inline
// dispatch) and never stopped: nothing else was read. Now a Lua policy's decisions run on
// the workers, a decision stops within its budget, and decisions past 16,384 instructions
// share GOMAXPROCS − 1 CPUs (one here) between them.
func TestLuaHostileDecisionsDoNotStallOthers(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "policy.lua")
	apptest.Check(t, os.WriteFile(script, []byte(hostileScript), 0o600))
	n := startNode(t, "policy.lua.file="+script, "radius.readers=2", "radius.workers=64")
	hostile := func() {
		p := apptest.PAP(secret, "bob", "builder")
		rfc2865.SessionTimeout_Set(p, 2000)
		_, _ = apptest.SendFrom(nil, n.Addr("radius.authAddress"), p, true, 5*time.Second)
	}
	rounds := []int{2, 2, 2, 2, 2, 20, 20, 20}
	var took []time.Duration
	for round, inFlight := range rounds {
		var wg sync.WaitGroup
		for range inFlight {
			wg.Add(1)
			go func() { defer wg.Done(); hostile() }()
		}
		time.Sleep(20 * time.Millisecond) // all in flight, each good for its 50 ms budget
		start := time.Now()
		reply, err := apptest.SendFrom(nil, n.Addr("radius.authAddress"), apptest.PAP(secret, "alice", "wonderland"), true, answeredWithin)
		d := time.Since(start)
		if err != nil {
			t.Fatalf("round %d: alice unanswered within %s while %d hostile decisions run: %v", round, answeredWithin, inFlight, err)
		}
		if reply.Code != radius.CodeAccessAccept {
			t.Fatalf("round %d: alice got %v", round, reply.Code)
		}
		t.Logf("round %d: alice answered in %s with %d hostile decisions in flight", round, d, inFlight)
		took = append(took, d)
		wg.Wait()
	}
	slices.Sort(took)
	if m := took[len(took)/2]; m > medianWithin {
		t.Errorf("median answer %s with hostile decisions in flight, want ≤ %s", m, medianWithin)
	}
	want := 0
	for _, r := range rounds {
		want += r
	}
	if got := Metric(t, n, `openaaa_policy_lua_errors_total{hook="authorize",kind="budget"}`); got != float64(want) {
		t.Errorf("budget errors = %v, want %d (the hostile decisions)", got, want)
	}
}
