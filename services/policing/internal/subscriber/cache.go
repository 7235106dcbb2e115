package subscriber

import (
	"container/list"
	"hash/maphash"
	"sync"
	"time"
)

// profileCache is a size-bounded LRU of lookups (a nil subscriber remembers "not found"),
// sharded so that concurrent auth and accounting do not queue on one lock. Entries are
// never dropped for age: an expired entry is still there to be served stale while LDAP is
// down; only the size bound evicts (least recently used first).
type profileCache struct {
	seed   maphash.Seed
	shards []cacheShard
}

type cacheShard struct {
	mu  sync.Mutex
	m   map[string]*list.Element
	lru list.List // front: most recently used; values are *cacheEntry
	cap int
}

type cacheEntry struct {
	user    string
	sub     *Subscriber // nil: not found
	fetched time.Time
}

func newProfileCache(size int) *profileCache {
	n := 1
	if size >= 4096 {
		n = 16 // small caches keep one shard so that the bound is exact
	}
	c := &profileCache{seed: maphash.MakeSeed(), shards: make([]cacheShard, n)}
	per := (size + n - 1) / n
	for i := range c.shards {
		c.shards[i].m = map[string]*list.Element{}
		c.shards[i].cap = max(per, 1)
	}
	return c
}

func (c *profileCache) shard(user string) *cacheShard {
	if len(c.shards) == 1 {
		return &c.shards[0]
	}
	return &c.shards[maphash.String(c.seed, user)%uint64(len(c.shards))]
}

// get returns a copy of the entry for user (fresh or not).
func (c *profileCache) get(user string) (cacheEntry, bool) {
	s := c.shard(user)
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.m[user]
	if !ok {
		return cacheEntry{}, false
	}
	s.lru.MoveToFront(el)
	return *el.Value.(*cacheEntry), true
}

// put stores an entry, evicting the least recently used past the bound. It returns the
// change in the number of entries (0 or 1).
func (c *profileCache) put(user string, sub *Subscriber, at time.Time) int {
	s := c.shard(user)
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.m[user]; ok {
		e := el.Value.(*cacheEntry)
		if at.Before(e.fetched) {
			return 0 // a slower, older answer must not replace a newer one
		}
		e.sub, e.fetched = sub, at
		s.lru.MoveToFront(el)
		return 0
	}
	s.m[user] = s.lru.PushFront(&cacheEntry{user: user, sub: sub, fetched: at})
	if s.lru.Len() <= s.cap {
		return 1
	}
	old := s.lru.Back()
	s.lru.Remove(old)
	delete(s.m, old.Value.(*cacheEntry).user)
	return 0
}

// len is the number of entries.
func (c *profileCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.lru.Len()
		s.mu.Unlock()
	}
	return n
}
