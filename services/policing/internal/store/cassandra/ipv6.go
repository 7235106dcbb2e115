package cassandra

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// The IPv6 lookup (sessions_by_ipv6, migration 0003_ipv6) finds the session whose claim
// (session.Claims: delegated prefix, framed prefix, framed address) is the longest covering
// an address or a prefix, without a scan and without a materialized view. Each claim is one
// row in the partition of its bucket: the claim cut to the longest of bucketLens not longer
// than it. A lookup of q reads q's buckets from the longest down and stops at the first that
// holds a live claim covering q, because every claim in a longer bucket is longer than every
// claim in a shorter one. An address inside a delegated /56 costs two small partition reads
// (its /64 bucket: empty unless a framed /64 or address is there; its /56 bucket), then the
// session row.
var bucketLens = [...]int{64, 56, 48, 32, 0}

// bucketOf is the partition of a claim.
func bucketOf(p netip.Prefix) string {
	for _, l := range bucketLens {
		if p.Bits() >= l {
			b, _ := p.Addr().Prefix(l)
			return b.String()
		}
	}
	return "" // not reached: every length is >= 0
}

// ipv6Writes adds to the batch of a session's write the lookup rows of its claims: new or
// changed claims (all of them when fresh, to refresh their TTL), and the deletes of the
// claims the row held before and no longer does; stopped: the deletes of all of them.
// The rows are the session's own (the key is in the clustering key): no other session's
// write can meet them, unlike the framed-IP lookup's one row per address.
func (st *Store) ipv6Writes(b *gocql.Batch, old, s *session.Session, fresh bool, ttl int) {
	var was session.Claims
	if old != nil {
		was = old.IPv6Claims()
	}
	now := s.IPv6Claims()
	k := s.Key
	if s.State == session.Stopped {
		for _, p := range union(was, now) {
			b.Query(st.q.delByIPv6, bucketOf(p), p.String(), k.NAS, k.ID)
		}
		return
	}
	for _, p := range now {
		if p.IsValid() && (fresh || !has(was, p) || old.UserName != s.UserName) {
			b.Query(st.q.insByIPv6, bucketOf(p), p.String(), k.NAS, k.ID, uStr(s.UserName), ttl)
		}
	}
	for _, p := range was {
		if p.IsValid() && !has(now, p) {
			b.Query(st.q.delByIPv6, bucketOf(p), p.String(), k.NAS, k.ID)
		}
	}
}

func has(c session.Claims, p netip.Prefix) bool { return slices.Contains(c[:], p) }

func union(a, b session.Claims) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range append(a[:], b[:]...) {
		if p.IsValid() && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// ipv6Keys returns the sessions whose claims in one bucket cover q.
func (st *Store) ipv6Keys(ctx context.Context, bucket string, q netip.Prefix) ([]session.Key, error) {
	start := time.Now()
	it := st.s.Query(st.q.selByIPv6, bucket).Consistency(st.cons).IterContext(ctx)
	var keys []session.Key
	var text string
	var k session.Key
	for it.Scan(&text, &k.NAS, &k.ID) {
		if p, err := netip.ParsePrefix(text); err == nil && session.Covers(p, q) && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	err := it.Close()
	st.m.observe("lookup_ipv6", start, err)
	return keys, err
}

// byIPv6 is ByIPv6 of the store and of the hybrid, reading the sessions through get.
func (st *Store) byIPv6(ctx context.Context, q netip.Prefix, get func(context.Context, session.Key) (*session.Session, error)) (*session.Session, error) {
	if !q.IsValid() || !q.Addr().Is6() || q.Addr().Is4In6() {
		return nil, session.ErrNotFound
	}
	q = q.Masked()
	for _, l := range bucketLens {
		if l > q.Bits() {
			continue // claims this long cannot cover q
		}
		b, _ := q.Addr().Prefix(l)
		keys, err := st.ipv6Keys(ctx, b.String(), q)
		if err != nil {
			return nil, err
		}
		if len(keys) == 0 {
			continue
		}
		sessions, err := st.getMany(ctx, keys, get)
		if err != nil {
			return nil, err
		}
		// A row whose session no longer holds the claim (changed, expired) is passed over:
		// the session must still cover q with a claim of this bucket.
		live := sessions[:0]
		for _, s := range sessions {
			if s.IPv6Match(q) >= l {
				live = append(live, s)
			}
		}
		if best := session.BestIPv6(q, live); best != nil {
			return best, nil
		}
	}
	return nil, session.ErrNotFound
}

// ByIPv6 returns the active session whose IPv6 claim is the longest covering q.
func (st *Store) ByIPv6(ctx context.Context, q netip.Prefix) (*session.Session, error) {
	return st.byIPv6(ctx, q, st.Get)
}

// ByIPv6 reads the lookup from Cassandra and the sessions through the cache; when Cassandra
// cannot answer, the cached sessions.
func (h *Hybrid) ByIPv6(ctx context.Context, q netip.Prefix) (*session.Session, error) {
	s, err := h.byIPv6(ctx, q, h.Get)
	if err != nil && !errors.Is(err, session.ErrNotFound) {
		if best := session.BestIPv6(q, h.scan(func(s *session.Session) bool { return s.IPv6Match(q) >= 0 })); best != nil {
			return best, nil
		}
	}
	return s, err
}
