package engine

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openaaa/openaaa/services/loadgen/internal/packet"
	"github.com/openaaa/openaaa/services/loadgen/internal/population"
	"github.com/openaaa/openaaa/services/loadgen/internal/responder"
)

var secret = []byte("s3cret")

// dropInterims makes srv leave every Interim-Update unanswered: sessions held open whose
// interims time out.
func dropInterims(srv *responder.Responder) {
	srv.Configure(func(r *responder.Responder) {
		r.Drop = func(r responder.Request, n int) bool { return r.StatusType == packet.AcctInterim }
	})
}

func newResponder(t *testing.T, pop *population.Population) *responder.Responder {
	t.Helper()
	r := &responder.Responder{Secret: secret, Passwords: map[string]string{}}
	for _, u := range pop.Users {
		r.Passwords[u.Name] = u.Password
	}
	r.FramedIP = func(user string) [4]byte { return [4]byte{100, 64, 0, byte(len(user))} }
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func pop(t *testing.T, n int) *population.Population {
	t.Helper()
	p, err := population.Pattern(n, "user%03d", "pass%03d", "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func target(r *responder.Responder, name string) Target {
	return Target{Name: name, Auth: r.AuthAddr(), Acct: r.AcctAddr()}
}

func baseConfig(p *population.Population, targets ...Target) Config {
	return Config{
		Targets: targets, Secret: secret, Mode: ModeFlow, Auth: PAP, Interims: 2,
		Concurrency: 1, Duration: 30 * time.Second, MaxMessages: 1000, MaxSessions: 3,
		Timeout: 2 * time.Second, Retries: 2, RequireReplyMA: true, Population: p,
		NASIP: [4]byte{127, 0, 0, 1}, NASIdentifier: "test", Seed: 1,
	}
}

func runOnce(t *testing.T, cfg Config) *Result {
	t.Helper()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) observe(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func TestFlowOrder(t *testing.T) {
	p := pop(t, 10)
	srv := newResponder(t, p)
	cfg := baseConfig(p, target(srv, "dc1"))
	res := runOnce(t, cfg)

	reqs := srv.Requests()
	want := []uint32{0, 1, 3, 3, 2} // auth, start, interim ×2, stop
	if len(reqs) != 3*len(want) {
		t.Fatalf("got %d requests, want %d: %+v", len(reqs), 3*len(want), reqs)
	}
	ids := map[string]bool{}
	for s := 0; s < 3; s++ {
		user := fmt.Sprintf("user%03d", s+1)
		sess := reqs[s*len(want) : (s+1)*len(want)]
		for i, r := range sess {
			if r.Error != "" {
				t.Fatalf("session %d message %d: responder: %s", s, i, r.Error)
			}
			if r.User != user {
				t.Errorf("session %d message %d: user %q, want %q", s, i, r.User, user)
			}
			if i == 0 {
				if r.Port != "auth" || r.Code != packet.CodeAccessRequest {
					t.Fatalf("session %d starts with %s code %d, want Access-Request", s, r.Port, r.Code)
				}
				continue
			}
			if r.Port != "acct" || r.StatusType != want[i] {
				t.Errorf("session %d message %d: %s status %d, want acct status %d", s, i, r.Port, r.StatusType, want[i])
			}
			// Framed-IP comes from the Access-Accept, not from the population.
			if wantIP := [4]byte{100, 64, 0, byte(len(user))}; r.FramedIP != wantIP {
				t.Errorf("session %d message %d: Framed-IP %v, want %v from the Accept", s, i, r.FramedIP, wantIP)
			}
			if r.SessionID != sess[1].SessionID {
				t.Errorf("session %d: Acct-Session-Id changed within the session", s)
			}
			if i > 2 && r.OutOctets <= sess[i-1].OutOctets {
				t.Errorf("session %d message %d: output octets did not grow", s, i)
			}
		}
		if ids[sess[1].SessionID] {
			t.Errorf("Acct-Session-Id %s reused", sess[1].SessionID)
		}
		ids[sess[1].SessionID] = true
	}
	if res.Sent != 15 || res.Answered != 15 || res.Accepts != 3 || res.AcctResponses != 12 {
		t.Errorf("counts: %+v", res)
	}
	if res.Sessions != 3 || res.SessionsDone != 3 || res.Timeouts+res.Errors+res.Retransmissions != 0 {
		t.Errorf("sessions %d done %d timeouts %d errors %d retrans %d", res.Sessions, res.SessionsDone, res.Timeouts, res.Errors, res.Retransmissions)
	}
	if got := res.Latency[KindInterim].Count(); got != 6 {
		t.Errorf("interim latency samples %d, want 6", got)
	}
}

func TestGigawords(t *testing.T) {
	p := pop(t, 1)
	srv := newResponder(t, p)
	cfg := baseConfig(p, target(srv, "dc1"))
	cfg.Interims, cfg.MaxSessions = 5, 1
	runOnce(t, cfg)
	reqs := srv.Requests()
	stop := reqs[len(reqs)-1]
	if stop.StatusType != packet.AcctStop {
		t.Fatalf("last message status %d, want Stop", stop.StatusType)
	}
	if stop.OutGigawords == 0 || stop.OutOctets <= 4<<30 {
		t.Errorf("Stop output %d octets (gigawords %d): want past 4 GiB", stop.OutOctets, stop.OutGigawords)
	}
}

func TestRejectEndsSession(t *testing.T) {
	p := pop(t, 2)
	srv := newResponder(t, p)
	srv.Configure(func(r *responder.Responder) { r.Passwords["user001"] = "other" })
	cfg := baseConfig(p, target(srv, "dc1"))
	cfg.MaxSessions = 2
	res := runOnce(t, cfg)
	if res.Rejects != 1 || res.Accepts != 1 || res.Sent != 1+5 {
		t.Fatalf("rejects %d accepts %d sent %d; want 1, 1, 6", res.Rejects, res.Accepts, res.Sent)
	}
	if r := srv.Requests()[1]; r.Port != "auth" || r.User != "user002" {
		t.Errorf("after a reject the next message is %s for %s, want the next user's Access-Request", r.Port, r.User)
	}
}

func TestCHAP(t *testing.T) {
	p := pop(t, 3)
	srv := newResponder(t, p)
	cfg := baseConfig(p, target(srv, "dc1"))
	cfg.Auth, cfg.Mode = CHAP, ModeAuth
	res := runOnce(t, cfg)
	if res.Accepts != 3 || res.Rejects != 0 {
		t.Fatalf("CHAP: accepts %d rejects %d errors %v", res.Accepts, res.Rejects, srv.Requests())
	}
}

func TestModes(t *testing.T) {
	p := pop(t, 3)
	srv := newResponder(t, p)
	cfg := baseConfig(p, target(srv, "dc1"))
	cfg.Mode = ModeAcct
	res := runOnce(t, cfg)
	reqs := srv.Requests()
	if res.Sent != 12 || len(reqs) != 12 {
		t.Fatalf("acct mode: sent %d", res.Sent)
	}
	for _, r := range reqs {
		if r.Port != "acct" {
			t.Fatalf("acct mode sent to %s", r.Port)
		}
	}
	// Accounting-only takes the Framed-IP from the population.
	if reqs[0].FramedIP != [4]byte{10, 0, 0, 1} {
		t.Errorf("acct mode Framed-IP %v, want the population's 10.0.0.1", reqs[0].FramedIP)
	}
}

// Round-robin: each message of a session goes to the next target, and sessions start one
// target further, so that every target sees every message kind.
func TestRoundRobin(t *testing.T) {
	p := pop(t, 10)
	a, b := newResponder(t, p), newResponder(t, p)
	cfg := baseConfig(p, target(a, "dc1"), target(b, "dc2"))
	rec := &recorder{}
	cfg.Observe = rec.observe
	res := runOnce(t, cfg)
	if res.Answered != 15 || res.Errors != 0 {
		t.Fatalf("answered %d errors %d", res.Answered, res.Errors)
	}
	for i, e := range rec.events {
		if want := (i/5 + e.Index) % 2; e.Target != want {
			t.Errorf("event %d (session %s message %d): target %d, want %d", i, e.SessionID, e.Index, e.Target, want)
		}
		if i > 0 && rec.events[i-1].SessionID == e.SessionID && rec.events[i-1].Target == e.Target {
			t.Errorf("event %d: two consecutive messages of a session on one target", i)
		}
	}
	if got := []uint64{uint64(len(a.Requests())), uint64(len(b.Requests()))}; got[0] != res.PerTarget[0] || got[1] != res.PerTarget[1] || got[0]+got[1] != 15 {
		t.Errorf("per target: responders saw %v, report says %v", got, res.PerTarget)
	}
	// The Interim sent to dc2 belongs to a session whose Start went to dc1.
	starts := map[string]bool{}
	for _, r := range a.Requests() {
		if r.StatusType == packet.AcctStart {
			starts[r.SessionID] = true
		}
	}
	crossed := false
	for _, r := range b.Requests() {
		if r.StatusType == packet.AcctInterim && starts[r.SessionID] {
			crossed = true
		}
	}
	if !crossed {
		t.Error("no session crossed DCs between Start and Interim")
	}
}

func TestSticky(t *testing.T) {
	p := pop(t, 10)
	a, b := newResponder(t, p), newResponder(t, p)
	cfg := baseConfig(p, target(a, "dc1"), target(b, "dc2"))
	cfg.Distribution = Sticky
	cfg.MaxSessions = 4
	rec := &recorder{}
	cfg.Observe = rec.observe
	runOnce(t, cfg)
	for i, e := range rec.events {
		if want := (i / 5) % 2; e.Target != want {
			t.Errorf("event %d: target %d, want %d (sticky)", i, e.Target, want)
		}
	}
	if len(a.Requests()) != 10 || len(b.Requests()) != 10 {
		t.Errorf("sticky: %d and %d messages, want 10 and 10", len(a.Requests()), len(b.Requests()))
	}
}

func TestCountBound(t *testing.T) {
	p := pop(t, 10)
	srv := newResponder(t, p)
	cfg := baseConfig(p, target(srv, "dc1"))
	cfg.MaxSessions, cfg.MaxMessages, cfg.Concurrency = 0, 37, 4
	res := runOnce(t, cfg)
	if res.Sent != 37 || res.Answered != 37 {
		t.Fatalf("sent %d answered %d, want 37", res.Sent, res.Answered)
	}
}

func TestRetransmissionAndTimeout(t *testing.T) {
	p := pop(t, 10)
	srv := newResponder(t, p)
	// Drop the first transmission of every request: each is answered after one retransmission.
	srv.Configure(func(r *responder.Responder) { r.Drop = func(r responder.Request, n int) bool { return n == 1 } })
	cfg := baseConfig(p, target(srv, "dc1"))
	// The timeout only has to outlast one loopback round trip, even on a loaded machine.
	cfg.Mode, cfg.Timeout, cfg.Retries = ModeAuth, 500*time.Millisecond, 3
	res := runOnce(t, cfg)
	if res.Answered != 3 || res.Retransmissions != 3 || res.Timeouts != 0 {
		t.Fatalf("answered %d retransmissions %d timeouts %d; want 3, 3, 0", res.Answered, res.Retransmissions, res.Timeouts)
	}
	// Never answer: every request times out after its retries.
	srv.Configure(func(r *responder.Responder) { r.Drop = func(responder.Request, int) bool { return true } })
	cfg.Timeout, cfg.Retries = 20*time.Millisecond, 1
	res = runOnce(t, cfg)
	if res.Answered != 0 || res.Timeouts != 3 || res.Retransmissions != 3 {
		t.Fatalf("answered %d timeouts %d retransmissions %d; want 0, 3, 3", res.Answered, res.Timeouts, res.Retransmissions)
	}
}

func TestReplyMessageAuthenticator(t *testing.T) {
	p := pop(t, 10)
	srv := newResponder(t, p)
	srv.Configure(func(r *responder.Responder) { r.CorruptMA = true })
	cfg := baseConfig(p, target(srv, "dc1"))
	cfg.Mode = ModeAuth
	res := runOnce(t, cfg)
	if res.Errors != 3 || res.Answered != 0 {
		t.Fatalf("corrupt MA: errors %d answered %d", res.Errors, res.Answered)
	}
	for k := range res.ErrorSamples {
		if !strings.Contains(k, "Message-Authenticator") {
			t.Errorf("error %q", k)
		}
	}
	srv.Configure(func(r *responder.Responder) { r.CorruptMA, r.NoMA = false, true })
	if res = runOnce(t, cfg); res.Errors != 3 {
		t.Fatalf("missing MA with RequireReplyMA: errors %d, want 3", res.Errors)
	}
	cfg.RequireReplyMA = false
	if res = runOnce(t, cfg); res.Errors != 0 || res.Answered != 3 {
		t.Fatalf("missing MA allowed: errors %d answered %d", res.Errors, res.Answered)
	}
}

func TestOpenLoop(t *testing.T) {
	p := pop(t, 10)
	srv := newResponder(t, p)
	cfg := baseConfig(p, target(srv, "dc1"))
	cfg.Rate, cfg.MaxMessages, cfg.MaxSessions, cfg.Concurrency = 2000, 40, 0, 8
	res := runOnce(t, cfg)
	if res.Offered != 40 || res.Sent+res.Unsent != 40 || res.Answered != res.Sent {
		t.Fatalf("offered %d sent %d unsent %d answered %d", res.Offered, res.Sent, res.Unsent, res.Answered)
	}
}

func TestSlotTime(t *testing.T) {
	if got := slotTime(100, 100, 0); got != time.Second {
		t.Errorf("slot 100 at 100/s: %v", got)
	}
	// With a 2 s ramp to 100/s, 100 messages are due in the ramp (λR/2) and the 100th at 2 s.
	if got := slotTime(100, 100, 2*time.Second); got != 2*time.Second {
		t.Errorf("ramp: slot 100 at %v, want 2s", got)
	}
	if got := slotTime(25, 100, 2*time.Second); got != time.Second {
		t.Errorf("ramp: slot 25 at %v, want 1s", got)
	}
}

func TestSlotsDue(t *testing.T) {
	for _, tc := range []struct {
		i    uint64
		rate float64
		ramp time.Duration
	}{{100, 100, 0}, {25, 100, 2 * time.Second}, {100, 100, 2 * time.Second}, {1000, 333, time.Second}} {
		at := slotTime(tc.i, tc.rate, tc.ramp)
		// Slots 0..i are due at slotTime(i): i+1 of them (floating point may round one down).
		if got := slotsDue(at+time.Microsecond, tc.rate, tc.ramp, 1<<40); got != tc.i+1 {
			t.Errorf("slotsDue(slotTime(%d)) = %d", tc.i, got)
		}
	}
	if got := slotsDue(time.Hour, 100, 0, 50); got != 50 {
		t.Errorf("limit: %d", got)
	}
}

func TestValidate(t *testing.T) {
	p := pop(t, 1)
	for name, mut := range map[string]func(*Config){
		"no duration": func(c *Config) { c.Duration = 0 },
		"no count":    func(c *Config) { c.MaxMessages = 0 },
		"no target":   func(c *Config) { c.Targets = nil },
		"eap open loop": func(c *Config) {
			c.Auth, c.EAPTLS, c.Rate = EAPTLS, &tls.Config{}, 10
		},
		"eap without tls": func(c *Config) { c.Auth = PEAPMSCHAPv2 },
	} {
		cfg := baseConfig(p, Target{Name: "x", Auth: "127.0.0.1:1", Acct: "127.0.0.1:2"})
		mut(&cfg)
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Open loop against a server that drops every Interim-Update: the interims time out, the
// sessions still go on to Stop, and nothing is retransmitted.
func TestOpenLoopTimeouts(t *testing.T) {
	p := pop(t, 10)
	srv := newResponder(t, p)
	dropInterims(srv)
	cfg := baseConfig(p, target(srv, "dc1"))
	// The timeout must outlast a loopback round trip on a loaded machine (30 ms did not, once,
	// in a cold make test at a load of 80): the answered ones are asserted.
	cfg.Rate, cfg.MaxMessages, cfg.MaxSessions, cfg.Concurrency, cfg.Timeout = 5000, 1<<40, 4, 4, 300*time.Millisecond
	res := runOnce(t, cfg)
	// 4 sessions × (auth, start, 2 interims, stop).
	if res.Sent != 20 || res.Answered != 12 || res.Timeouts != 8 || res.SessionsDone != 4 || res.Retransmissions != 0 {
		t.Fatalf("sent %d answered %d timeouts %d done %d retrans %d", res.Sent, res.Answered, res.Timeouts, res.SessionsDone, res.Retransmissions)
	}
	if got := res.Latency[KindStop].Count(); got != 4 {
		t.Errorf("stop latencies %d", got)
	}
}

// overlaps lists the requests that began a session for a user whose previous session the
// server had not yet seen stopped: a real subscriber line has one session at a time.
func overlaps(reqs []responder.Request) []string {
	type line struct {
		open bool
		id   string // Acct-Session-Id of the open session ("" until its first accounting)
	}
	lines := map[string]*line{}
	var bad []string
	for i, r := range reqs {
		l := lines[r.User]
		if l == nil {
			l = &line{}
			lines[r.User] = l
		}
		switch {
		case r.Port == "auth":
			if l.open {
				bad = append(bad, fmt.Sprintf("#%d Access-Request of %s during session %q", i, r.User, l.id))
			}
			l.open, l.id = true, ""
		case l.open && l.id != "" && l.id != r.SessionID:
			bad = append(bad, fmt.Sprintf("#%d session %s of %s during session %s", i, r.SessionID, r.User, l.id))
		default:
			l.open, l.id = true, r.SessionID
		}
		if r.StatusType == packet.AcctStop {
			l.open = false
		}
	}
	return bad
}

// More workers than subscribers: a worker waits for a subscriber to end its session instead
// of starting a second session of the same user.
func TestClosedLoopOneSessionPerUser(t *testing.T) {
	p := pop(t, 2)
	srv := newResponder(t, p)
	cfg := baseConfig(p, target(srv, "dc1"))
	cfg.Concurrency, cfg.MaxSessions = 4, 12
	res := runOnce(t, cfg)
	if bad := overlaps(srv.Requests()); len(bad) > 0 {
		t.Fatalf("%d overlapping sessions, e.g. %s", len(bad), bad[0])
	}
	if res.Sessions != 12 || res.SessionsDone != 12 || res.Answered != 12*5 {
		t.Fatalf("sessions %d done %d answered %d; want 12, 12, 60", res.Sessions, res.SessionsDone, res.Answered)
	}
}

// Open loop with more sessions allowed in progress than subscribers, and sessions held open
// by unanswered Interims: a message that would need a new session while every subscriber is
// in one is not sent (counted as never sent), rather than starting a second session of a user.
func TestOpenLoopOneSessionPerUser(t *testing.T) {
	p := pop(t, 3)
	srv := newResponder(t, p)
	dropInterims(srv)
	cfg := baseConfig(p, target(srv, "dc1"))
	cfg.Rate, cfg.MaxMessages, cfg.MaxSessions, cfg.Concurrency, cfg.Timeout = 2000, 200, 0, 16, 50*time.Millisecond
	res := runOnce(t, cfg)
	if bad := overlaps(srv.Requests()); len(bad) > 0 {
		t.Fatalf("%d overlapping sessions, e.g. %s", len(bad), bad[0])
	}
	if res.Offered != 200 || res.Sent+res.Unsent != 200 || res.Unsent == 0 || res.Sessions < 3 {
		t.Fatalf("offered %d sent %d unsent %d sessions %d", res.Offered, res.Sent, res.Unsent, res.Sessions)
	}
}

// TestPerTarget: each target's share (answers, timeouts, latency counts) matches what that
// target's responder saw, closed and open loop; dc2 never answers accounting.
func TestPerTarget(t *testing.T) {
	for _, open := range []bool{false, true} {
		t.Run(fmt.Sprintf("open=%v", open), func(t *testing.T) {
			p := pop(t, 10)
			a, b := newResponder(t, p), newResponder(t, p)
			b.Configure(func(r *responder.Responder) {
				r.Drop = func(r responder.Request, n int) bool { return r.Port == "acct" }
			})
			cfg := baseConfig(p, target(a, "dc1"), target(b, "dc2"))
			// dc1 must answer everything within the timeout, also on a loaded machine (30 ms did
			// not, once, in a cold make test at a load of 80).
			cfg.Timeout, cfg.Retries, cfg.MaxSessions, cfg.Concurrency = 300*time.Millisecond, 0, 4, 1
			if open {
				cfg.Rate, cfg.MaxMessages = 5000, 1<<40
			}
			res := runOnce(t, cfg)
			if len(res.Targets) != 2 {
				t.Fatalf("%d target results", len(res.Targets))
			}
			var answered, timeouts uint64
			for i, r := range []*responder.Responder{a, b} {
				tr := res.Targets[i]
				acct := 0
				for _, q := range r.Requests() {
					if q.Port == "acct" {
						acct++
					}
				}
				seen := uint64(len(r.Requests()))
				if seen != res.PerTarget[i] {
					t.Errorf("target %d: responder saw %d, sent %d", i, seen, res.PerTarget[i])
				}
				if got := tr.Auth.Count() + tr.Acct.Count(); got != tr.Answered {
					t.Errorf("target %d: %d latencies for %d answers", i, got, tr.Answered)
				}
				if i == 0 && (tr.Answered != seen || tr.Timeouts != 0 || tr.Acct.Count() != uint64(acct)) {
					t.Errorf("dc1: answered %d timeouts %d acct %d; responder saw %d (%d acct)", tr.Answered, tr.Timeouts, tr.Acct.Count(), seen, acct)
				}
				if i == 1 && (tr.Acct.Count() != 0 || tr.Timeouts != uint64(acct) || acct == 0) {
					t.Errorf("dc2: acct answered %d timeouts %d; responder dropped %d acct", tr.Acct.Count(), tr.Timeouts, acct)
				}
				answered += tr.Answered
				timeouts += tr.Timeouts
			}
			if answered != res.Answered || timeouts != res.Timeouts {
				t.Errorf("per target sums %d answered %d timeouts; run %d, %d", answered, timeouts, res.Answered, res.Timeouts)
			}
		})
	}
}
