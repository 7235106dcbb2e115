package luapolicy

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

const samples = "../../../../../config/samples/policy"

// sample loads a shipped example (its selftest runs too) with a clock at hour h.
func sample(t *testing.T, name string, h int) *Engine {
	t.Helper()
	o := options(filepath.Join(samples, name))
	o.Now = func() time.Time { return time.Date(2026, 3, 2, h, 30, 0, 0, time.Local) }
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func TestEverySampleIsTested(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(samples, "*.lua"))
	tested := map[string]bool{"speed-tier.lua": true, "fair-usage.lua": true, "night-boost.lua": true, "blocklist.lua": true}
	if len(files) != len(tested) {
		t.Fatalf("%d samples, %d tested", len(files), len(tested))
	}
	for _, f := range files {
		if !tested[filepath.Base(f)] {
			t.Errorf("%s has no test", f)
		}
	}
}

func TestSampleSpeedTier(t *testing.T) {
	e := sample(t, "speed-tier.lua", 12)
	gold := &subscriber.Subscriber{Username: "alice", Profile: subscriber.Profile{Class: "gold", SessionTimeout: 86400}}
	d := e.Authorize(context.Background(), request(t, "alice"), gold)
	if !d.Accept || replyText(t, d, "Mikrotik-Rate-Limit") != "100M/100M" || replyText(t, d, "Session-Timeout") != "86400" || replyText(t, d, "Acct-Interim-Interval") != "" {
		t.Fatalf("gold: %+v", d)
	}
	other := &subscriber.Subscriber{Username: "bob", Profile: subscriber.Profile{Class: "bronze"}}
	if d := e.Authorize(context.Background(), request(t, "bob"), other); replyText(t, d, "Mikrotik-Rate-Limit") != "1M/1M" {
		t.Fatalf("unknown class: %+v", d)
	}
}

func TestSampleFairUsage(t *testing.T) {
	e := sample(t, "fair-usage.lua", 12)
	rate, _ := dict.Builtin.Lookup("Mikrotik-Rate-Limit")
	interim := func(id string, octets, quota, used uint64) policy.Actions {
		u := &session.Update{Kind: session.KindInterim}
		u.Session.Key = session.Key{NAS: "bng", ID: id}
		u.Session.InputOctets, u.Session.OutputOctets = octets/2, octets-octets/2
		return e.Accounting(context.Background(), request(t, "alice"), u, &subscriber.Subscriber{Username: "alice", Profile: subscriber.Profile{QuotaOctets: quota, UsedOctets: used}})
	}
	if u := interim("a", 49<<30, 0, 0); u.CoA != nil {
		t.Fatalf("49 GiB of 50: CoA %v", u.CoA)
	}
	u := interim("a", 50<<30+1, 0, 0)
	if v, ok := rate.Find(u.CoA); !ok || string(v) != "1M/1M" {
		t.Fatalf("50 GiB: CoA %v", u.CoA)
	}
	if u := interim("b", 3<<30, 2<<30, 0); u.CoA == nil {
		t.Fatal("profile quota of 2 GiB not applied")
	}
	// The billing period: 45 GiB before this session, 5 in it.
	if u := interim("c", 4<<30, 0, 45<<30); u.CoA != nil {
		t.Fatalf("49 GiB of the period's 50: CoA %v", u.CoA)
	}
	if u := interim("c", 5<<30, 0, 45<<30); u.CoA == nil {
		t.Fatal("the period's 50 GiB used (45 before, 5 now): no CoA")
	}
}

func TestSampleNightBoost(t *testing.T) {
	gold := &subscriber.Subscriber{Username: "alice", Profile: subscriber.Profile{Class: "gold"}}
	for h, want := range map[int]string{3: "300M/300M", 0: "100M/100M", 7: "100M/100M", 6: "300M/300M"} {
		e := sample(t, "night-boost.lua", h)
		if d := e.Authorize(context.Background(), request(t, "alice"), gold); replyText(t, d, "Mikrotik-Rate-Limit") != want {
			t.Errorf("hour %d: %+v, want %s", h, d, want)
		}
	}
}

func TestSampleBlocklist(t *testing.T) {
	e := sample(t, "blocklist.lua", 12)
	s := &subscriber.Subscriber{Username: "alice", Profile: subscriber.Profile{RateLimit: "20M/20M"}}
	if d := e.Authorize(context.Background(), request(t, "alice", "Calling-Station-Id", "02-00-5e-10-00-02"), s); d.Accept || d.Reason != "Calling-Station-Id blocklisted" {
		t.Fatalf("blocklisted: %+v", d)
	}
	if d := e.Authorize(context.Background(), request(t, "alice", "Calling-Station-Id", "02-00-5e-10-00-03"), s); !d.Accept || replyText(t, d, "Mikrotik-Rate-Limit") != "20M/20M" {
		t.Fatalf("not blocklisted: %+v", d)
	}
}
