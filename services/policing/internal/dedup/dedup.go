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
	// Filter, with Hash, keeps beside each generation's map a bitset of its slots' hashes,
	// Filter bits (rounded up to a power of two): Begin answers a slot whose bits are clear —
	// most requests, a retransmission is rare — without probing the maps. A probe of maps of
	// thousands of entries, megabytes, mostly misses the CPU's caches and TLB: on the wire,
	// Diameter's lookups were a tenth of a CCR-U's CPU. 0: no filter.
	Filter int
	Hash   func(S) uint64
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
	// curBits and prevBits are the Filter of cur and prev: a slot in a map has its bit set
	// in the map's bitset (the converse need not hold).
	curBits, prevBits []uint64
	shift             uint8 // a hash's bit is its top bits: hash * mixer >> shift
}

// New builds a cache.
func New[S, D comparable](opt Options[S]) *Cache[S, D] {
	if opt.Shard == nil || opt.Shards < 1 {
		opt.Shards, opt.Shard = 1, nil
	}
	c := &Cache[S, D]{opt: opt, epoch: time.Now(), shards: make([]shard[S, D], opt.Shards)}
	bits := 64
	for opt.Hash != nil && bits < opt.Filter {
		bits *= 2
	}
	for i := range c.shards {
		c.shards[i].cur = make(map[S]entry[D], opt.Size)
		c.shards[i].prev = make(map[S]entry[D], opt.Size)
		c.shards[i].rotated = c.epoch
		if opt.Hash != nil && opt.Filter > 0 {
			c.shards[i].curBits, c.shards[i].prevBits = make([]uint64, bits/64), make([]uint64, bits/64)
			c.shards[i].shift = uint8(64 - bits64(bits))
		}
	}
	return c
}

// bits64 is log2 of n, a power of two.
func bits64(n int) int {
	k := 0
	for n > 1 {
		n, k = n/2, k+1
	}
	return k
}

// bit is s's word and mask in a shard's bitsets (Filter).
func (c *Cache[S, D]) bit(sh *shard[S, D], s S) (int, uint64) {
	h := c.opt.Hash(s) * 0x9e3779b97f4a7c15 // Fibonacci hashing: the top bits mix every bit
	i := h >> sh.shift
	return int(i / 64), 1 << (i % 64)
}

// mark sets s's bit in cur's bitset; s is being written to cur.
func (c *Cache[S, D]) mark(sh *shard[S, D], s S) {
	if sh.curBits != nil {
		w, m := c.bit(sh, s)
		sh.curBits[w] |= m
	}
}

// absent reports whether s is surely in neither map (its bits clear): false when unsure.
func (c *Cache[S, D]) absent(sh *shard[S, D], s S) bool {
	if sh.curBits == nil {
		return false
	}
	w, m := c.bit(sh, s)
	return (sh.curBits[w]|sh.prevBits[w])&m == 0
}

// swap makes cur the older generation and an empty one the newer, the bitsets with the maps.
func (sh *shard[S, D]) swap() {
	clear(sh.prev)
	sh.cur, sh.prev = sh.prev, sh.cur
	clear(sh.prevBits)
	sh.curBits, sh.prevBits = sh.prevBits, sh.curBits
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
		clear(sh.prevBits)
		clear(sh.curBits)
	} else {
		sh.swap()
	}
	sh.rotated, sh.added = now, 0
}

// add puts e in the newer generation (sh.mu held), rotating first when it is full (Size):
// clear keeps the maps' memory, so nothing is allocated and no deleted entry lingers
// (deleting the oldest on every add filled a map with tombstones that made every lookup
// probe long: 8 % of a CCR-U's CPU).
func (c *Cache[S, D]) add(sh *shard[S, D], s S, e entry[D]) {
	if c.opt.Size > 0 && sh.added >= c.opt.Size {
		sh.swap()
		sh.added = 0
	}
	if c.opt.InFlight {
		// An in-flight entry must be one: Abort and Finish find it in cur. Without
		// in-flight entries, a stale copy in prev is shadowed by cur (lookup) and gone at
		// the next rotation, and the delete's hash is saved.
		delete(sh.prev, s)
	}
	sh.cur[s] = e
	c.mark(sh, s)
	sh.added++
}

// lookup returns the entry of s in either generation (sh.mu held).
func (sh *shard[S, D]) lookup(c *Cache[S, D], s S) (entry[D], bool) {
	if c.absent(sh, s) {
		return entry[D]{}, false
	}
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
	if e, ok := sh.lookup(c, s); ok && e.disc == d {
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
		if e, ok := sh.lookup(c, s); !ok || e.disc != d {
			return
		}
		delete(sh.prev, s)
		sh.cur[s] = entry[D]{disc: d, reply: reply, at: now.Sub(c.epoch)} // a full window from now
		c.mark(sh, s)
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
	if e, ok := sh.lookup(c, s); ok && e.disc == d {
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
