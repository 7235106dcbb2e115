package diameter

import (
	"encoding/binary"
	"hash/maphash"
	"sync"
	"time"
)

// dupCache keeps the answers of recent application requests by the requester's Origin-Host
// and End-to-End-Id (RFC 6733 §6.2: together they identify a request across retransmissions,
// even over another connection), so that a retransmitted CCR is answered without being
// processed twice. Bounded in size and age. The key holds the Session-Id as well, which a
// retransmission repeats: End-to-End-Ids are 32 bits that many peers draw at random
// (go-diameter's diam.NewRequest does), so two requests of different sessions share one every
// few hundred thousand, and the second must not get the first's answer unprocessed.
type dupCache struct {
	mu   sync.Mutex
	ttl  time.Duration
	size int
	seed maphash.Seed
	// entries is a ring of the last 2×size answers, indexed by a hash of their key (an entry
	// holds its key, compared on a hit) in two generations: cur indexes the new answers and,
	// once it has indexed size of them, prev is cleared and the two swap. So the size most
	// recent answers are always held; an index never names a slot the ring has reused (a slot
	// is reused 2×size answers later, its generation cleared by then); and nothing is deleted
	// one by one (deleting the oldest entry on every put filled the map with tombstones that
	// made every lookup probe long: 8 % of a CCR-U's CPU in BenchmarkCCRUpdate). The indexes'
	// slots are 12 bytes, so a lookup that misses (every request but a retransmission) stays
	// in the CPU's cache.
	entries   []dupEntry
	next      int // the ring's next slot
	indexed   int // answers cur indexes
	cur, prev map[uint64]uint32
}

type dupKey struct {
	host, session string
	e2e           uint32
}

type dupEntry struct {
	key    dupKey
	answer []byte
	at     time.Time
}

func newDupCache(size int, ttl time.Duration) *dupCache {
	return &dupCache{ttl: ttl, size: size, seed: maphash.MakeSeed(), entries: make([]dupEntry, 2*size),
		cur: make(map[uint64]uint32, size), prev: make(map[uint64]uint32, size)}
}

func (d *dupCache) hash(k dupKey) uint64 {
	return maphash.String(d.seed, k.session) ^ maphash.String(d.seed, k.host)*31 ^ uint64(k.e2e)
}

// get returns the cached answer re-addressed to the retransmission's Hop-by-Hop-Id.
func (d *dupCache) get(host, session string, e2e, hopByHop uint32, now time.Time) ([]byte, bool) {
	k := dupKey{host, session, e2e}
	h := d.hash(k)
	var e dupEntry
	d.mu.Lock()
	i, ok := d.cur[h]
	if !ok || d.entries[i].key != k {
		i, ok = d.prev[h]
	}
	if ok {
		e = d.entries[i]
	}
	d.mu.Unlock()
	if !ok || e.key != k || now.Sub(e.at) > d.ttl {
		return nil, false
	}
	b := append([]byte(nil), e.answer...)
	binary.BigEndian.PutUint32(b[12:16], hopByHop)
	return b, true
}

func (d *dupCache) put(host, session string, e2e uint32, answer []byte, now time.Time) {
	k := dupKey{host, session, e2e}
	h := d.hash(k)
	d.mu.Lock()
	if d.indexed == d.size {
		clear(d.prev) // keeps its buckets: no allocation, no tombstones
		d.cur, d.prev, d.indexed = d.prev, d.cur, 0
	}
	d.entries[d.next] = dupEntry{key: k, answer: answer, at: now}
	d.cur[h] = uint32(d.next) // a colliding key's entry is lost to a later miss, never answered wrongly
	d.next = (d.next + 1) % len(d.entries)
	d.indexed++
	d.mu.Unlock()
}
