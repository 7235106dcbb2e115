package diameter

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"sync"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/dedup"
)

// dupKey identifies an application request across retransmissions, even over another
// connection: the requester's Origin-Host and End-to-End-Id (RFC 6733 §6.2), so that a
// retransmitted CCR is answered without being processed twice. The key holds the Session-Id
// as well, which a retransmission repeats: End-to-End-Ids are 32 bits that many peers draw
// at random (go-diameter's diam.NewRequest does), so two requests of different sessions
// share one every few hundred thousand, and the second must not get the first's answer
// unprocessed. The cache is the one RADIUS uses (internal/dedup): bounded in size and age,
// with no in-flight entries (a copy that comes while the first is processed is processed
// again; Gx tells repeats apart by CC-Request-Number).
type dupKey struct {
	host, session string
	e2e           uint32
}

// The cache's slot is a hash of the key, the key what tells requests in a slot apart: two
// keys of one hash share a slot, the later replacing the earlier, whose retransmission is
// then processed again, never answered with the other's answer. Slots of 8 bytes hashed
// once cost a lookup less than the key's two strings hashed by the map (BenchmarkDupCache).
type dupCache = dedup.Cache[uint64, dupKey]

var dupSeed = maphash.MakeSeed()

func (k dupKey) slot() uint64 {
	return maphash.String(dupSeed, k.session) ^ maphash.String(dupSeed, k.host)*31 ^ uint64(k.e2e)
}

// newDupCache holds the size most recent answers at least, 2×size at most, none older than
// ttl. Its filter (32 bits an entry: 1 request in 30 that is not a retransmission probes the
// maps) answers most lookups without probing them: every request looks up, few find.
func newDupCache(size int, ttl time.Duration) *dupCache {
	return dedup.New[uint64, dupKey](dedup.Options[uint64]{Size: size, TTL: ttl, Filter: 32 * size,
		Hash: func(slot uint64) uint64 { return slot }})
}

// dupRef is a request's key with its slot, hashed once for the request's lookup and its
// answer's keeping (the two hashes were a twentieth of a CCR-U's CPU).
type dupRef struct {
	k    dupKey
	slot uint64
}

func refOf(k dupKey) dupRef { return dupRef{k, k.slot()} }

// putAnswer keeps the answer to r, read at now.
func putAnswer(d *dupCache, r dupRef, answer []byte, now time.Time) {
	d.Finish(r.slot, r.k, answer, now)
}

// cachedAnswer is the answer to r read at now, re-addressed to the retransmission's
// Hop-by-Hop-Id.
func cachedAnswer(d *dupCache, r dupRef, hopByHop uint32, now time.Time) ([]byte, bool) {
	a, st := d.Begin(r.slot, r.k, now)
	if st != dedup.Answered {
		return nil, false
	}
	b := append([]byte(nil), a...)
	binary.BigEndian.PutUint32(b[12:16], hopByHop)
	return b, true
}

// arena holds the answers the cache keeps in chunks of arenaChunk bytes, one after the other:
// an allocation per chunk, not per answer, and the GC marks a chunk where it marked each
// answer. A chunk is freed once the cache dropped its last answer (in the order they came,
// so at most one chunk is held for little).
type arena struct {
	mu    sync.Mutex
	chunk []byte
}

const arenaChunk = 64 << 10

// keep is a copy of b that the cache may hold (b may be reused once keep returns).
func (a *arena) keep(b []byte) []byte {
	if len(b) > arenaChunk/16 {
		return bytes.Clone(b)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if cap(a.chunk)-len(a.chunk) < len(b) {
		a.chunk = make([]byte, 0, arenaChunk)
	}
	n := len(a.chunk)
	a.chunk = append(a.chunk, b...)
	return a.chunk[n:len(a.chunk):len(a.chunk)]
}
