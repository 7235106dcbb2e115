// Package embedded is the single-node session store: sessions in memory, sharded by key so
// that concurrent writers rarely meet, with the lookups by user and NAS kept per shard, the
// one by framed IP sharded by address and the one by IPv6 prefix (longest match), expiry of
// silent sessions, a bounded history of closed sessions, and a snapshot written on shutdown
// and read back on start so that a restart loses nothing.
package embedded

import (
	"context"
	"errors"
	"hash/maphash"
	"log/slog"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// Options configure the store.
type Options struct {
	Shards        int // power of two
	SnapshotFile  string
	HistorySize   int
	SweepInterval time.Duration
	// Expiry returns how long a session may stay silent before it is closed (nil or 0: never).
	Expiry func(*session.Session) time.Duration
	// TombstoneTTL is how long a stopped key is remembered so that a late Interim-Update
	// does not resurrect it. Default 10 minutes.
	TombstoneTTL time.Duration
	// MaxTombstones bounds the keys remembered (default 250,000, about 25 MB): at a high
	// rate of stopped sessions the oldest are forgotten before TombstoneTTL.
	MaxTombstones int
	Log           *slog.Logger
	Now           func() time.Time
	Metrics       *metrics.Metrics // the node's; nil: unregistered ones
}

// Store is the embedded store.
type Store struct {
	opt     Options
	seed    maphash.Seed
	shards  []shard
	mask    uint64
	ips     []ipShard // the framed-IP lookup, by address (same count and mask as shards)
	v6      v6Index   // the IPv6 lookup (longest-prefix match)
	active  atomic.Int64
	history history
	stop    chan struct{}
	done    chan struct{}
	closed  atomic.Bool
	nodes   nodes     // the Diameter node registry (nodes.go)
	sqns    sqns      // the AKA sequence numbers (sqn.go)
	temp    ephemeral // EAP conversation state between rounds (ephemeral.go)
}

type shard struct {
	mu       sync.Mutex
	sessions map[session.Key]*session.Session
	// byUser holds a short list per user (the field sees at most ~40 sessions a user): a
	// slice costs a fraction of a map per user, in memory and in allocations per Start.
	byUser map[string][]session.Key
	// byCalling: a subscriber's MSISDN or a client's MAC, a few sessions each.
	byCalling map[string][]session.Key
	byNAS     map[string]map[session.Key]struct{}
	// Tombstones in two generations: when the newer one is full it becomes the older one and
	// the older one is dropped, so their number stays bounded (Options.MaxTombstones).
	stopped, stoppedOld map[session.Key]tomb
}

// tomb is what a tombstone remembers: when it was made (it is forgotten TombstoneTTL later)
// and the Stop's event time (session.Reopens).
type tomb struct{ at, stop time.Time }

// ipShard holds the sessions claiming each framed IP, for the addresses hashed to it. Sharded
// by address rather than by session, a lookup by address takes one lock, not one per session
// shard: every Accounting-Start looks its address up (session.supersedeStale). An address is
// normally claimed by one session; several claim it when the NAS gave it out again before an
// older session's Stop arrived, and all are kept, so that each can still be found. Lock
// order: a session shard, then an ipShard.
type ipShard struct {
	mu    sync.Mutex
	claim map[netip.Addr][]session.Key
}

// v6Index is the lookup by IPv6: the sessions claiming each prefix (session.Claims: the
// delegated and framed prefixes, the framed address as a /128) and how many claims there are
// of each length, so that a longest-prefix match probes only the lengths in use (typically
// 128, 64, 56), longest first: one map lookup per length, no tree to keep balanced. One
// lock, not shards: claims change on Start, Stop and a changed prefix only (an Interim
// repeats them), and a lookup probes several lengths under it. Lock order: a session shard,
// then v6Index.
type v6Index struct {
	mu    sync.RWMutex
	claim map[netip.Prefix][]session.Key
	lens  [129]int
}

func (x *v6Index) add(c session.Claims, k session.Key) {
	if !c[0].IsValid() {
		return
	}
	x.mu.Lock()
	for _, p := range c {
		if p.IsValid() && !slices.Contains(x.claim[p], k) {
			x.claim[p] = append(x.claim[p], k)
			x.lens[p.Bits()]++
		}
	}
	x.mu.Unlock()
}

func (x *v6Index) remove(c session.Claims, k session.Key) {
	if !c[0].IsValid() {
		return
	}
	x.mu.Lock()
	for _, p := range c {
		if p.IsValid() && slices.Contains(x.claim[p], k) {
			removeKey(x.claim, p, k)
			x.lens[p.Bits()]--
		}
	}
	x.mu.Unlock()
}

// covering appends to buf the keys claiming the longest prefix of length below from that
// covers q, and returns them with that length (-1: none). below is 129 for the first call;
// a caller that finds none of the keys active asks again below the length returned.
func (x *v6Index) covering(q netip.Prefix, below int, buf []session.Key) ([]session.Key, int) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	for l := min(q.Bits(), below-1); l >= 0; l-- {
		if x.lens[l] == 0 {
			continue
		}
		p, _ := q.Addr().Prefix(l)
		if keys := x.claim[p]; len(keys) > 0 {
			return append(buf, keys...), l
		}
	}
	return buf, -1
}

// ErrClosed is returned after Close.
var ErrClosed = errors.New("embedded store: closed")

// Open creates the store and loads the snapshot if one exists.
func Open(opt Options) (*Store, error) {
	d := config.Default().Session.Embedded // the configuration's defaults, not copies of them
	if opt.Shards <= 0 || opt.Shards&(opt.Shards-1) != 0 {
		opt.Shards = d.Shards
	}
	if opt.SweepInterval <= 0 {
		opt.SweepInterval = d.SweepInterval.D()
	}
	if opt.TombstoneTTL <= 0 {
		opt.TombstoneTTL = 10 * time.Minute
	}
	if opt.MaxTombstones <= 0 {
		opt.MaxTombstones = 250_000
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Metrics == nil {
		opt.Metrics = metrics.New(metrics.Factory{})
	}
	s := &Store{opt: opt, seed: maphash.MakeSeed(), shards: make([]shard, opt.Shards), mask: uint64(opt.Shards - 1),
		ips: make([]ipShard, opt.Shards), v6: v6Index{claim: map[netip.Prefix][]session.Key{}},
		history: history{max: opt.HistorySize}, stop: make(chan struct{}), done: make(chan struct{})}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.sessions = map[session.Key]*session.Session{}
		sh.byUser = map[string][]session.Key{}
		sh.byCalling = map[string][]session.Key{}
		sh.byNAS = map[string]map[session.Key]struct{}{}
		sh.stopped = map[session.Key]tomb{}
		sh.stoppedOld = map[session.Key]tomb{}
		s.ips[i].claim = map[netip.Addr][]session.Key{}
	}
	if opt.SnapshotFile != "" {
		n, err := s.loadSnapshot(opt.SnapshotFile)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			opt.Log.Info("session snapshot loaded", "file", opt.SnapshotFile, "sessions", n)
		}
	}
	go s.sweepLoop()
	return s, nil
}

func (s *Store) shardOf(k session.Key) *shard {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(k.NAS)
	h.WriteByte(0)
	h.WriteString(k.ID)
	return &s.shards[h.Sum64()&s.mask]
}

func (s *Store) ipShardOf(ip netip.Addr) *ipShard {
	return &s.ips[maphash.Comparable(s.seed, ip)&s.mask]
}

// Apply implements session.Store.
func (s *Store) Apply(_ context.Context, u *session.Update, o session.WriteOptions) (session.Result, error) {
	if s.closed.Load() {
		return session.Result{}, ErrClosed
	}
	k := u.Session.Key
	now := s.opt.Now()
	sh := s.shardOf(k)
	sh.mu.Lock()
	cur, ok := sh.sessions[k]
	if !ok {
		if tb, dead := sh.dead(k); dead && !session.Reopens(tb.stop, u, now) {
			sh.mu.Unlock()
			if u.Kind == session.KindStop {
				// The Stop of a session already closed (a retransmission, or the real Stop of a
				// session closed by expiry or Accounting-On): it completes that history record
				// rather than adding a second one.
				s.history.mergeStop(u, o, now)
			}
			// A late Interim-Update, or a Start no later than the Stop (replayed, retransmitted),
			// of a session already stopped: acknowledge, keep it closed.
			return session.Result{}, nil
		}
		delete(sh.stopped, k)
		delete(sh.stoppedOld, k)
		cur = &session.Session{}
	}
	was := entryOf(cur)
	session.Merge(cur, u, o, now)
	if cur.State == session.Stopped {
		if ok {
			s.unindex(sh, was)
			delete(sh.sessions, k)
			s.active.Add(-1)
			s.opt.Metrics.SessionsActive.Dec()
		}
		s.tombstone(sh, k, now, cur.StopTime)
		sh.mu.Unlock()
		s.history.add(cur)
		return session.Result{}, nil
	}
	if !ok {
		sh.sessions[k] = cur
		s.active.Add(1)
		s.opt.Metrics.SessionsActive.Inc()
		s.index(sh, entryOf(cur))
	} else if e := entryOf(cur); e != was { // most updates (Interims) change no lookup
		s.unindex(sh, was)
		s.index(sh, e)
	}
	sh.mu.Unlock()
	return session.Result{Created: !ok}, nil
}

// entry is what the lookups hold of a session.
type entry struct {
	key     session.Key
	user    string
	calling string
	ip      netip.Addr
	v6      session.Claims
}

func entryOf(x *session.Session) entry {
	return entry{x.Key, x.UserName, x.CallingStationID, x.FramedIP, x.IPv6Claims()}
}

// index adds a session to the lookups; sh is its shard, locked.
func (s *Store) index(sh *shard, e entry) {
	if e.user != "" {
		addKey(sh.byUser, e.user, e.key)
	}
	if e.calling != "" {
		addKey(sh.byCalling, e.calling, e.key)
	}
	if e.ip.IsValid() {
		is := s.ipShardOf(e.ip)
		is.mu.Lock()
		addKey(is.claim, e.ip, e.key)
		is.mu.Unlock()
	}
	s.v6.add(e.v6, e.key)
	if e.key.NAS == session.GxNAS {
		return
	}
	m := sh.byNAS[e.key.NAS]
	if m == nil {
		m = map[session.Key]struct{}{}
		sh.byNAS[e.key.NAS] = m
	}
	m[e.key] = struct{}{}
}

// unindex removes a session from the lookups; sh is its shard, locked.
func (s *Store) unindex(sh *shard, e entry) {
	removeKey(sh.byUser, e.user, e.key)
	removeKey(sh.byCalling, e.calling, e.key)
	if e.ip.IsValid() {
		is := s.ipShardOf(e.ip)
		is.mu.Lock()
		removeKey(is.claim, e.ip, e.key)
		is.mu.Unlock()
	}
	s.v6.remove(e.v6, e.key)
	if m := sh.byNAS[e.key.NAS]; m != nil {
		delete(m, e.key)
		if len(m) == 0 {
			delete(sh.byNAS, e.key.NAS)
		}
	}
}

// addKey and removeKey keep the short key list of one lookup entry (a user's sessions, an
// address's claimants).
func addKey[I comparable](m map[I][]session.Key, i I, k session.Key) {
	if keys := m[i]; !slices.Contains(keys, k) {
		m[i] = append(keys, k)
	}
}

func removeKey[I comparable](m map[I][]session.Key, i I, k session.Key) {
	keys := m[i]
	j := slices.Index(keys, k)
	if j < 0 {
		return
	}
	if keys = slices.Delete(keys, j, j+1); len(keys) == 0 {
		delete(m, i)
	} else {
		m[i] = keys
	}
}

// closeWhere closes the active sessions of one shard that match, into the history.
func (s *Store) closeWhere(sh *shard, keys []session.Key, at time.Time, cause uint32) int {
	n := 0
	for _, k := range keys {
		x, ok := sh.sessions[k]
		if !ok {
			continue
		}
		s.unindex(sh, entryOf(x))
		delete(sh.sessions, k)
		s.tombstone(sh, k, at, at)
		x.State, x.StopTime, x.TerminateCause = session.Stopped, at, cause
		s.history.add(x)
		n++
	}
	s.active.Add(int64(-n))
	s.opt.Metrics.SessionsActive.Sub(float64(n))
	return n
}

// CloseNAS implements session.Store (Accounting-On / Accounting-Off).
func (s *Store) CloseNAS(_ context.Context, nas string, at time.Time, cause uint32) (int, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	total := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		keys := make([]session.Key, 0, len(sh.byNAS[nas]))
		for k := range sh.byNAS[nas] {
			keys = append(keys, k)
		}
		total += s.closeWhere(sh, keys, at, cause)
		sh.mu.Unlock()
	}
	return total, nil
}

// Get implements session.Store.
func (s *Store) Get(ctx context.Context, k session.Key) (*session.Session, error) {
	x, err := s.GetValue(ctx, k)
	if err != nil {
		return nil, err
	}
	return &x, nil
}

var _ session.ValueGetter = (*Store)(nil)

// GetValue implements session.ValueGetter.
func (s *Store) GetValue(_ context.Context, k session.Key) (session.Session, error) {
	sh := s.shardOf(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if x, ok := sh.sessions[k]; ok {
		return copyOf(x), nil
	}
	return session.Session{}, session.ErrNotFound
}

func (s *Store) collect(pick func(*shard) []session.Key) []*session.Session {
	var out []*session.Session
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, k := range pick(sh) {
			if x, ok := sh.sessions[k]; ok {
				out = append(out, clone(x))
			}
		}
		sh.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartTime.Before(out[j].StartTime) })
	return out
}

func keysOf(m map[session.Key]struct{}) []session.Key {
	out := make([]session.Key, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// ByUser implements session.Store.
func (s *Store) ByUser(_ context.Context, user string) ([]*session.Session, error) {
	return s.collect(func(sh *shard) []session.Key { return slices.Clone(sh.byUser[user]) }), nil
}

// ByCallingStation implements session.Store.
func (s *Store) ByCallingStation(_ context.Context, id string) ([]*session.Session, error) {
	return s.collect(func(sh *shard) []session.Key { return slices.Clone(sh.byCalling[id]) }), nil
}

// ByNAS implements session.Store.
func (s *Store) ByNAS(_ context.Context, nas string) ([]*session.Session, error) {
	return s.collect(func(sh *shard) []session.Key { return keysOf(sh.byNAS[nas]) }), nil
}

// ByFramedIP implements session.Store. An address is unique among active sessions; should
// several claim it (the NAS reassigned it before the old Stop arrived), the session seen
// last wins.
func (s *Store) ByFramedIP(_ context.Context, ip netip.Addr) (*session.Session, error) {
	var buf [4]session.Key
	var found *session.Session
	for _, k := range s.claimants(ip, buf[:0]) {
		sh := s.shardOf(k)
		sh.mu.Lock()
		if x, ok := sh.sessions[k]; ok && (found == nil || x.LastSeen.After(found.LastSeen)) {
			found = clone(x)
		}
		sh.mu.Unlock()
	}
	if found == nil {
		return nil, session.ErrNotFound
	}
	return found, nil
}

// ByIPv6 implements session.Store: the longest claim covering q; among the sessions
// holding it, the one seen last.
func (s *Store) ByIPv6(_ context.Context, q netip.Prefix) (*session.Session, error) {
	if !q.IsValid() || !q.Addr().Is6() {
		return nil, session.ErrNotFound
	}
	q = q.Masked()
	var buf [4]session.Key
	for below := 129; below > 0; {
		keys, l := s.v6.covering(q, below, buf[:0])
		if l < 0 {
			break
		}
		var found *session.Session
		for _, k := range keys {
			sh := s.shardOf(k)
			sh.mu.Lock()
			if x, ok := sh.sessions[k]; ok && x.IPv6Match(q) >= l && (found == nil || x.LastSeen.After(found.LastSeen)) {
				found = clone(x)
			}
			sh.mu.Unlock()
		}
		if found != nil {
			return found, nil
		}
		below = l // the claim went away meanwhile: a shorter one may still cover q
	}
	return nil, session.ErrNotFound
}

// MatchFramedIP implements session.FramedIPMatcher.
func (s *Store) MatchFramedIP(ip netip.Addr, max int, match func(*session.Session) bool) []session.Key {
	var buf [4]session.Key
	var out []session.Key
	for _, k := range s.claimants(ip, buf[:0]) {
		if len(out) == max {
			break
		}
		sh := s.shardOf(k)
		sh.mu.Lock()
		if x, ok := sh.sessions[k]; ok && match(x) {
			out = append(out, k)
		}
		sh.mu.Unlock()
	}
	return out
}

// claimants appends to buf the keys of the sessions claiming ip: a copy, read under the
// address shard's lock alone (each session is then looked at under its own shard's lock).
func (s *Store) claimants(ip netip.Addr, buf []session.Key) []session.Key {
	is := s.ipShardOf(ip)
	is.mu.Lock()
	defer is.mu.Unlock()
	return append(buf, is.claim[ip]...)
}

// History implements session.Store.
func (s *Store) History(_ context.Context, user string, limit int) ([]*session.Session, error) {
	return s.history.find(user, limit), nil
}

// Len is the number of active sessions.
func (s *Store) Len() int { return int(s.active.Load()) }

// Ready implements session.Store.
func (s *Store) Ready(context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// Close stops the sweeper and writes the snapshot.
func (s *Store) Close(context.Context) error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(s.stop)
	<-s.done
	s.opt.Metrics.SessionsActive.Sub(float64(s.active.Load()))
	if s.opt.SnapshotFile == "" {
		return nil
	}
	n, err := s.writeSnapshot(s.opt.SnapshotFile)
	if err == nil {
		s.opt.Log.Info("session snapshot written", "file", s.opt.SnapshotFile, "sessions", n)
	}
	return err
}

func (s *Store) sweepLoop() {
	defer close(s.done)
	t := time.NewTicker(s.opt.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.Sweep()
		}
	}
}

// terminateCauseLostService (RFC 2866 Acct-Terminate-Cause 3) is recorded for sessions closed
// because the NAS stopped reporting them.
const terminateCauseLostService = 3

// Sweep closes silent sessions and forgets old tombstones; it runs every SweepInterval.
func (s *Store) Sweep() int {
	now := s.opt.Now()
	expired := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		var keys []session.Key
		if s.opt.Expiry != nil {
			for k, x := range sh.sessions {
				if ttl := s.opt.Expiry(x); ttl > 0 && now.Sub(x.LastSeen) > ttl {
					keys = append(keys, k)
				}
			}
		}
		expired += s.closeWhere(sh, keys, now, terminateCauseLostService)
		for _, m := range []map[session.Key]tomb{sh.stopped, sh.stoppedOld} {
			for k, tb := range m {
				if now.Sub(tb.at) > s.opt.TombstoneTTL {
					delete(m, k)
				}
			}
		}
		sh.mu.Unlock()
	}
	if expired > 0 {
		s.opt.Metrics.SessionsExpired.Add(float64(expired))
		s.opt.Log.Info("silent sessions expired", "count", expired)
	}
	return expired
}

// tombstone remembers at at that k stopped, its Stop's event time stop (sh locked).
func (s *Store) tombstone(sh *shard, k session.Key, at, stop time.Time) {
	if 2*len(sh.stopped) >= s.opt.MaxTombstones/len(s.shards) {
		sh.stopped, sh.stoppedOld = sh.stoppedOld, sh.stopped
		clear(sh.stopped)
	}
	sh.stopped[k] = tomb{at, stop}
}

// dead returns the tombstone of k if it is a remembered stopped session (sh locked).
func (sh *shard) dead(k session.Key) (tomb, bool) {
	if tb, ok := sh.stopped[k]; ok {
		return tb, true
	}
	tb, ok := sh.stoppedOld[k]
	return tb, ok
}

func clone(x *session.Session) *session.Session {
	c := copyOf(x)
	return &c
}

// copyOf is a copy of x the caller may keep: Merge writes into a session's Class.
func copyOf(x *session.Session) session.Session {
	c := *x
	c.Class = append([]byte(nil), x.Class...)
	return c
}

// history is a bounded ring of closed sessions, newest last.
type history struct {
	mu   sync.Mutex
	max  int
	ring []*session.Session
	next int
}

func (h *history) add(x *session.Session) {
	if h.max <= 0 {
		return
	}
	h.mu.Lock()
	if len(h.ring) < h.max {
		h.ring = append(h.ring, x)
	} else {
		h.ring[h.next] = x
		h.next = (h.next + 1) % h.max
	}
	h.mu.Unlock()
}

// mergeStop merges a Stop into the newest history record of its session, or records it
// when the history no longer holds one.
func (h *history) mergeStop(u *session.Update, o session.WriteOptions, now time.Time) {
	h.mu.Lock()
	n := len(h.ring)
	for i := 0; i < n; i++ {
		if x := h.ring[(h.next+n-1-i)%n]; x.Key == u.Session.Key {
			session.Merge(x, u, o, now)
			h.mu.Unlock()
			return
		}
	}
	h.mu.Unlock()
	x := &session.Session{}
	session.Merge(x, u, o, now)
	h.add(x)
}

func (h *history) find(user string, limit int) []*session.Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*session.Session
	n := len(h.ring)
	for i := 0; i < n; i++ {
		x := h.ring[(h.next+n-1-i)%n] // newest first
		if user == "" || x.UserName == user {
			out = append(out, clone(x))
			if limit > 0 && len(out) >= limit {
				break
			}
		}
	}
	return out
}

func (h *history) all() []*session.Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.ring)
	out := make([]*session.Session, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, h.ring[(h.next+i)%n]) // oldest first
	}
	return out
}
