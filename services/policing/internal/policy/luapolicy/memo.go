package luapolicy

import (
	"hash/maphash"
	"sync"

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

// memoKey names what a decision was made for: the User-Name (authorize) or the session
// (NAS, Acct-Session-Id) of accounting.
type memoKey struct{ a, b string }

type memoEntry struct {
	sum uint64
	d   decision
}

const memoShards = 64

// memo keeps, per key, the hash of the inputs of the last run and its decision (field
// notes §1, CPU lesson 4). It is bounded: a full shard forgets an arbitrary entry, which
// costs that key one run. It belongs to one program: a reload starts empty.
type memo struct {
	seed     maphash.Seed
	perShard int
	shards   [memoShards]struct {
		mu sync.Mutex
		m  map[memoKey]memoEntry
	}
}

func newMemo(size int) *memo {
	m := &memo{seed: maphash.MakeSeed(), perShard: max(size/memoShards, 1)}
	for i := range m.shards {
		m.shards[i].m = map[memoKey]memoEntry{}
	}
	return m
}

func (m *memo) shard(k memoKey) int {
	return int((maphash.String(m.seed, k.a)*31 ^ maphash.String(m.seed, k.b)) % memoShards)
}

// get returns the decision made for k when its inputs hashed to sum.
func (m *memo) get(k memoKey, sum uint64) (decision, bool) {
	s := &m.shards[m.shard(k)]
	s.mu.Lock()
	e, ok := s.m[k]
	s.mu.Unlock()
	if !ok || e.sum != sum {
		return decision{}, false
	}
	return e.d, true
}

func (m *memo) put(k memoKey, sum uint64, d decision) {
	s := &m.shards[m.shard(k)]
	s.mu.Lock()
	if _, ok := s.m[k]; !ok && len(s.m) >= m.perShard {
		for old := range s.m {
			delete(s.m, old)
			break
		}
	}
	s.m[k] = memoEntry{sum: sum, d: d}
	s.mu.Unlock()
}

func (m *memo) forget(k memoKey) {
	s := &m.shards[m.shard(k)]
	s.mu.Lock()
	delete(s.m, k)
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
