// Package lru is the size-bounded, least-recently-used cache of policing's caches (LDAP
// profiles, the hybrid store's sessions, the Cassandra store's rows), sharded so that
// concurrent requests do not queue on one lock.
package lru

import (
	"container/list"
	"hash/maphash"
	"sync"
)

// Cache holds at most about size entries: small caches keep one shard so that the bound is
// exact, larger ones 16 of size/16 each.
type Cache[K comparable, V any] struct {
	seed   maphash.Seed
	shards []shard[K, V]
}

type shard[K comparable, V any] struct {
	mu  sync.Mutex
	m   map[K]*list.Element
	ll  list.List // front: most recently used; values are *entry[K, V]
	cap int
}

type entry[K comparable, V any] struct {
	k K
	v V
}

// New returns a cache of size entries (at least 1).
func New[K comparable, V any](size int) *Cache[K, V] {
	n := 1
	if size >= 4096 {
		n = 16
	}
	c := &Cache[K, V]{seed: maphash.MakeSeed(), shards: make([]shard[K, V], n)}
	per := (size + n - 1) / n
	for i := range c.shards {
		c.shards[i].m = map[K]*list.Element{}
		c.shards[i].cap = max(per, 1)
	}
	return c
}

func (c *Cache[K, V]) shard(k K) *shard[K, V] {
	if len(c.shards) == 1 {
		return &c.shards[0]
	}
	return &c.shards[maphash.Comparable(c.seed, k)%uint64(len(c.shards))]
}

// Get returns k's value and marks it used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	s.ll.MoveToFront(el)
	return el.Value.(*entry[K, V]).v, true
}

// Put stores v under k, unless k has a value that keep (nil: none) says to keep, and evicts
// the least recently used entry past the bound. It returns the change in the number of
// entries (0 or 1).
func (c *Cache[K, V]) Put(k K, v V, keep func(old V) bool) int {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.m[k]; ok {
		e := el.Value.(*entry[K, V])
		if keep == nil || !keep(e.v) {
			e.v = v
		}
		s.ll.MoveToFront(el)
		return 0
	}
	s.m[k] = s.ll.PushFront(&entry[K, V]{k: k, v: v})
	if s.ll.Len() <= s.cap {
		return 1
	}
	old := s.ll.Remove(s.ll.Back()).(*entry[K, V])
	delete(s.m, old.k)
	return 0
}

// Remove drops k; it reports whether k was there.
func (c *Cache[K, V]) Remove(k K) bool {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.m[k]
	if ok {
		s.ll.Remove(el)
		delete(s.m, k)
	}
	return ok
}

// RemoveIf drops every entry f selects and returns how many.
func (c *Cache[K, V]) RemoveIf(f func(K, V) bool) int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, el := range s.m {
			if f(k, el.Value.(*entry[K, V]).v) {
				s.ll.Remove(el)
				delete(s.m, k)
				n++
			}
		}
		s.mu.Unlock()
	}
	return n
}

// Each calls f for every entry (a shard's lock held: f must not use the cache).
func (c *Cache[K, V]) Each(f func(K, V)) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, el := range s.m {
			f(k, el.Value.(*entry[K, V]).v)
		}
		s.mu.Unlock()
	}
}

// Len is the number of entries.
func (c *Cache[K, V]) Len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.ll.Len()
		s.mu.Unlock()
	}
	return n
}
