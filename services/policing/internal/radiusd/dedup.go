package radiusd

import (
	"net/netip"
	"sync"
	"time"
)

// RFC 5080 §2.2.2: a request with the same source address and port, code, identifier and
// authenticator as one seen within the window is a retransmission. While the first is in
// flight the copy is dropped; once answered, the copy gets the same reply again without
// being processed twice.
type dupKey struct {
	from netip.AddrPort
	code byte
	id   byte
	auth [16]byte
}

type dupEntry struct {
	reply   []byte // nil while in flight
	expires time.Time
}

type dupState uint8

const (
	dupNew dupState = iota
	dupInFlight
	dupAnswered
)

const dupShards = 64

type dupCache struct {
	window time.Duration
	shards [dupShards]struct {
		mu sync.Mutex
		m  map[dupKey]*dupEntry
	}
	stop chan struct{}
}

// newDupCache returns nil (detection off) for a zero window.
func newDupCache(window time.Duration) *dupCache {
	if window <= 0 {
		return nil
	}
	c := &dupCache{window: window, stop: make(chan struct{})}
	for i := range c.shards {
		c.shards[i].m = map[dupKey]*dupEntry{}
	}
	go c.sweep()
	return c
}

func (c *dupCache) shard(k dupKey) int {
	return int(k.auth[0]^k.auth[7]^k.id) % dupShards
}

// begin registers k as in flight, or reports that it is a duplicate.
func (c *dupCache) begin(k dupKey, now time.Time) ([]byte, dupState) {
	sh := &c.shards[c.shard(k)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e, ok := sh.m[k]; ok && now.Before(e.expires) {
		if e.reply == nil {
			return nil, dupInFlight
		}
		return e.reply, dupAnswered
	}
	sh.m[k] = &dupEntry{expires: now.Add(c.window)}
	return nil, dupNew
}

// finish stores the reply sent for k.
func (c *dupCache) finish(k dupKey, reply []byte) {
	if c == nil {
		return
	}
	sh := &c.shards[c.shard(k)]
	sh.mu.Lock()
	if e, ok := sh.m[k]; ok {
		e.reply = reply
		e.expires = time.Now().Add(c.window)
	}
	sh.mu.Unlock()
}

// abort forgets k: the request got no reply, so a retransmission must be processed anew.
func (c *dupCache) abort(k dupKey) {
	if c == nil {
		return
	}
	sh := &c.shards[c.shard(k)]
	sh.mu.Lock()
	delete(sh.m, k)
	sh.mu.Unlock()
}

func (c *dupCache) sweep() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case now := <-t.C:
			for i := range c.shards {
				sh := &c.shards[i]
				sh.mu.Lock()
				for k, e := range sh.m {
					if now.After(e.expires) {
						delete(sh.m, k)
					}
				}
				sh.mu.Unlock()
			}
		}
	}
}

func (c *dupCache) close() {
	if c != nil {
		close(c.stop)
	}
}
