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
	mu    sync.Mutex
	ttl   time.Duration
	byKey map[dupKey]dupEntry
	order []dupKey // ring: oldest first, so the map stays bounded
	next  int
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
	return &dupCache{ttl: ttl, byKey: make(map[dupKey]dupEntry, size), order: make([]dupKey, size)}
}

// get returns the cached answer re-addressed to the retransmission's Hop-by-Hop-Id.
func (d *dupCache) get(host, session string, e2e, hopByHop uint32, now time.Time) ([]byte, bool) {
	d.mu.Lock()
	e, ok := d.byKey[dupKey{host, session, e2e}]
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
	defer d.mu.Unlock()
	if _, ok := d.byKey[k]; !ok {
		delete(d.byKey, d.order[d.next])
		d.order[d.next] = k
		d.next = (d.next + 1) % len(d.order)
	}
	d.byKey[k] = dupEntry{answer: answer, at: now}
}
