package luapolicy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"layeh.com/radius"
	"layeh.com/radius/rfc2865"

	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

func builtin() *policy.Default {
	return &policy.Default{Dict: dict.Builtin, RateLimitAttribute: "Mikrotik-Rate-Limit", RejectMessage: "Authentication failed"}
}

func writeScript(t testing.TB, dir, src string) string {
	t.Helper()
	f := filepath.Join(dir, "policy.lua")
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// testMetrics are the metrics of the engines these tests build (options), on a registry of
// their own: tests read their differences.
var testMetrics = NewMetrics(metrics.With(prometheus.NewRegistry()), metrics.New(metrics.Factory{}))

func options(file string) Options {
	return Options{File: file, Budget: 50 * time.Millisecond, PoolSize: 4, Memoize: true, MemoSize: 1000,
		Dict: dict.Builtin, Builtin: builtin(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: testMetrics}
}

func newEngine(t *testing.T, src string, mod ...func(*Options)) *Engine {
	t.Helper()
	o := options(writeScript(t, t.TempDir(), src))
	for _, m := range mod {
		m(&o)
	}
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func request(t testing.TB, user string, attrs ...string) *radius.Packet {
	p := radius.New(radius.CodeAccessRequest, []byte("secret"))
	rfc2865.UserName_SetString(p, user)
	for i := 0; i+1 < len(attrs); i += 2 {
		a, ok := dict.Builtin.Lookup(attrs[i])
		if !ok {
			t.Fatalf("no attribute %s", attrs[i])
		}
		enc, err := a.Encode(attrs[i+1])
		if err != nil {
			t.Fatal(err)
		}
		p.Add(enc.Type, enc.Value)
	}
	return p
}

func sub(profile, class string) *subscriber.Subscriber {
	return &subscriber.Subscriber{Username: "alice", ProfileName: profile, Profile: subscriber.Profile{Class: class, RateLimit: "10M/10M", QuotaOctets: 5 << 30}}
}

// replyText returns the reply attribute of that dictionary name as text ("" if absent).
func replyText(t *testing.T, d policy.AuthDecision, name string) string {
	t.Helper()
	a, _ := dict.Builtin.Lookup(name)
	raw, ok := a.Find(d.Reply)
	if !ok {
		return ""
	}
	v, _ := a.Decode(raw)
	if v.IsNum {
		return strconv.FormatUint(uint64(v.Num), 10)
	}
	return v.Str
}

const tierScript = `
inputs = { authorize = { "sub.profile", "req.Called-Station-Id" } }
function authorize(req, sub)
  if sub.profile == "gold" then
    reply("Mikrotik-Rate-Limit", "100M/100M")
  else
    reply("Mikrotik-Rate-Limit", "10M/10M")
  end
  if req["Called-Station-Id"] == "ims" then
    reply("Session-Timeout", 600)
  end
end
`

func TestAuthorizeReplyAndVendorAttributes(t *testing.T) {
	e := newEngine(t, tierScript)
	d := e.Authorize(context.Background(), request(t, "alice", "Called-Station-Id", "ims"), sub("gold", ""))
	if !d.Accept || replyText(t, d, "Mikrotik-Rate-Limit") != "100M/100M" || replyText(t, d, "Session-Timeout") != "600" {
		t.Fatalf("decision %+v", d)
	}
	d = e.Authorize(context.Background(), request(t, "bob", "Called-Station-Id", "internet"), sub("silver", ""))
	if !d.Accept || replyText(t, d, "Mikrotik-Rate-Limit") != "10M/10M" || replyText(t, d, "Session-Timeout") != "" {
		t.Fatalf("decision %+v", d)
	}
}

func TestReadVendorAttributeOfRequest(t *testing.T) {
	e := newEngine(t, `
function authorize(req, sub)
  if req["3GPP-IMSI"] ~= "001010123456789" then reject("imsi " .. tostring(req["3GPP-IMSI"])) end
  if req["NAS-Port-Type"] ~= 19 then reject("port type") end
end`)
	ok := e.Authorize(context.Background(), request(t, "a", "3GPP-IMSI", "001010123456789", "NAS-Port-Type", "19"), sub("gold", ""))
	no := e.Authorize(context.Background(), request(t, "a", "3GPP-IMSI", "001019999999999", "NAS-Port-Type", "19"), sub("gold", ""))
	if !ok.Accept || no.Accept || no.Reason != "imsi 001019999999999" {
		t.Fatalf("ok %+v, no %+v", ok, no)
	}
}

// A script with a Gx hook only: RADIUS decisions are the built-in policy's. (A script with no
// hook at all is refused: reload_test.go.)
func TestAbsentHooksFallBackToBuiltin(t *testing.T) {
	e := newEngine(t, `function gx_terminate(req, session, sub) end`)
	s := sub("gold", "")
	d := e.Authorize(context.Background(), request(t, "alice"), s)
	want, _ := builtin().ReplyAttributes(&s.Profile)
	if !d.Accept || len(d.Reply) != len(want) || replyText(t, d, "Mikrotik-Rate-Limit") != "10M/10M" {
		t.Fatalf("decision %+v", d)
	}
	u := &session.Update{Kind: session.KindInterim}
	u.Session.InputOctets = 6 << 30
	if a := e.Accounting(context.Background(), request(t, "alice"), u, s); a.Disconnect != policy.QuotaReason {
		t.Fatalf("built-in accounting not applied: %q", a.Disconnect)
	}
}

func TestMemoizationHitsAndMisses(t *testing.T) {
	e := newEngine(t, tierScript)
	runs := func() float64 { return testutil.ToFloat64(testMetrics.Runs.WithLabelValues("authorize")) }
	reuses := func() float64 { return testutil.ToFloat64(testMetrics.Reuses.WithLabelValues("authorize")) }
	r0, u0 := runs(), reuses()
	ctx := context.Background()
	gold := sub("gold", "")
	for range 3 {
		e.Authorize(ctx, request(t, "alice", "Called-Station-Id", "internet"), gold)
	}
	if runs()-r0 != 1 || reuses()-u0 != 2 {
		t.Fatalf("same inputs: %v runs, %v reuses; want 1 and 2", runs()-r0, reuses()-u0)
	}
	// A declared input changes: the hook runs again, and its new decision is the one reused.
	d := e.Authorize(ctx, request(t, "alice", "Called-Station-Id", "ims"), gold)
	if runs()-r0 != 2 || replyText(t, d, "Session-Timeout") != "600" {
		t.Fatalf("changed request input: %v runs, decision %+v", runs()-r0, d)
	}
	d = e.Authorize(ctx, request(t, "alice", "Called-Station-Id", "ims"), sub("silver", ""))
	if runs()-r0 != 3 || replyText(t, d, "Mikrotik-Rate-Limit") != "10M/10M" {
		t.Fatalf("changed profile: %v runs, decision %+v", runs()-r0, d)
	}
	// An attribute that is not an input changes nothing.
	e.Authorize(ctx, request(t, "alice", "Called-Station-Id", "ims", "Calling-Station-Id", "x"), sub("silver", ""))
	if runs()-r0 != 3 || reuses()-u0 != 3 {
		t.Fatalf("undeclared attribute changed: %v runs, %v reuses", runs()-r0, reuses()-u0)
	}
	// Another user with the same inputs reuses the decision: the hook cannot tell them apart
	// (reading the User-Name would have to be declared).
	d = e.Authorize(ctx, request(t, "bob", "Called-Station-Id", "ims"), sub("silver", ""))
	if runs()-r0 != 3 || replyText(t, d, "Mikrotik-Rate-Limit") != "10M/10M" {
		t.Fatalf("another user, same inputs: %v runs, decision %+v", runs()-r0, d)
	}
}

// TestMemoizationPerUserWhenDeclared: a hook that declares the User-Name gets a decision per
// user, each reused by that user alone.
func TestMemoizationPerUserWhenDeclared(t *testing.T) {
	e := newEngine(t, `
inputs = { authorize = { "req.User-Name" } }
function authorize(req, sub) reply("Class", "for " .. req["User-Name"]) end`)
	runs := func() float64 { return testutil.ToFloat64(testMetrics.Runs.WithLabelValues("authorize")) }
	r0 := runs()
	for range 2 {
		for _, u := range []string{"alice", "bob"} {
			if d := e.Authorize(context.Background(), request(t, u), sub("gold", "")); replyText(t, d, "Class") != "for "+u {
				t.Fatalf("%s got %+v", u, d)
			}
		}
	}
	if n := runs() - r0; n != 2 {
		t.Fatalf("two users twice: %v runs, want 2", n)
	}
}

func TestMemoizationOffRunsEveryTime(t *testing.T) {
	e := newEngine(t, tierScript, func(o *Options) { o.Memoize = false })
	r0 := testutil.ToFloat64(testMetrics.Runs.WithLabelValues("authorize"))
	for range 3 {
		e.Authorize(context.Background(), request(t, "alice"), sub("gold", ""))
	}
	if n := testutil.ToFloat64(testMetrics.Runs.WithLabelValues("authorize")) - r0; n != 3 {
		t.Fatalf("%v runs, want 3", n)
	}
}

func TestUndeclaredInputRefused(t *testing.T) {
	e := newEngine(t, `
inputs = { authorize = { "sub.profile" } }
function authorize(req, sub)
  if req["Calling-Station-Id"] == "x" then reject() end
end`)
	before := testutil.ToFloat64(testMetrics.Errors.WithLabelValues("authorize", ErrKindInput))
	d := e.Authorize(context.Background(), request(t, "alice"), sub("gold", ""))
	if d.Accept || !strings.Contains(d.Reason, ErrKindInput) {
		t.Fatalf("decision %+v", d)
	}
	if testutil.ToFloat64(testMetrics.Errors.WithLabelValues("authorize", ErrKindInput))-before != 1 {
		t.Fatal("input error not counted")
	}
}

func TestHourIsAnInput(t *testing.T) {
	now := time.Date(2026, 1, 5, 23, 0, 0, 0, time.UTC)
	e := newEngine(t, `
inputs = { authorize = { "hour" } }
function authorize(req, sub)
  if hour() >= 22 or hour() < 6 then reply("Mikrotik-Rate-Limit", "200M/200M") else reply("Mikrotik-Rate-Limit", "20M/20M") end
end`, func(o *Options) { o.Now = func() time.Time { return now } })
	if d := e.Authorize(context.Background(), request(t, "alice"), sub("gold", "")); replyText(t, d, "Mikrotik-Rate-Limit") != "200M/200M" {
		t.Fatalf("night: %+v", d)
	}
	now = now.Add(10 * time.Hour)
	if d := e.Authorize(context.Background(), request(t, "alice"), sub("gold", "")); replyText(t, d, "Mikrotik-Rate-Limit") != "20M/20M" {
		t.Fatalf("day (memo must miss): %+v", d)
	}
}

func TestBudgetExceeded(t *testing.T) {
	e := newEngine(t, `function authorize(req, sub) while true do end end`)
	before := testutil.ToFloat64(testMetrics.Errors.WithLabelValues("authorize", ErrKindBudget))
	start := time.Now()
	d := e.Authorize(context.Background(), request(t, "alice"), sub("gold", ""))
	if took := time.Since(start); took > time.Second {
		t.Fatalf("runaway hook stopped after %s", took)
	}
	if d.Accept || d.Reason != "policy error: budget" {
		t.Fatalf("decision %+v", d)
	}
	if testutil.ToFloat64(testMetrics.Errors.WithLabelValues("authorize", ErrKindBudget))-before != 1 {
		t.Fatal("budget error not counted")
	}
	// The state that overran is discarded; the next call gets a working one.
	if n := e.prog.Load().created.Load(); n != 0 {
		t.Fatalf("%d states alive after the overrun, want 0", n)
	}
}

func TestFailOpenUsesBuiltin(t *testing.T) {
	e := newEngine(t, `function authorize(req, sub) error("boom") end`, func(o *Options) { o.FailOpen = true })
	d := e.Authorize(context.Background(), request(t, "alice"), sub("gold", ""))
	if !d.Accept || replyText(t, d, "Mikrotik-Rate-Limit") != "10M/10M" {
		t.Fatalf("fail-open decision %+v", d)
	}
	closed := newEngine(t, `function authorize(req, sub) error("boom") end`)
	if d := closed.Authorize(context.Background(), request(t, "alice"), sub("gold", "")); d.Accept || d.Reason != "policy error: runtime" {
		t.Fatalf("fail-closed decision %+v", d)
	}
}

func TestAccountingErrorDecidesNothing(t *testing.T) {
	e := newEngine(t, `function accounting(req, session, sub) error("boom") end`)
	u := &session.Update{Kind: session.KindInterim}
	u.Session.Key = session.Key{NAS: "n", ID: "1"}
	u.Session.InputOctets = 1 << 40
	a := e.Accounting(context.Background(), request(t, "alice"), u, sub("gold", ""))
	if a.Disconnect != "" || a.CoA != nil || u.Session.InputOctets != 1<<40 {
		t.Fatalf("a failed hook decided %+v, update %+v", a, u)
	}
}

func TestAccountingCoAAndDisconnect(t *testing.T) {
	e := newEngine(t, `
inputs = { accounting = { "session.octetsGiB", "sub.quotaOctets" } }
function accounting(req, session, sub)
  if session.octetsGiB >= 10 then disconnect("hard cap")
  elseif session.octetsGiB * 2^30 >= sub.quotaOctets then coa("Mikrotik-Rate-Limit", "1M/1M") end
end`)
	upd := func(gb uint64) policy.Actions {
		u := &session.Update{Kind: session.KindInterim}
		u.Session.Key = session.Key{NAS: "n", ID: "1"}
		u.Session.InputOctets = gb << 30
		return e.Accounting(context.Background(), request(t, "alice"), u, sub("gold", ""))
	}
	if acts := upd(1); acts.CoA != nil || acts.Disconnect != "" {
		t.Fatalf("under quota: %+v", acts)
	}
	acts := upd(5)
	a, _ := dict.Builtin.Lookup("Mikrotik-Rate-Limit")
	if raw, ok := a.Find(acts.CoA); !ok || string(raw) != "1M/1M" {
		t.Fatalf("over quota: CoA %v", acts.CoA)
	}
	if acts := upd(12); acts.Disconnect != "hard cap" {
		t.Fatalf("hard cap: %+v", acts)
	}
}

// TestAccountingSharedBySessions: a declared accounting hook's decision depends on its
// inputs alone, so a new session with the inputs another session had reuses that decision
// (each session's Start ran the script before), other inputs run it, and a Stop runs nothing
// and leaves the memo one entry per distinct inputs, not per session.
func TestAccountingSharedBySessions(t *testing.T) {
	e := newEngine(t, `
inputs = { accounting = { "session.octetsGiB" } }
function accounting(req, session, sub)
  if session.octetsGiB >= 10 then disconnect("cap") end
end`)
	runs := func() float64 { return testutil.ToFloat64(testMetrics.Runs.WithLabelValues("accounting")) }
	r0 := runs()
	acct := func(kind session.Kind, id string, gib uint64) policy.Actions {
		u := &session.Update{Kind: kind}
		u.Session.Key = session.Key{NAS: "n", ID: id}
		u.Session.InputOctets = gib << 30
		return e.Accounting(context.Background(), request(t, "user"+id), u, sub("gold", ""))
	}
	for i := range 100 {
		if acts := acct(session.KindStart, fmt.Sprint(i), 0); acts.Disconnect != "" {
			t.Fatalf("session %d: %+v", i, acts)
		}
	}
	if n := runs() - r0; n != 1 {
		t.Fatalf("100 sessions' Starts with the same inputs: %v runs, want 1", n)
	}
	if acts := acct(session.KindInterim, "7", 12); acts.Disconnect != "cap" {
		t.Fatalf("over the cap: %+v, want a disconnect", acts)
	}
	if acts := acct(session.KindInterim, "8", 12); acts.Disconnect != "cap" || runs()-r0 != 2 {
		t.Fatalf("another session over the cap: %+v after %v runs, want the reused disconnect after 2", acts, runs()-r0)
	}
	acct(session.KindStop, "7", 12)
	if n := runs() - r0; n != 2 {
		t.Fatalf("a Stop ran the hook: %v runs", n)
	}
	if n := e.prog.Load().memo.len(); n != 2 {
		t.Fatalf("memo has %d entries, want 2 (one per distinct inputs)", n)
	}
}

func TestDisabledSubscriberRejectedBeforeTheScript(t *testing.T) {
	e := newEngine(t, `function authorize(req, sub) end`)
	s := sub("gold", "")
	s.Disabled = true
	if d := e.Authorize(context.Background(), request(t, "alice"), s); d.Accept {
		t.Fatal("disabled subscriber accepted")
	}
}

// A memoized Accept is not reused for a subscriber disabled since: "disabled" is not among
// the declared inputs, and the engine checks it before the memo.
func TestDisabledSubscriberRejectedDespiteAMemoizedAccept(t *testing.T) {
	e := newEngine(t, `
inputs = { authorize = { "sub.profile" } }
function authorize(req, sub) reply("Class", "ok") end`)
	s := sub("gold", "")
	for range 2 { // the second Accept is the memoized one
		if d := e.Authorize(context.Background(), request(t, "alice"), s); !d.Accept {
			t.Fatalf("enabled subscriber rejected: %+v", d)
		}
	}
	s.Disabled = true
	if d := e.Authorize(context.Background(), request(t, "alice"), s); d.Accept {
		t.Fatal("disabled subscriber accepted from the memo")
	}
}

// testdata/builtin.lua decides as the built-in policy: quota reached at 100 %, and the
// memo re-runs the check only when the percentage moves.
func TestQuotaPercentInput(t *testing.T) {
	o := options("testdata/builtin.lua")
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := &subscriber.Subscriber{Username: "alice", Profile: subscriber.Profile{QuotaOctets: 1000}}
	runs := func() float64 { return testutil.ToFloat64(testMetrics.Runs.WithLabelValues("accounting")) }
	r0 := runs()
	for _, c := range []struct {
		octets uint64
		want   string
		runs   float64
	}{{100, "", 1}, {105, "", 1}, {999, "", 2}, {1000, policy.QuotaReason, 3}, {1009, policy.QuotaReason, 3}} {
		u := &session.Update{Kind: session.KindInterim}
		u.Session.Key = session.Key{NAS: "n", ID: "q"}
		u.Session.InputOctets = c.octets
		a := e.Accounting(context.Background(), request(t, "alice"), u, s)
		if a.Disconnect != c.want || runs()-r0 != c.runs {
			t.Fatalf("%d octets of 1000: reason %q after %v runs, want %q after %v", c.octets, a.Disconnect, runs()-r0, c.want, c.runs)
		}
	}
}
