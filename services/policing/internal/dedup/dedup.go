// Package dedup is the duplicate-request cache of the policing servers, RADIUS's and
// Diameter's: the answers of recent requests, so that a retransmission is answered again
// without being processed twice. What makes two requests the same is each protocol's, and a
// parameter here: RADIUS's slot is the source address and port, code and identifier, told
// apart by the authenticator (RFC 5080 §2.2.2); Diameter's is the Origin-Host and
// End-to-End-Id, with the Session-Id (RFC 6733 §6.2).
package dedup

import (
	"sync"
	"time"
)

// Options are what each protocol needs of the cache.
type Options[S comparable] struct {
	// Window rotates a shard's two generations: an entry lives between one and two windows,
	// and forgetting costs nothing, no sweep walking the entries (at 30k requests/s that walk
	// was a visible share of the CPU). 0: rotated by Size only.
	Window time.Duration
	// Size rotates a shard's generations once the newer holds Size entries: a shard holds the
	// Size most recent ones at least and 2×Size at most. 0: rotated by Window only.
	Size int
	// TTL: an answer older than it is not given (0: any answer held).
	TTL time.Duration
	// InFlight: Begin remembers a request as being processed, and a copy arriving meanwhile
	// is reported InFlight (RADIUS drops it). Without it a copy is processed again and
	// only Finish stores (Diameter: the application tells repeats apart, Gx by
	// CC-Request-Number).
	InFlight bool
	// Shards spread the slots over locks by Shard(slot) % Shards; 1 when Shard is nil.
	Shards int
	Shard  func(S) int
}

// State is what Begin found.
type State uint8

const (
	Unseen   State = iota // not seen: process it
	InFlight              // being processed (Options.InFlight): drop the copy
	Answered              // answered: send the answer again
)

// Cache maps a slot S — what a client can have only one request of at a time — to the
// request that holds it, told apart from an earlier one in the slot by D, and its answer. A
// request with another D in a slot replaces the one remembered there: keyed by slot, a
// RADIUS cache holds at most 256 entries per source port and code however high the rate. A
// nil Cache detects nothing.
type Cache[S, D comparable] struct {
	opt    Options[S]
	epoch  time.Time
	shards []shard[S, D]
}

type entry[D comparable] struct {
	disc  D
	reply []byte        // nil while in flight
	at    time.Duration // since the cache's epoch (monotonic)
}

type shard[S, D comparable] struct {
	mu        sync.Mutex
	cur, prev map[S]entry[D]
	added     int // entries cur took (Size)
	rotated   time.Time
}

// New builds a cache.
func New[S, D comparable](opt Options[S]) *Cache[S, D] {
	if opt.Shard == nil || opt.Shards < 1 {
		opt.Shards, opt.Shard = 1, nil
	}
	c := &Cache[S, D]{opt: opt, epoch: time.Now(), shards: make([]shard[S, D], opt.Shards)}
	for i := range c.shards {
		c.shards[i].cur = make(map[S]entry[D], opt.Size)
		c.shards[i].prev = make(map[S]entry[D], opt.Size)
		c.shards[i].rotated = c.epoch
	}
	return c
}

func (c *Cache[S, D]) shard(s S) *shard[S, D] {
	if c.opt.Shard == nil {
		return &c.shards[0]
	}
	return &c.shards[c.opt.Shard(s)%len(c.shards)]
}

// rotate drops the older generation once a window has passed (sh.mu held).
func (c *Cache[S, D]) rotate(sh *shard[S, D], now time.Time) {
	if c.opt.Window <= 0 || now.Sub(sh.rotated) < c.opt.Window {
		return
	}
	if now.Sub(sh.rotated) >= 2*c.opt.Window {
		clear(sh.prev)
		clear(sh.cur)
	} else {
		sh.prev, sh.cur = sh.cur, sh.prev
		clear(sh.cur)
	}
	sh.rotated, sh.added = now, 0
}

// add puts e in the newer generation (sh.mu held), rotating first when it is full (Size):
// clear keeps the maps' memory, so nothing is allocated and no deleted entry lingers
// (deleting the oldest on every add filled a map with tombstones that made every lookup
// probe long: 8 % of a CCR-U's CPU).
func (c *Cache[S, D]) add(sh *shard[S, D], s S, e entry[D]) {
	if c.opt.Size > 0 && sh.added >= c.opt.Size {
		clear(sh.prev)
		sh.cur, sh.prev, sh.added = sh.prev, sh.cur, 0
	}
	if c.opt.InFlight {
		// An in-flight entry must be one: Abort and Finish find it in cur. Without
		// in-flight entries, a stale copy in prev is shadowed by cur (lookup) and gone at
		// the next rotation, and the delete's hash is saved.
		delete(sh.prev, s)
	}
	sh.cur[s] = e
	sh.added++
}

// lookup returns the entry of s in either generation (sh.mu held).
func (sh *shard[S, D]) lookup(s S) (entry[D], bool) {
	if e, ok := sh.cur[s]; ok {
		return e, true
	}
	e, ok := sh.prev[s]
	return e, ok
}

// Begin reports whether the request d in slot s is unseen, in flight or answered (with its
// answer, shared: not to be written into); with InFlight a new request is remembered as in
// flight. now is when the request was read.
func (c *Cache[S, D]) Begin(s S, d D, now time.Time) ([]byte, State) {
	if c == nil {
		return nil, Unseen
	}
	sh := c.shard(s)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	c.rotate(sh, now)
	if e, ok := sh.lookup(s); ok && e.disc == d {
		switch {
		case e.reply == nil:
			return nil, InFlight
		case c.opt.TTL <= 0 || now.Sub(c.epoch)-e.at <= c.opt.TTL:
			return e.reply, Answered
		}
	}
	if c.opt.InFlight {
		c.add(sh, s, entry[D]{disc: d, at: now.Sub(c.epoch)})
	}
	return nil, Unseen
}

// Finish stores the answer to d, read at now. With InFlight only while d still holds its
// slot: a newer request that took it meanwhile is not replaced by an older answer.
func (c *Cache[S, D]) Finish(s S, d D, reply []byte, now time.Time) {
	if c == nil {
		return
	}
	sh := c.shard(s)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if c.opt.InFlight {
		if e, ok := sh.lookup(s); !ok || e.disc != d {
			return
		}
		delete(sh.prev, s)
		sh.cur[s] = entry[D]{disc: d, reply: reply, at: now.Sub(c.epoch)} // a full window from now
		return
	}
	c.add(sh, s, entry[D]{disc: d, reply: reply, at: now.Sub(c.epoch)})
}

// Abort forgets d: it got no answer, so a retransmission must be processed anew.
func (c *Cache[S, D]) Abort(s S, d D) {
	if c == nil {
		return
	}
	sh := c.shard(s)
	sh.mu.Lock()
	if e, ok := sh.lookup(s); ok && e.disc == d {
		delete(sh.cur, s)
		delete(sh.prev, s)
	}
	sh.mu.Unlock()
}

// Len is how many entries the cache holds, both generations.
func (c *Cache[S, D]) Len() int {
	if c == nil {
		return 0
	}
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += len(sh.cur) + len(sh.prev)
		sh.mu.Unlock()
	}
	return n
}
