package radiusd

import (
	"net/netip"
	"sync"
	"time"
)

// RFC 5080 §2.2.2: a request with the same source address and port, code, identifier and
// authenticator as one seen within the window is a retransmission. While the first is in
// flight the copy is dropped; once answered, the copy gets the same reply again without
// being processed twice.
type dupKey struct {
	from netip.AddrPort
	code byte
	id   byte
	auth [16]byte
}

// dupSlot is what a client can have only one request of at a time: a NAS reuses an
// identifier on a source port only once it has given up on the request that held it, so a
// request with another authenticator in a slot replaces the one remembered there (RFC 5080
// §2.2.2). Keyed by slot, the cache holds at most 256 entries per source port and code
// however high the rate: keyed by request it held every request of two windows, at 60k/s a
// map of 600k entries whose lookups missed the CPU caches. No pointers in the key: the
// garbage collector need not scan them.
type dupSlot struct {
	addr [16]byte
	port uint16
	code byte
	id   byte
}

type dupEntry struct {
	auth  [16]byte
	reply []byte // nil while in flight
}

type dupState uint8

const (
	dupNew dupState = iota
	dupInFlight
	dupAnswered
)

const dupShards = 64

// dupCache keeps two generations of entries per shard and rotates them every window, so an
// entry lives between one and two windows and forgetting costs nothing: no sweep walks the
// entries (at 30k requests/s that walk was a visible share of the CPU).
type dupCache struct {
	window time.Duration
	shards [dupShards]dupShard
}

type dupShard struct {
	mu        sync.Mutex
	cur, prev map[dupSlot]dupEntry
	rotated   time.Time
}

// newDupCache returns nil (detection off) for a zero window.
func newDupCache(window time.Duration) *dupCache {
	if window <= 0 {
		return nil
	}
	c := &dupCache{window: window}
	now := time.Now()
	for i := range c.shards {
		c.shards[i].cur = map[dupSlot]dupEntry{}
		c.shards[i].prev = map[dupSlot]dupEntry{}
		c.shards[i].rotated = now
	}
	return c
}

func slotOf(k *dupKey) dupSlot {
	return dupSlot{addr: k.from.Addr().As16(), port: k.from.Port(), code: k.code, id: k.id}
}

func (c *dupCache) shard(s dupSlot) *dupShard {
	return &c.shards[int(s.id^byte(s.port)^s.addr[15])%dupShards]
}

// rotate drops the older generation once a window has passed (sh.mu held).
func (c *dupCache) rotate(sh *dupShard, now time.Time) {
	if now.Sub(sh.rotated) < c.window {
		return
	}
	if now.Sub(sh.rotated) >= 2*c.window {
		clear(sh.prev)
		clear(sh.cur)
	} else {
		sh.prev, sh.cur = sh.cur, sh.prev
		clear(sh.cur)
	}
	sh.rotated = now
}

// lookup returns the entry of s in either generation (sh.mu held).
func (sh *dupShard) lookup(s dupSlot) (dupEntry, bool) {
	if e, ok := sh.cur[s]; ok {
		return e, true
	}
	e, ok := sh.prev[s]
	return e, ok
}

// begin registers k as in flight, or reports that it is a duplicate.
func (c *dupCache) begin(k dupKey, now time.Time) ([]byte, dupState) {
	s := slotOf(&k)
	sh := c.shard(s)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	c.rotate(sh, now)
	if e, ok := sh.lookup(s); ok && e.auth == k.auth {
		if e.reply == nil {
			return nil, dupInFlight
		}
		return e.reply, dupAnswered
	}
	delete(sh.prev, s)
	sh.cur[s] = dupEntry{auth: k.auth}
	return nil, dupNew
}

// finish stores the reply sent for k (in the current generation: it lives a full window),
// unless a newer request took k's slot meanwhile.
func (c *dupCache) finish(k dupKey, reply []byte) {
	if c == nil {
		return
	}
	s := slotOf(&k)
	sh := c.shard(s)
	sh.mu.Lock()
	if e, ok := sh.lookup(s); ok && e.auth == k.auth {
		delete(sh.prev, s)
		sh.cur[s] = dupEntry{auth: k.auth, reply: reply}
	}
	sh.mu.Unlock()
}

// abort forgets k: the request got no reply, so a retransmission must be processed anew.
func (c *dupCache) abort(k dupKey) {
	if c == nil {
		return
	}
	s := slotOf(&k)
	sh := c.shard(s)
	sh.mu.Lock()
	if e, ok := sh.lookup(s); ok && e.auth == k.auth {
		delete(sh.cur, s)
		delete(sh.prev, s)
	}
	sh.mu.Unlock()
}

func (c *dupCache) close() {}
