package cassandra

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/lru"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// Hybrid is a bounded local cache in front of the Cassandra store (write-through).
//
// Reads (Get, ByUser, ByFramedIP, ByIPv6, ByNAS: the admin API's and CoA/Disconnect's, never the
// RADIUS flow's) are answered from a cache entry that is fresh — written or read by this node
// less than TTL ago; a miss or a stale entry goes to Cassandra. When Cassandra cannot answer,
// a stale entry is served rather than nothing.
//
// Accounting never merges onto this cache, which is fresh by age: it merges onto the row read
// from Cassandra or onto the store's row cache (rowcache.go), which relies on event-time
// ordering instead. The lookups (user, framed IP, NAS) always come from Cassandra (they change
// in other DCs); only the session rows they point to are cached.
type Hybrid struct {
	*Store
	ttl   time.Duration
	cache *lru.Cache[session.Key, cacheEntry]
}

type cacheEntry struct {
	s  *session.Session
	at time.Time
}

// NewHybrid puts a cache of size sessions, fresh for ttl, in front of st. Closing the hybrid
// closes st.
func NewHybrid(st *Store, size int, ttl time.Duration) *Hybrid {
	return &Hybrid{Store: st, ttl: ttl, cache: lru.New[session.Key, cacheEntry](size)}
}

func clone(s *session.Session) *session.Session {
	c := *s
	c.Class = append([]byte(nil), s.Class...)
	if len(c.Class) == 0 {
		c.Class = nil
	}
	return &c
}

func (h *Hybrid) put(s *session.Session) {
	h.cache.Put(s.Key, cacheEntry{s: clone(s), at: time.Now()}, nil)
	h.m.cacheEntries.Set(float64(h.cache.Len()))
}

func (h *Hybrid) remove(k session.Key) {
	h.cache.Remove(k)
	h.m.cacheEntries.Set(float64(h.cache.Len()))
}

// lookup returns a copy of the entry and whether it is fresh.
func (h *Hybrid) lookup(k session.Key) (*session.Session, bool) {
	e, ok := h.cache.Get(k)
	if !ok {
		return nil, false
	}
	return clone(e.s), time.Since(e.at) < h.ttl
}

// Len returns the number of cached sessions.
func (h *Hybrid) Len() int { return h.cache.Len() }

// Apply writes through to Cassandra and caches the result.
func (h *Hybrid) Apply(ctx context.Context, u *session.Update, o session.WriteOptions) (session.Result, error) {
	merged, res, err := h.Store.apply(ctx, u, o)
	switch {
	case err != nil || merged == nil: // failed or spooled: the row is not known here
		h.remove(u.Session.Key)
	case merged.State != session.Active:
		h.remove(merged.Key)
	default:
		h.put(merged)
	}
	return res, err
}

// Get answers from a fresh entry, else from Cassandra (a stale entry when Cassandra fails).
func (h *Hybrid) Get(ctx context.Context, k session.Key) (*session.Session, error) {
	cached, fresh := h.lookup(k)
	if fresh {
		h.m.cacheRequests.WithLabelValues("hit").Inc()
		return cached, nil
	}
	if cached == nil {
		h.m.cacheRequests.WithLabelValues("miss").Inc()
	} else {
		h.m.cacheRequests.WithLabelValues("stale").Inc()
	}
	s, err := h.Store.Get(ctx, k)
	switch {
	case err == nil:
		h.put(s)
		return s, nil
	case errors.Is(err, session.ErrNotFound):
		h.remove(k)
		return nil, err
	case cached != nil:
		h.m.cacheRequests.WithLabelValues("stale_served").Inc()
		return cached, nil
	}
	return nil, err
}

// ByUser reads the user's lookup from Cassandra and the sessions through the cache.
func (h *Hybrid) ByUser(ctx context.Context, user string) ([]*session.Session, error) {
	return h.byLookup(ctx, h.userKeys, user, func(s *session.Session) bool { return s.UserName == user })
}

// ByCallingStation reads the lookup from Cassandra and the sessions through the cache.
func (h *Hybrid) ByCallingStation(ctx context.Context, id string) ([]*session.Session, error) {
	out, err := h.byLookup(ctx, h.callingKeys, id, func(s *session.Session) bool { return s.CallingStationID == id })
	return withCalling(out, id), err
}

// byLookup reads a lookup's keys from Cassandra and the sessions through the cache; with
// Cassandra unreachable, the cached sessions that match.
func (h *Hybrid) byLookup(ctx context.Context, keysOf func(context.Context, string) ([]session.Key, error),
	key string, match func(*session.Session) bool) ([]*session.Session, error) {
	keys, err := keysOf(ctx, key)
	if err != nil {
		if out := h.scan(match); len(out) > 0 {
			return out, nil
		}
		return nil, err
	}
	return h.getMany(ctx, keys, h.Get)
}

// ByFramedIP reads the lookup from Cassandra and the session through the cache.
func (h *Hybrid) ByFramedIP(ctx context.Context, ip netip.Addr) (*session.Session, error) {
	if !ip.IsValid() {
		return nil, session.ErrNotFound
	}
	k, err := h.framedIPKey(ctx, ip)
	if err != nil {
		if !errors.Is(err, session.ErrNotFound) {
			if out := h.scan(func(s *session.Session) bool { return s.FramedIP == ip }); len(out) == 1 {
				return out[0], nil
			}
		}
		return nil, err
	}
	s, err := h.Get(ctx, k)
	if err == nil && s.FramedIP != ip {
		return nil, session.ErrNotFound
	}
	return s, err
}

// ByNAS reads the NAS lookup from Cassandra and the sessions through the cache.
func (h *Hybrid) ByNAS(ctx context.Context, nas string) ([]*session.Session, error) {
	ids, err := h.nasIDs(ctx, nas)
	if err != nil {
		return nil, err
	}
	keys := make([]session.Key, len(ids))
	for i, id := range ids {
		keys[i] = session.Key{NAS: nas, ID: id}
	}
	return h.getMany(ctx, keys, h.Get)
}

// CloseNAS closes the NAS's sessions in Cassandra and drops them from the cache.
func (h *Hybrid) CloseNAS(ctx context.Context, nas string, at time.Time, cause uint32) (int, error) {
	n, err := h.Store.CloseNAS(ctx, nas, at, cause)
	h.cache.RemoveIf(func(k session.Key, _ cacheEntry) bool { return k.NAS == nas })
	h.m.cacheEntries.Set(float64(h.cache.Len()))
	return n, err
}

// scan returns copies of the cached active sessions matching f (fallback when Cassandra
// cannot answer a lookup).
func (h *Hybrid) scan(f func(*session.Session) bool) []*session.Session {
	var out []*session.Session
	h.cache.Each(func(_ session.Key, e cacheEntry) {
		if e.s.State == session.Active && f(e.s) {
			out = append(out, clone(e.s))
		}
	})
	if len(out) > 0 {
		h.m.cacheRequests.WithLabelValues("stale_served").Inc()
	}
	return out
}

var _ session.Store = (*Hybrid)(nil)
