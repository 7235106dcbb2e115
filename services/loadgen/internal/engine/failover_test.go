package engine

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openaaa/openaaa/services/loadgen/internal/responder"
)

// A NAS with failover loses one retransmission window to a dead server: the first request
// sent to it times out once and is answered by the next server, and the requests after it
// skip the dead server for the hold-down. No request fails, so the timeline has no gap.
func TestFailoverSkipsADeadTarget(t *testing.T) {
	p := pop(t, 10)
	a, b := newResponder(t, p), newResponder(t, p)
	b.Configure(func(r *responder.Responder) { r.Drop = func(responder.Request, int) bool { return true } })
	cfg := baseConfig(p, target(a, "dc1"), target(b, "dc2"))
	cfg.Failover, cfg.HoldDown = true, time.Hour
	cfg.Timeout, cfg.Retries, cfg.MaxSessions, cfg.TrackAcked = 100*time.Millisecond, 1, 4, true
	res := runOnce(t, cfg)
	want := uint64(4 * (cfg.Interims + 3))
	if res.Answered != want || res.Timeouts != 0 || res.Retransmissions != 1 {
		t.Fatalf("answered %d (want %d), timeouts %d, retransmissions %d (want 1)", res.Answered, want, res.Timeouts, res.Retransmissions)
	}
	if n := len(b.Requests()); n != 1 {
		t.Errorf("the dead target got %d requests, want 1 (then skipped)", n)
	}
	if res.Targets[0].Answered != want || res.Targets[1].Answered != 0 {
		t.Errorf("answered per target %d, %d: the live one answers all", res.Targets[0].Answered, res.Targets[1].Answered)
	}
	var answered, failed, retrans uint64
	for _, s := range res.Timeline {
		answered, failed, retrans = answered+s.Answered, failed+s.Failed, retrans+s.Retransmissions
	}
	if answered != want || failed != 0 || retrans != 1 {
		t.Errorf("timeline: %d answered, %d failed, %d retransmissions", answered, failed, retrans)
	}
	// Every accounting record answered is listed under its session: start, interims, stop.
	if len(res.Acked) != 4 {
		t.Fatalf("%d acknowledged sessions, want 4", len(res.Acked))
	}
	for _, s := range res.Acked {
		if s.Starts != 1 || s.Interims != uint32(cfg.Interims) || s.Stops != 1 || s.ID == "" {
			t.Errorf("acknowledged session %+v", s)
		}
	}
}

// Without failover every transmission goes to the request's own target: requests to a dead
// server fail, and the seconds they fail in are the NAS-visible gap.
func TestNoFailoverTimeline(t *testing.T) {
	p := pop(t, 10)
	a, b := newResponder(t, p), newResponder(t, p)
	b.Configure(func(r *responder.Responder) { r.Drop = func(responder.Request, int) bool { return true } })
	cfg := baseConfig(p, target(a, "dc1"), target(b, "dc2"))
	cfg.Mode, cfg.Timeout, cfg.Retries, cfg.MaxSessions = ModeAuth, 20*time.Millisecond, 1, 4
	res := runOnce(t, cfg)
	if res.Answered != 2 || res.Timeouts != 2 || res.Retransmissions != 2 || len(b.Requests()) != 2 {
		t.Fatalf("answered %d timeouts %d retransmissions %d, dead target saw %d requests; want 2, 2, 2, 2",
			res.Answered, res.Timeouts, res.Retransmissions, len(b.Requests()))
	}
	var failed uint64
	for _, s := range res.Timeline {
		failed += s.Failed
	}
	if failed != 2 || len(res.Timeline) == 0 {
		t.Errorf("timeline %+v: want 2 failed", res.Timeline)
	}
	if res.Acked != nil {
		t.Errorf("acknowledged records listed without TrackAcked: %v", res.Acked)
	}
}

// A dead target is probed by exactly one request once its hold-down is over; it is alive
// again when it answers.
func TestHealthProbe(t *testing.T) {
	h := newHealth(3, 50*time.Millisecond, time.Now())
	if got := h.pick(1); got != 1 {
		t.Fatalf("pick(1) = %d with every target alive", got)
	}
	h.failed(1)
	if got := h.pick(1); got != 2 {
		t.Fatalf("pick(1) = %d, want 2 (1 dead)", got)
	}
	h.failed(0)
	h.failed(2)
	if got := h.pick(2); got != 2 {
		t.Fatalf("pick(2) = %d with every target dead, want 2 itself", got)
	}
	time.Sleep(60 * time.Millisecond)
	var probes atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if h.usable(1) {
				probes.Add(1)
			}
		})
	}
	wg.Wait()
	if n := probes.Load(); n != 1 {
		t.Fatalf("%d probes of target 1 after its hold-down, want 1", n)
	}
	h.answered(1)
	for range 2 { // alive: usable by every caller, not only a probe
		if !h.usable(1) {
			t.Fatal("target 1 answered but is not usable")
		}
	}
}

func TestValidateFailover(t *testing.T) {
	p := pop(t, 1)
	for name, mut := range map[string]func(*Config){
		"failover, open loop":  func(c *Config) { c.Failover, c.HoldDown, c.Rate = true, time.Second, 100 },
		"acked, open loop":     func(c *Config) { c.TrackAcked, c.Rate = true, 100 },
		"failover, no holdown": func(c *Config) { c.Failover = true },
	} {
		cfg := baseConfig(p, Target{Name: "x", Auth: "127.0.0.1:1", Acct: "127.0.0.1:2"})
		mut(&cfg)
		if err := validate(&cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// A server whose port is closed (ICMP port unreachable: connection refused) is failed over
// like a silent one.
func TestFailoverOnRefused(t *testing.T) {
	p := pop(t, 10)
	a, b := newResponder(t, p), newResponder(t, p)
	cfg := baseConfig(p, target(a, "dc1"), target(b, "dc2"))
	b.Close()
	cfg.Failover, cfg.HoldDown = true, time.Hour
	cfg.Timeout, cfg.Retries, cfg.MaxSessions = 2*time.Second, 1, 4
	res := runOnce(t, cfg)
	want := uint64(4 * (cfg.Interims + 3))
	if res.Answered != want || res.Errors != 0 || res.Timeouts != 0 {
		t.Fatalf("answered %d (want %d), errors %d %v, timeouts %d", res.Answered, want, res.Errors, res.ErrorSamples, res.Timeouts)
	}
	// Without failover the refusal is an error, as before.
	cfg.Failover = false
	if res := runOnce(t, cfg); res.Errors == 0 {
		t.Fatalf("no error without failover: %+v", res.ErrorSamples)
	}
}
