package diameter

import (
	"encoding/binary"
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
	// cur takes the new answers; once it holds size, prev is cleared and the two swap. So the
	// size most recent answers are always held (at most twice as many), and no entry is ever
	// deleted one by one: deleting the oldest on every put filled the map with tombstones that
	// made every lookup probe long (8 % of a CCR-U's CPU in BenchmarkCCRUpdate).
	cur, prev map[dupKey]dupEntry
}

type dupKey struct {
	host, session string
	e2e           uint32
}

type dupEntry struct {
	answer []byte
	at     time.Time
}

func newDupCache(size int, ttl time.Duration) *dupCache {
	return &dupCache{ttl: ttl, size: size, cur: make(map[dupKey]dupEntry, size), prev: make(map[dupKey]dupEntry, size)}
}

// get returns the cached answer re-addressed to the retransmission's Hop-by-Hop-Id.
func (d *dupCache) get(host, session string, e2e, hopByHop uint32, now time.Time) ([]byte, bool) {
	k := dupKey{host, session, e2e}
	d.mu.Lock()
	e, ok := d.cur[k]
	if !ok {
		e, ok = d.prev[k]
	}
	d.mu.Unlock()
	if !ok || now.Sub(e.at) > d.ttl {
		return nil, false
	}
	b := append([]byte(nil), e.answer...)
	binary.BigEndian.PutUint32(b[12:16], hopByHop)
	return b, true
}

func (d *dupCache) put(host, session string, e2e uint32, answer []byte, now time.Time) {
	k := dupKey{host, session, e2e}
	d.mu.Lock()
	if len(d.cur) >= d.size {
		clear(d.prev) // keeps its buckets: no allocation, no tombstones
		d.cur, d.prev = d.prev, d.cur
	}
	d.cur[k] = dupEntry{answer: answer, at: now}
	d.mu.Unlock()
}
