package luapolicy

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"

	"layeh.com/radius"
)

// decision is what a hook decided; memoized decisions are shared between requests and
// must never be modified (attribute slices are handed out clipped: appending copies).
type decision struct {
	reject     bool
	reason     string
	reply      radius.Attributes
	disconnect string
	coa        radius.Attributes
	// install and remove are PCC rule names a Gx hook decided (gx.go).
	install []string
	remove  []string
}

// memoKey names what a decision was made for: the hook and the User-Name (authorize,
// gx_initial: one entry per user, its last decision), or the hook alone with byInputs
// (accounting, gx_update: one entry per distinct inputs, shared by every session).
type memoKey struct {
	a, b string
	// borrowed: a is a view of the request's memory (the User-Name: a memoized authorize
	// then allocates nothing), valid only during the call; put keeps a copy.
	borrowed bool
	// byInputs: the inputs' hash is part of the key. A declared hook's decision is a
	// function of its inputs (reading anything else fails), so a session hook's decision for
	// some inputs serves every session with the same: a new session's Start or CCR-U reuses
	// it instead of running the script, and the memo holds one entry per distinct inputs
	// instead of one per active session (nothing to forget at a Stop).
	byInputs bool
}

func (k memoKey) same(o memoKey) bool { return k.a == o.a && k.b == o.b && k.byInputs == o.byInputs }

type memoEntry struct {
	key memoKey
	sum uint64
	d   *decision // shared, never modified
}

const memoShards = 64

// memo keeps, per key, the hash of the inputs of the last run and its decision (field
// notes §1, CPU lesson 4). It is bounded: once it holds size entries, a new key's shard
// forgets an arbitrary entry of its own (costing that key one run), so a memo holds its size
// however the keys fall among the shards (a shard with none to forget adds one: at most
// memoShards over). It belongs to one program: a reload starts empty.
//
// Entries are found by a 64-bit hash of the key, hashed once per request for both the
// shard and the map (a map by memoKey hashed its strings again); the entry's own key is
// compared, so keys whose hashes collide share a slot and only cost each other runs.
type memo struct {
	seed   maphash.Seed
	size   int
	n      atomic.Int64 // entries in all shards
	shards [memoShards]struct {
		mu sync.Mutex
		m  map[uint64]memoEntry
	}
}

func newMemo(size int) *memo {
	m := &memo{seed: maphash.MakeSeed(), size: max(size, 1)}
	for i := range m.shards {
		m.shards[i].m = map[uint64]memoEntry{}
	}
	return m
}

func (m *memo) hash(k memoKey, sum uint64) uint64 {
	h := maphash.String(m.seed, k.a)
	if k.b != "" {
		h = h*31 ^ maphash.String(m.seed, k.b)
	}
	if k.byInputs {
		h = mix(h ^ sum)
	}
	return h
}

// get returns the decision made for k when its inputs hashed to sum.
func (m *memo) get(k memoKey, sum uint64) (*decision, bool) {
	h := m.hash(k, sum)
	s := &m.shards[h%memoShards]
	s.mu.Lock()
	e, ok := s.m[h]
	s.mu.Unlock()
	if !ok || e.sum != sum || !e.key.same(k) {
		return nil, false
	}
	return e.d, true
}

func (m *memo) put(k memoKey, sum uint64, d decision) {
	h := m.hash(k, sum)
	if k.borrowed {
		k = memoKey{a: strings.Clone(k.a), b: k.b, byInputs: k.byInputs}
	}
	e := memoEntry{key: k, sum: sum, d: &d}
	s := &m.shards[h%memoShards]
	s.mu.Lock()
	if _, ok := s.m[h]; !ok {
		if m.n.Load() >= int64(m.size) {
			for old := range s.m {
				delete(s.m, old)
				m.n.Add(-1)
				break
			}
		}
		m.n.Add(1)
	}
	s.m[h] = e
	s.mu.Unlock()
}

// len counts the entries (tests).
func (m *memo) len() int {
	n := 0
	for i := range m.shards {
		m.shards[i].mu.Lock()
		n += len(m.shards[i].m)
		m.shards[i].mu.Unlock()
	}
	return n
}
