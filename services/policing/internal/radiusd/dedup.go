package radiusd

import (
	"net/netip"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/dedup"
)

// RFC 5080 §2.2.2: a request with the same source address and port, code, identifier and
// authenticator as one seen within the window is a retransmission. While the first is in
// flight the copy is dropped; once answered, the copy gets the same reply again without
// being processed twice. The cache is the one Diameter uses (internal/dedup), keyed here by
// slot and told apart by authenticator.
type dupKey struct {
	from netip.AddrPort
	code byte
	id   byte
	auth [16]byte
}

// dupSlot is what a client can have only one request of at a time: a NAS reuses an
// identifier on a source port only once it has given up on the request that held it, so a
// request with another authenticator in a slot replaces the one remembered there (RFC 5080
// §2.2.2). Keyed by slot, the cache holds at most 256 entries per source port and code
// however high the rate: keyed by request it held every request of two windows, at 60k/s a
// map of 600k entries whose lookups missed the CPU caches. No pointers in the key: the
// garbage collector need not scan them.
type dupSlot struct {
	addr [16]byte
	port uint16
	code byte
	id   byte
}

type dupCache = dedup.Cache[dupSlot, [16]byte]

const dupShards = 64

// newDupCache returns nil (detection off) for a zero window. Generations rotate every
// window, so an entry lives between one and two windows.
func newDupCache(window time.Duration) *dupCache {
	if window <= 0 {
		return nil
	}
	return dedup.New[dupSlot, [16]byte](dedup.Options[dupSlot]{Window: window, InFlight: true, Shards: dupShards,
		Shard: func(s dupSlot) int { return int(s.id ^ byte(s.port) ^ s.addr[15]) }})
}

func (k *dupKey) slot() dupSlot {
	return dupSlot{addr: k.from.Addr().As16(), port: k.from.Port(), code: k.code, id: k.id}
}
