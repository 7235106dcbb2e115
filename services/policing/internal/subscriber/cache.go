package subscriber

import (
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/lru"
)

// profileCache is a size-bounded LRU of lookups (a nil subscriber remembers "not found").
// Entries are never dropped for age: an expired entry is still there to be served stale while
// LDAP is down; only the size bound evicts (least recently used first).
type profileCache struct {
	c *lru.Cache[string, cacheEntry]
}

type cacheEntry struct {
	sub     *Subscriber // nil: not found
	fetched time.Time
}

func newProfileCache(size int) *profileCache {
	return &profileCache{c: lru.New[string, cacheEntry](size)}
}

// get returns the entry for user (fresh or not).
func (c *profileCache) get(user string) (cacheEntry, bool) { return c.c.Get(user) }

// put stores an entry, evicting the least recently used past the bound. It returns the
// change in the number of entries (0 or 1).
func (c *profileCache) put(user string, sub *Subscriber, at time.Time) int {
	// A slower, older answer must not replace a newer one.
	return c.c.Put(user, cacheEntry{sub: sub, fetched: at}, func(old cacheEntry) bool { return at.Before(old.fetched) })
}

// len is the number of entries.
func (c *profileCache) len() int { return c.c.Len() }
