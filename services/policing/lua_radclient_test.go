package main_test

// The Lua policy on the wire (docs/policy.md): a script's reply attributes as radclient
// decodes them, and a reload under load that changes the replies without dropping one.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
)

func luaScript(rate string) string {
	return `
local blocked = { ["02-00-00-00-00-66"] = true }
inputs = { authorize = { "sub.profile", "req.Calling-Station-Id" } }
function authorize(req, sub)
  if blocked[req["Calling-Station-Id"]] then return reject("blocklist") end
  reply("Mikrotik-Rate-Limit", "` + rate + `")
  reply("Session-Timeout", 3600)
end
function selftest()
  assert(check_authorize({ ["Calling-Station-Id"] = "02-00-00-00-00-66" }, {}).accept == false)
  assert(check_authorize({}, { profile = "basic" }).reply["Mikrotik-Rate-Limit"] == "` + rate + `")
end
`
}

func startLua(t *testing.T, script string) (*node, string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.lua")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return startPolicing(t, dir, "--set", "policy.lua.file="+file, "--set", "reload.interval=50ms"), file
}

// replaceFile replaces a file whole (a new file renamed over it), as a ConfigMap volume or a
// deploy tool does: written in place, the reloader could read it empty, between the truncate
// and the write (a script with no hook is refused, and counted).
func replaceFile(t *testing.T, path, text string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestRadclientLuaPolicyReplies(t *testing.T) {
	n, _ := startLua(t, luaScript("50M/50M"))
	out := radclient(t, n.auth, "auth", testSecret, `User-Name = "alice"`, `User-Password = "wonderland"`, `Calling-Station-Id = "02-00-00-00-00-01"`, ma)
	// The script replaces the built-in policy: its attributes, not the profile's.
	mustContain(t, out, "Received Access-Accept", `Mikrotik-Rate-Limit = "50M/50M"`, "Session-Timeout = 3600")
	mustNotContain(t, out, "Framed-IP-Address")
	out = radclient(t, n.auth, "auth", testSecret, `User-Name = "alice"`, `User-Password = "wonderland"`, `Calling-Station-Id = "02-00-00-00-00-66"`, ma)
	mustContain(t, out, "Received Access-Reject", "Reply-Message")
	mustNotContain(t, out, "blocklist") // reasons are never sent
	// Accounting with a script without an accounting hook: the built-in policy, stored.
	out = radclient(t, n.acct, "acct", testSecret, acctLines("Start", "L-1")...)
	mustContain(t, out, "Received Accounting-Response")
	if got := metric(t, n, `openaaa_policy_lua_runs_total{hook="authorize"}`); got != 2 {
		t.Fatalf("runs = %v, want 2", got)
	}
}

func TestRadclientLuaHookErrorFailsClosedAndAccountingIsStored(t *testing.T) {
	n, _ := startLua(t, `
function authorize(req, sub) error("bug") end
function accounting(req, session, sub) while true do end end`)
	out := radclient(t, n.auth, "auth", testSecret, `User-Name = "alice"`, `User-Password = "wonderland"`, ma)
	mustContain(t, out, "Received Access-Reject")
	out = radclient(t, n.acct, "acct", testSecret, acctLines("Start", "E-1")...)
	mustContain(t, out, "Received Accounting-Response")
	if r := lookup(t, n, "/api/v1/sessions?user=alice"); len(r.Sessions) != 1 {
		t.Fatalf("accounting not stored after a failed hook: %+v", r)
	}
	if got := metric(t, n, `openaaa_policy_lua_errors_total{hook="accounting",kind="budget"}`); got != 1 {
		t.Fatalf("budget errors = %v", got)
	}
	if got := metric(t, n, `openaaa_policy_lua_fail_decisions_total{mode="closed"}`); got != 1 {
		t.Fatalf("fail-closed decisions = %v", got)
	}
}

// radclient sends Access-Requests at a steady rate while the script is replaced, then a
// broken script is written: every request is answered, replies change from the old rate to
// the new one, and the broken script is refused.
func TestRadclientLuaReloadUnderLoad(t *testing.T) {
	n, file := startLua(t, luaScript("10M/10M"))
	bin := testenv.LookPath(t, "radclient", "Debian freeradius-utils: hack/freeradius.sh install")
	const total = 1500
	var reqs strings.Builder
	for i := range total {
		fmt.Fprintf(&reqs, "User-Name = \"alice\"\nUser-Password = \"wonderland\"\nCalling-Station-Id = \"02-00-00-00-%02x-%02x\"\n%s\n\n", i>>8, i&0xff, ma)
	}
	reqFile := filepath.Join(t.TempDir(), "requests")
	if err := os.WriteFile(reqFile, []byte(reqs.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// -r 1: one try, so a dropped request shows as no reply; 500/s for 3 s.
	cmd := exec.CommandContext(ctx, bin, "-x", "-r", "1", "-t", "3", "-p", "32", "-n", "500", "-f", reqFile, n.auth, "auth", testSecret)
	// stdout and stderr apart: radclient writes the reject's "Expected Access-Accept got
	// Access-Reject" to stderr unbuffered while stdout goes out in 4 KiB blocks, so in one
	// stream that line lands inside a reply and splits the attribute being counted.
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan struct{})
	go func() {
		_ = cmd.Run() // exits non-zero on the reject; the counts below tell
		close(done)
	}()
	time.Sleep(1 * time.Second)
	replaceFile(t, file, luaScript("20M/20M"))
	time.Sleep(500 * time.Millisecond)
	replaceFile(t, file, `function authorize(req, sub) reply("No-Such-Attribute", 1) end
function selftest() check_authorize({}, {}) end`)
	<-done
	out, errs := stdout.String(), stderr.String()
	// Request 0x66 carries the blocklisted Calling-Station-Id: one reject, in both scripts.
	accepts, rejects := strings.Count(out, "Received Access-Accept"), strings.Count(out, "Received Access-Reject")
	old, new := strings.Count(out, `"10M/10M"`), strings.Count(out, `"20M/20M"`)
	if accepts != total-1 || rejects != 1 || strings.Contains(out+errs, "No reply") {
		t.Fatalf("%d accepted, %d rejected of %d (no drop allowed); stderr:\n%s\ntail:\n%s", accepts, rejects, total, errs, out[max(0, len(out)-2000):])
	}
	if old == 0 || new == 0 || old+new != total-1 {
		t.Fatalf("replies: %d with the old rate, %d with the new one, of %d", old, new, total)
	}
	if got := metric(t, n, `openaaa_policy_lua_loads_total{result="rejected"}`); got != 1 {
		t.Fatalf("rejected loads = %v, want 1 (the broken script)", got)
	}
	if got := metric(t, n, `openaaa_config_reloads_total{kind="policy",result="ok"}`); got != 1 {
		t.Fatalf("policy reloads ok = %v, want 1", got)
	}
	// The refused script left the new one in force.
	mustContain(t, radclient(t, n.auth, "auth", testSecret, `User-Name = "alice"`, `User-Password = "wonderland"`, ma), `"20M/20M"`)
	t.Logf("%d replies with the old script, %d with the new one", old, new)
}

// policing check-policy loads a script as a reload would: the shipped samples pass, a
// script whose selftest fails does not, and the error says why.
func TestCheckPolicy(t *testing.T) {
	samples, _ := filepath.Glob("../../config/samples/policy/*.lua")
	if len(samples) == 0 {
		t.Fatal("no sample policies")
	}
	for _, f := range samples {
		if out, err := exec.Command(policingBin, "check-policy", f).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", f, err, out)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.lua")
	if err := os.WriteFile(bad, []byte("function authorize() reply(\"No-Such\", 1) end\nfunction selftest() check_authorize({}, {}) end\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(policingBin, "check-policy", bad).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), `no attribute "No-Such"`) {
		t.Fatalf("bad script: %v\n%s", err, out)
	}
}

// policing check-policy is bounded in memory as a reload is (issue 35): a script doubling a
// string at its top level or in selftest() is refused, and the process's peak RSS stays
// under checkPolicyRSS (before: 277 MiB to over 4 GiB). The bound is the load quota (64 MiB),
// one doubling past it before the watchdog's tick sees it (128 MiB, its source still live)
// and the process's own ~80 MiB: 84-150 MiB on a quiet machine, 277 MiB once under a load
// average of 15 (the watchdog's tick late).
func TestCheckPolicyBoundedInMemory(t *testing.T) {
	const checkPolicyRSS = 384 << 20
	const double = `local s = "x" while #s < 2^31 do s = s .. s end`
	for name, src := range map[string]string{
		"top level": double + "\nfunction authorize(req, sub) end\n",
		"selftest":  "function authorize(req, sub) end\nfunction selftest() " + double + " end\n",
	} {
		f := filepath.Join(t.TempDir(), "doubling.lua")
		if err := os.WriteFile(f, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		cmd := exec.Command(policingBin, "check-policy", f)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "memory quota exceeded") {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
		t.Logf("%s: refused in %s, peak RSS %d MiB", name, time.Since(start), rss>>20)
		if rss > checkPolicyRSS {
			t.Errorf("%s: peak RSS %d MiB, want ≤ %d MiB", name, rss>>20, checkPolicyRSS>>20)
		}
	}
}
