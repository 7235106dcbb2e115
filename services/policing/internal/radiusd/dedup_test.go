package radiusd

import (
	"net/netip"
	"testing"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/dedup"
)

// begin, finish and abort are the server's calls for the request k.
func begin(c *dupCache, k dupKey, now time.Time) ([]byte, dedup.State) {
	return c.Begin(k.slot(), k.auth, now)
}

func finish(c *dupCache, k dupKey, reply []byte) { c.Finish(k.slot(), k.auth, reply, time.Now()) }

func abort(c *dupCache, k dupKey) { c.Abort(k.slot(), k.auth) }

func TestDupCache(t *testing.T) {
	c := newDupCache(time.Second)
	k := dupKey{from: netip.MustParseAddrPort("192.0.2.1:1645"), code: 1, id: 7}
	k.auth[0] = 9
	t0 := time.Now()
	if _, st := begin(c, k, t0); st != dedup.Unseen {
		t.Fatalf("first: %v", st)
	}
	if _, st := begin(c, k, t0.Add(10*time.Millisecond)); st != dedup.InFlight {
		t.Fatalf("in flight: %v", st)
	}
	finish(c, k, []byte("reply"))
	if r, st := begin(c, k, time.Now()); st != dedup.Answered || string(r) != "reply" {
		t.Fatalf("answered: %v %q", st, r)
	}
	// Past the window the same key is a new request.
	if _, st := begin(c, k, time.Now().Add(3*time.Second)); st != dedup.Unseen {
		t.Fatalf("after window: %v", st)
	}
	// Any differing key field is another request.
	for _, k2 := range []dupKey{
		{from: k.from, code: 4, id: k.id, auth: k.auth},
		{from: k.from, code: k.code, id: 8, auth: k.auth},
		{from: netip.MustParseAddrPort("192.0.2.1:1646"), code: k.code, id: k.id, auth: k.auth},
		{from: k.from, code: k.code, id: k.id},
	} {
		if _, st := begin(c, k2, time.Now()); st != dedup.Unseen {
			t.Fatalf("%+v: %v", k2, st)
		}
	}
	// abort forgets: the retransmission is processed.
	k3 := dupKey{id: 99}
	begin(c, k3, time.Now())
	abort(c, k3)
	if _, st := begin(c, k3, time.Now()); st != dedup.Unseen {
		t.Fatalf("after abort: %v", st)
	}
	// finish of an unknown key is harmless.
	finish(c, dupKey{id: 100}, []byte("x"))
}

func TestDupCacheOff(t *testing.T) {
	var c *dupCache = newDupCache(0)
	if c != nil {
		t.Fatal("window 0 must disable detection")
	}
	// nil-safe methods.
	finish(c, dupKey{}, nil)
	abort(c, dupKey{})
}

// Entries are forgotten after at most two windows (generations rotate every window), and
// kept for at least one.
func TestDupCacheForgets(t *testing.T) {
	c := newDupCache(time.Second)
	k := dupKey{id: 1, auth: [16]byte{1}}
	t0 := time.Now()
	begin(c, k, t0)
	finish(c, k, []byte("r"))
	if _, st := begin(c, k, t0.Add(900*time.Millisecond)); st != dedup.Answered {
		t.Fatalf("within the window: %v", st)
	}
	if _, st := begin(c, k, t0.Add(1100*time.Millisecond)); st != dedup.Answered {
		t.Fatalf("one rotation later: %v", st)
	}
	if _, st := begin(c, k, t0.Add(3*time.Second)); st != dedup.Unseen {
		t.Fatalf("after two windows: %v", st)
	}
	// An in-flight entry is forgotten the same way (a handler that never returned).
	k2 := dupKey{id: 2, auth: [16]byte{2}}
	begin(c, k2, t0.Add(3*time.Second))
	if _, st := begin(c, k2, t0.Add(3500*time.Millisecond)); st != dedup.InFlight {
		t.Fatalf("in flight: %v", st)
	}
	if _, st := begin(c, k2, t0.Add(6*time.Second)); st != dedup.Unseen {
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
	begin(c, old, now)
	if _, st := begin(c, nu, now); st != dedup.Unseen {
		t.Fatalf("new authenticator: %v", st)
	}
	finish(c, old, []byte("old reply"))
	if r, st := begin(c, nu, now); st != dedup.InFlight {
		t.Fatalf("the old request's finish overwrote the new one: %v %q", st, r)
	}
	abort(c, old)
	if _, st := begin(c, nu, now); st != dedup.InFlight {
		t.Fatalf("the old request's abort forgot the new one: %v", st)
	}
	finish(c, nu, []byte("new reply"))
	if r, st := begin(c, nu, now); st != dedup.Answered || string(r) != "new reply" {
		t.Fatalf("answered: %v %q", st, r)
	}
	// The old request is forgotten: a copy of it now is processed as a new request.
	if _, st := begin(c, old, now); st != dedup.Unseen {
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
		if _, st := begin(c, k, now); st != dedup.Unseen {
			t.Fatalf("request %d: %v", i, st)
		}
		finish(c, k, []byte("r"))
	}
	if n := c.Len(); n != 256 {
		t.Fatalf("%d entries for 100,000 requests from one source; want 256 (one per identifier)", n)
	}
}
