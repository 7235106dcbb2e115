package luapolicy

import (
	"hash/maphash"
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

type memoEntry struct {
	hook hook
	sum  uint64
	d    *decision // shared, never modified
}

const memoShards = 64

// memo keeps a hook's decision per distinct inputs: the hash of the declared inputs' values
// and the decision of the run that had them (field notes §1, CPU lesson 4). A hook that
// declared its inputs can only decide from them (reading anything else fails), so a
// decision made for one request, user or session serves every other with the same inputs:
// the memo holds one entry per distinct inputs, not one per user or session, and nothing is
// forgotten at a session's end. It is bounded: once it holds size entries, a new key's shard
// forgets an arbitrary entry of its own (costing that key one run), so a memo holds its size
// however the keys fall among the shards (a shard with none to forget adds one: at most
// memoShards over). It belongs to one program: a reload starts empty.
//
// An entry is found by its hook and inputs' hash alone: no user name is hashed, copied or
// compared. Keyed by User-Name, a memoized authorize cost 1.4 µs more than the built-in
// policy's in a CPU profile under load: cache misses on the entry and the name it kept
// (issue 35).
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

// slot is where hook h's decision for inputs hashing to sum lives: the shard and the key in
// its map (a bijection of sum for each hook).
func slot(h hook, sum uint64) uint64 { return mix(sum ^ uint64(h)*0x9e3779b97f4a7c15) }

// get returns hook h's decision for inputs hashing to sum.
func (m *memo) get(h hook, sum uint64) (*decision, bool) {
	k := slot(h, sum)
	s := &m.shards[k%memoShards]
	s.mu.Lock()
	e, ok := s.m[k]
	s.mu.Unlock()
	if !ok || e.sum != sum || e.hook != h {
		return nil, false
	}
	return e.d, true
}

func (m *memo) put(h hook, sum uint64, d decision) {
	k := slot(h, sum)
	e := memoEntry{hook: h, sum: sum, d: &d}
	s := &m.shards[k%memoShards]
	s.mu.Lock()
	if _, ok := s.m[k]; !ok {
		if m.n.Load() >= int64(m.size) {
			for old := range s.m {
				delete(s.m, old)
				m.n.Add(-1)
				break
			}
		}
		m.n.Add(1)
	}
	s.m[k] = e
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
