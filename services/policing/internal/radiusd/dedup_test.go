package radiusd

import (
	"net/netip"
	"testing"
	"time"
)

func TestDupCache(t *testing.T) {
	c := newDupCache(time.Second)
	defer c.close()
	k := dupKey{from: netip.MustParseAddrPort("192.0.2.1:1645"), code: 1, id: 7}
	k.auth[0] = 9
	t0 := time.Now()
	if _, st := c.begin(k, t0); st != dupNew {
		t.Fatalf("first: %v", st)
	}
	if _, st := c.begin(k, t0.Add(10*time.Millisecond)); st != dupInFlight {
		t.Fatalf("in flight: %v", st)
	}
	c.finish(k, []byte("reply"))
	if r, st := c.begin(k, time.Now()); st != dupAnswered || string(r) != "reply" {
		t.Fatalf("answered: %v %q", st, r)
	}
	// Past the window the same key is a new request.
	if _, st := c.begin(k, time.Now().Add(3*time.Second)); st != dupNew {
		t.Fatalf("after window: %v", st)
	}
	// Any differing key field is another request.
	for _, k2 := range []dupKey{
		{from: k.from, code: 4, id: k.id, auth: k.auth},
		{from: k.from, code: k.code, id: 8, auth: k.auth},
		{from: netip.MustParseAddrPort("192.0.2.1:1646"), code: k.code, id: k.id, auth: k.auth},
		{from: k.from, code: k.code, id: k.id},
	} {
		if _, st := c.begin(k2, time.Now()); st != dupNew {
			t.Fatalf("%+v: %v", k2, st)
		}
	}
	// abort forgets: the retransmission is processed.
	k3 := dupKey{id: 99}
	c.begin(k3, time.Now())
	c.abort(k3)
	if _, st := c.begin(k3, time.Now()); st != dupNew {
		t.Fatalf("after abort: %v", st)
	}
	// finish of an unknown key is harmless.
	c.finish(dupKey{id: 100}, []byte("x"))
}

func TestDupCacheOff(t *testing.T) {
	var c *dupCache = newDupCache(0)
	if c != nil {
		t.Fatal("window 0 must disable detection")
	}
	// nil-safe methods.
	c.finish(dupKey{}, nil)
	c.abort(dupKey{})
	c.close()
}

// Entries are forgotten after at most two windows (generations rotate every window), and
// kept for at least one.
func TestDupCacheForgets(t *testing.T) {
	c := newDupCache(time.Second)
	k := dupKey{id: 1, auth: [16]byte{1}}
	t0 := time.Now()
	c.begin(k, t0)
	c.finish(k, []byte("r"))
	if _, st := c.begin(k, t0.Add(900*time.Millisecond)); st != dupAnswered {
		t.Fatalf("within the window: %v", st)
	}
	if _, st := c.begin(k, t0.Add(1100*time.Millisecond)); st != dupAnswered {
		t.Fatalf("one rotation later: %v", st)
	}
	if _, st := c.begin(k, t0.Add(3*time.Second)); st != dupNew {
		t.Fatalf("after two windows: %v", st)
	}
	// An in-flight entry is forgotten the same way (a handler that never returned).
	k2 := dupKey{id: 2, auth: [16]byte{2}}
	c.begin(k2, t0.Add(3*time.Second))
	if _, st := c.begin(k2, t0.Add(3500*time.Millisecond)); st != dupInFlight {
		t.Fatalf("in flight: %v", st)
	}
	if _, st := c.begin(k2, t0.Add(6*time.Second)); st != dupNew {
		t.Fatalf("stale in-flight entry survived: %v", st)
	}
}

// A request with another authenticator in a slot (source, code, identifier) is a new one:
// the NAS reused the identifier, so it gave up on the old request. The old request's late
// finish or abort leaves the new one's entry alone.
func TestDupCacheSlotReuse(t *testing.T) {
	c := newDupCache(time.Minute)
	from := netip.MustParseAddrPort("192.0.2.1:1813")
	old := dupKey{from: from, code: 4, id: 3, auth: [16]byte{1}}
	nu := dupKey{from: from, code: 4, id: 3, auth: [16]byte{2}}
	now := time.Now()
	c.begin(old, now)
	if _, st := c.begin(nu, now); st != dupNew {
		t.Fatalf("new authenticator: %v", st)
	}
	c.finish(old, []byte("old reply"))
	if r, st := c.begin(nu, now); st != dupInFlight {
		t.Fatalf("the old request's finish overwrote the new one: %v %q", st, r)
	}
	c.abort(old)
	if _, st := c.begin(nu, now); st != dupInFlight {
		t.Fatalf("the old request's abort forgot the new one: %v", st)
	}
	c.finish(nu, []byte("new reply"))
	if r, st := c.begin(nu, now); st != dupAnswered || string(r) != "new reply" {
		t.Fatalf("answered: %v %q", st, r)
	}
	// The old request is forgotten: a copy of it now is processed as a new request.
	if _, st := c.begin(old, now); st != dupNew {
		t.Fatalf("old after reuse: %v", st)
	}
}

// However many requests a client sends, the cache holds one entry per slot: its size is
// bounded by the clients' identifier spaces, not by the rate.
func TestDupCacheBoundedBySlots(t *testing.T) {
	c := newDupCache(time.Minute)
	now := time.Now()
	for i := range 100_000 {
		k := dupKey{from: netip.MustParseAddrPort("192.0.2.1:1645"), code: 1, id: byte(i)}
		k.auth[0], k.auth[1], k.auth[2] = byte(i), byte(i>>8), byte(i>>16)
		if _, st := c.begin(k, now); st != dupNew {
			t.Fatalf("request %d: %v", i, st)
		}
		c.finish(k, []byte("r"))
	}
	n := 0
	for i := range c.shards {
		n += len(c.shards[i].cur) + len(c.shards[i].prev)
	}
	if n != 256 {
		t.Fatalf("%d entries for 100,000 requests from one source; want 256 (one per identifier)", n)
	}
}
