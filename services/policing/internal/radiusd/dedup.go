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

type dupEntry struct {
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
	cur, prev map[dupKey]dupEntry
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
		c.shards[i].cur = map[dupKey]dupEntry{}
		c.shards[i].prev = map[dupKey]dupEntry{}
		c.shards[i].rotated = now
	}
	return c
}

func (c *dupCache) shard(k dupKey) *dupShard {
	return &c.shards[int(k.auth[0]^k.auth[7]^k.id)%dupShards]
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

// begin registers k as in flight, or reports that it is a duplicate.
func (c *dupCache) begin(k dupKey, now time.Time) ([]byte, dupState) {
	sh := c.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	c.rotate(sh, now)
	e, ok := sh.cur[k]
	if !ok {
		e, ok = sh.prev[k]
	}
	if ok {
		if e.reply == nil {
			return nil, dupInFlight
		}
		return e.reply, dupAnswered
	}
	sh.cur[k] = dupEntry{}
	return nil, dupNew
}

// finish stores the reply sent for k (in the current generation: it lives a full window).
func (c *dupCache) finish(k dupKey, reply []byte) {
	if c == nil {
		return
	}
	sh := c.shard(k)
	sh.mu.Lock()
	delete(sh.prev, k)
	sh.cur[k] = dupEntry{reply: reply}
	sh.mu.Unlock()
}

// abort forgets k: the request got no reply, so a retransmission must be processed anew.
func (c *dupCache) abort(k dupKey) {
	if c == nil {
		return
	}
	sh := c.shard(k)
	sh.mu.Lock()
	delete(sh.cur, k)
	delete(sh.prev, k)
	sh.mu.Unlock()
}

func (c *dupCache) close() {}
