package gx

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/dict"

	"github.com/openaaa/openaaa/services/policing/internal/diameter"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/store/embedded"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

const windowsYAML = `
profiles:
  night:
    dataPolicy:
      rules: [internet]
      windows:
        - {from: "01:00", to: "07:00", rules: [night-boost]}
subscribers:
  - {username: "001010000000001", password: x, profileName: night}
`

func day(h, m int) time.Time { return time.Date(2026, 11, 26, h, m, 0, 0, time.UTC) }

// A rule window opening between a session's CCRs reaches its PCEF by a RAR from the node
// holding its connection, once; its closing removes the rules by another; a session that
// ended is not sent anything.
func TestRuleWindowRARs(t *testing.T) {
	var clock atomic.Pointer[time.Time]
	set := func(t time.Time) { clock.Store(&t) }
	set(day(0, 59))
	st, addr, h := newServerWith(t, nil, windowsYAML, "pgw.test")
	h.Now = func() time.Time { return *clock.Load() }
	r := dialRig(t, st, addr)
	sid := "pgw.test;night;1"
	a := r.send(ccr(sid, Initial, 0, initialAVPs()...))
	if got := ruleNames(t, a, avp.ChargingRuleInstall); r.code(a) != diam.Success || !slices.Equal(got, []string{"internet"}) {
		t.Fatalf("CCA-I at 00:59: %d, installs %v; want [internet] only", r.code(a), got)
	}
	push := func() []string { return pushRound(t, r, h) }
	if got := push(); len(got) != 0 {
		t.Fatalf("at 00:59, before the window: %v", got)
	}
	set(day(1, 0))
	if got := push(); !slices.Equal(got, []string{"+[night-boost] -[]"}) {
		t.Fatalf("at 01:00: RARs %v, want one installing night-boost", got)
	}
	set(day(3, 0))
	if got := push(); len(got) != 0 {
		t.Fatalf("at 03:00, the window open since the last RAR: %v", got)
	}
	set(day(7, 0))
	if got := push(); !slices.Equal(got, []string{"+[] -[night-boost]"}) {
		t.Fatalf("at 07:00: RARs %v, want one removing night-boost", got)
	}
	// The next night the window opens again; a CCR-U in the window installs it in its CCA.
	set(day(23, 0).Add(3 * time.Hour)) // 02:00 the next day
	a = r.send(ccr(sid, Update, 1))
	if got := ruleNames(t, a, avp.ChargingRuleInstall); !slices.Equal(got, []string{"night-boost"}) {
		t.Fatalf("CCA-U in the window: installs %v, want [night-boost]", got)
	}
	if got := push(); len(got) != 0 {
		t.Fatalf("after the CCA-U carried the window: %v", got)
	}
	// Ended: nothing more.
	if code := r.code(r.send(ccr(sid, Termination, 2))); code != diam.Success {
		t.Fatalf("CCA-T %d", code)
	}
	set(day(23, 0).Add(8 * time.Hour))
	if got := push(); len(got) != 0 {
		t.Fatalf("after the CCR-T: %v", got)
	}
}

// pushRound runs one PushPolicy round and answers, as the PCEF of r, the RARs it sends,
// returning what each installed and removed.
func pushRound(t *testing.T, r *rig, h *Handler) (rars []string) {
	t.Helper()
	defer func() { _ = r.conn.SetReadDeadline(time.Now().Add(10 * time.Second)) }()
	done := make(chan int, 1)
	go func() { done <- h.PushPolicy(context.Background(), 4) }()
	for {
		select {
		case n := <-done:
			if n != len(rars) {
				t.Fatalf("PushPolicy says %d RARs, the PCEF got %d", n, len(rars))
			}
			return rars
		default:
		}
		_ = r.conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		req, err := diam.ReadMessage(r.conn, dict.Default)
		if err != nil {
			continue // none yet, or the round sent none
		}
		_ = r.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if req.Header.CommandCode != diam.ReAuth {
			t.Fatalf("got %s, want a RAR", req)
		}
		rars = append(rars, fmt.Sprint("+", ruleNames(t, req, avp.ChargingRuleInstall), " -", ruleNames(t, req, avp.ChargingRuleRemove)))
		if _, err := (diameter.Identity{Host: "pgw.test", Realm: "test"}).Answer(req, diam.Success).WriteTo(r.conn); err != nil {
			t.Fatal(err)
		}
	}
}

// usedRig is a Gx server and its PCEF on a subscriber file made from format (one %d: the
// subscriber's usedOctets, 0 at first); setUsed rewrites and reloads it.
func usedRig(t *testing.T, format string) (st *embedded.Store, h *Handler, r *rig, setUsed func(int)) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "subscribers.yaml")
	write := func(used int) {
		t.Helper()
		if err := os.WriteFile(path, fmt.Appendf(nil, format, used), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(0)
	st, addr, h, src := newServerOnFile(t, nil, path, "pgw.test")
	setUsed = func(used int) {
		t.Helper()
		write(used)
		if err := src.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	return st, h, dialRig(t, st, addr), setUsed
}

const quotaYAML = `
profiles:
  capped:
    dataPolicy: {rules: [internet], quotaOctets: 1000, throttleRule: slow}
subscribers:
  - {username: "001010000000001", password: x, profileName: capped, profile: {usedOctets: %d}}
`

// A quota that runs out between CCRs — the subscriber source's usedOctets grew (a billing
// system wrote it) — reaches the PCEF by a RAR from the node holding its connection: the
// rules removed, the throttle rule installed, once; the session is marked throttled so that
// its next CCA-U changes nothing, and that CCR-U is applied (not taken for a repeat); the
// subscriber's RADIUS sessions are told (Throttled).
func TestQuotaRAR(t *testing.T) {
	st, h, r, setUsed := usedRig(t, quotaYAML)
	var throttled atomic.Int32
	h.Throttled = func(*subscriber.Subscriber) { throttled.Add(1) }
	sid := "pgw.test;capped;1"
	if a := r.send(ccr(sid, Initial, 0, initialAVPs()...)); r.code(a) != diam.Success {
		t.Fatalf("CCA-I %d", r.code(a))
	}
	if a := r.send(ccr(sid, Update, 1, usedOctets(300))); r.code(a) != diam.Success || grant(t, a) != 700 {
		t.Fatalf("CCA-U: %d, grant %d; want 2001, 700", r.code(a), grant(t, a))
	}
	if got := pushRound(t, r, h); len(got) != 0 {
		t.Fatalf("quota not used: RARs %v", got)
	}
	setUsed(750) // 750 before this session + its 300 ≥ 1000
	if got := pushRound(t, r, h); !slices.Equal(got, []string{"+[slow] -[internet]"}) {
		t.Fatalf("quota used up between CCRs: RARs %v, want one throttling", got)
	}
	if got := pushRound(t, r, h); len(got) != 0 {
		t.Fatalf("after the throttle: RARs %v", got)
	}
	if n := throttled.Load(); n != 1 {
		t.Fatalf("Throttled called %d times, want 1", n)
	}
	a := r.send(ccr(sid, Update, 2, usedOctets(10)))
	if r.code(a) != diam.Success || len(ruleNames(t, a, avp.ChargingRuleInstall)) != 0 || len(ruleNames(t, a, avp.ChargingRuleRemove)) != 0 {
		t.Fatalf("CCA-U after the RAR: %d, +%v -%v; want 2001 and no rule change", r.code(a),
			ruleNames(t, a, avp.ChargingRuleInstall), ruleNames(t, a, avp.ChargingRuleRemove))
	}
	s, err := st.Get(context.Background(), session.Key{NAS: NAS, ID: sid})
	if err != nil {
		t.Fatal(err)
	}
	if s.OutputOctets != 310 || !s.GxThrottled || s.DisconnectReason != "" {
		t.Fatalf("session: %d octets, throttled %v, reason %q; want 310 (the CCR-U after the RAR applied), throttled, none", s.OutputOctets, s.GxThrottled, s.DisconnectReason)
	}
}

const videoYAML = `
profiles:
  video:
    dataPolicy:
      rules: [internet, video-hd]
      monitoring:
        - {key: mk-video, quotaOctets: 1000, usedOctets: %d, removeRules: [video-hd], installRules: [video-sd]}
subscribers:
  - {username: "001010000000001", password: x, profileName: video}
`

// A rule-level key's quota used up between CCRs (the source's usedOctets on it grew) swaps
// its rules by a RAR, once; the next CCA-U does not swap them again.
func TestMonitoringKeyRAR(t *testing.T) {
	_, h, r, setUsed := usedRig(t, videoYAML)
	sid := "pgw.test;video;1"
	r.send(ccr(sid, Initial, 0, initialAVPs()...))
	if a := r.send(ccr(sid, Update, 1, usedOn("mk-video", 300))); r.code(a) != diam.Success {
		t.Fatalf("CCA-U %d", r.code(a))
	}
	setUsed(700) // 700 before this session + its 300 ≥ 1000
	if got := pushRound(t, r, h); !slices.Equal(got, []string{"+[video-sd] -[video-hd]"}) {
		t.Fatalf("video quota used up between CCRs: RARs %v, want one swapping the video rules", got)
	}
	if got := pushRound(t, r, h); len(got) != 0 {
		t.Fatalf("after the swap: RARs %v", got)
	}
	a := r.send(ccr(sid, Update, 2, usedOn("mk-video", 10)))
	if r.code(a) != diam.Success || len(ruleNames(t, a, avp.ChargingRuleInstall))+len(ruleNames(t, a, avp.ChargingRuleRemove)) != 0 {
		t.Fatalf("CCA-U after the RAR: %d, +%v -%v; want no rule change", r.code(a),
			ruleNames(t, a, avp.ChargingRuleInstall), ruleNames(t, a, avp.ChargingRuleRemove))
	}
}

func TestRuleWindowOpen(t *testing.T) {
	w := subscriber.RuleWindow{From: "22:00", To: "06:00", TimeZone: "Europe/Paris", Rules: []string{"r"}}
	for _, tc := range []struct {
		at   time.Time // UTC; Paris is UTC+1 in November
		open bool
	}{
		{day(20, 59), false}, {day(21, 0), true}, {day(4, 59), true}, {day(5, 0), false}, {day(12, 0), false},
	} {
		if got := w.Open(tc.at); got != tc.open {
			t.Errorf("%s UTC: open %v, want %v", tc.at.Format("15:04"), got, tc.open)
		}
	}
	for _, bad := range []subscriber.RuleWindow{
		{From: "25:00", To: "06:00", Rules: []string{"r"}},
		{From: "06:00", To: "06:00", Rules: []string{"r"}},
		{From: "01:00", To: "06:00"},
		{From: "01:00", To: "06:00", TimeZone: "Mars/Olympus", Rules: []string{"r"}},
	} {
		p := &subscriber.DataPolicy{Windows: []subscriber.RuleWindow{bad}}
		if err := p.Check(); err == nil {
			t.Errorf("window %+v accepted", bad)
		}
	}
}

// Decide installs the open windows' rules at CCR-I, the changes since the last decision at
// CCR-U, and removes them with the rest when the quota is used up.
func TestDecideWindows(t *testing.T) {
	p := &subscriber.DataPolicy{Rules: []string{"internet"}, QuotaOctets: 100, ThrottleRule: "slow",
		Windows: []subscriber.RuleWindow{{From: "01:00", To: "07:00", Rules: []string{"night"}}}}
	if d := Decide(p, Initial, Used{}, day(2, 0), day(2, 0)); !slices.Equal(d.Install, []string{"internet", "night"}) {
		t.Errorf("CCR-I in the window installs %v", d.Install)
	}
	if d := Decide(p, Update, Used{}, day(0, 30), day(1, 30)); !slices.Equal(d.Install, []string{"night"}) || len(d.Remove) != 0 {
		t.Errorf("CCR-U as the window opened: +%v -%v", d.Install, d.Remove)
	}
	if d := Decide(p, Update, Used{}, day(6, 30), day(7, 30)); len(d.Install) != 0 || !slices.Equal(d.Remove, []string{"night"}) {
		t.Errorf("CCR-U as the window closed: +%v -%v", d.Install, d.Remove)
	}
	if d := Decide(p, Update, Used{Octets: 100}, day(2, 0), day(2, 30)); !slices.Equal(d.Remove, []string{"internet", "night"}) || !slices.Equal(d.Install, []string{"slow"}) {
		t.Errorf("quota used in the window: +%v -%v", d.Install, d.Remove)
	}
	if len(p.Rules) != 1 {
		t.Errorf("Decide changed the policy's rules: %v", p.Rules)
	}
}
