package subscriber

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// LDAP is the subscriber source backed by an LDAP directory (docs/ldap.md).
//
// Every answer goes through a size-bounded profile cache. Auth (Lookup) serves fresh cached
// profiles and asks LDAP for the rest, never waiting past its context: when LDAP is down or
// slow it gets the expired cached profile if cache.serveStale allows, else ErrUnavailable.
// Accounting (CachedLookup) reads the cache only and never waits for LDAP. Concurrent
// lookups of one user share one search. After a connection failure LDAP is not tried again
// for retryInterval, so an outage costs no time per request.
type LDAP struct {
	cfg    config.LDAP
	check  func(*Profile) error
	log    *slog.Logger
	m      *Metrics
	cache  *profileCache
	tlsCfg *tls.Config
	scope  int
	attrs  []string
	urls   []*url.URL
	// profiles are the named profiles of cfg.ProfilesFile (nil without one).
	profiles map[string]Profile

	slots []*ldapSlot
	next  atomic.Uint64
	// downUntil (unix ns) is when LDAP may be tried again after a connection failure.
	downUntil atomic.Int64

	mu      sync.Mutex
	flights map[string]*flight
	// refresh bounds the background refreshes started by CachedLookup.
	refresh chan struct{}
	closed  atomic.Bool
	wg      sync.WaitGroup

	// now is the clock (tests).
	now func() time.Time
}

type ldapSlot struct {
	mu   sync.Mutex
	conn *ldap.Conn
}

// flight is one search shared by every concurrent lookup of the same user.
type flight struct {
	done chan struct{}
	sub  *Subscriber
	err  error
}

// errInvalidEntry marks an LDAP entry that cannot be turned into a profile (auth rejects).
var errInvalidEntry = errors.New("invalid LDAP subscriber entry")

// maxUsernameLen bounds what is searched for (RFC 2865 User-Name is at most 253 octets).
const maxUsernameLen = 253

// OpenLDAP prepares the LDAP source. It does not wait for LDAP: a node starts while its
// directory is down (auth then rejects, or serves nothing from an empty cache), and
// connects in the background. check (if any) vets each profile read. m are the node's
// metrics (nil: unregistered ones).
func OpenLDAP(cfg config.LDAP, check func(*Profile) error, log *slog.Logger, m *Metrics) (*LDAP, error) {
	if m == nil {
		m = NewMetrics(metrics.Factory{}, metrics.New(metrics.Factory{}))
	}
	l := &LDAP{cfg: cfg, check: check, log: log, m: m, cache: newProfileCache(cfg.Cache.Size),
		attrs: cfg.Attributes.Names(), flights: map[string]*flight{},
		refresh: make(chan struct{}, 4*cfg.PoolSize), now: time.Now}
	switch cfg.Scope {
	case "base":
		l.scope = ldap.ScopeBaseObject
	case "one":
		l.scope = ldap.ScopeSingleLevel
	default:
		l.scope = ldap.ScopeWholeSubtree
	}
	if cfg.ProfilesFile != "" {
		raw, err := os.ReadFile(cfg.ProfilesFile)
		if err != nil {
			return nil, fmt.Errorf("subscribers.ldap.profilesFile: %w", err)
		}
		if l.profiles, err = ParseProfiles(raw, check); err != nil {
			return nil, fmt.Errorf("subscribers.ldap.profilesFile %s: %w", cfg.ProfilesFile, err)
		}
	}
	needTLS := cfg.StartTLS
	for i, s := range cfg.URLs {
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("subscribers.ldap.urls[%d]: %w", i, err)
		}
		needTLS = needTLS || u.Scheme == "ldaps"
		l.urls = append(l.urls, u)
	}
	if needTLS {
		l.tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: cfg.ServerName}
		if cfg.CAFile != "" {
			pem, err := os.ReadFile(cfg.CAFile)
			if err != nil {
				return nil, fmt.Errorf("subscribers.ldap.caFile: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("subscribers.ldap.caFile: no PEM certificate in %s", cfg.CAFile)
			}
			l.tlsCfg.RootCAs = pool
		}
	}
	if cfg.BindPasswordFile != "" {
		if _, err := l.bindPassword(); err != nil {
			return nil, fmt.Errorf("subscribers.ldap.bindPasswordFile: %w", err)
		}
	}
	for range cfg.PoolSize {
		l.slots = append(l.slots, &ldapSlot{})
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ConnectTimeout.D())
		defer cancel()
		if _, _, _, err := l.conn(ctx); err != nil {
			log.Warn("LDAP not reachable at start; auth serves the cache until it is", "err", err)
		} else {
			log.Info("LDAP connected", "urls", strings.Join(cfg.URLs, ","))
		}
	}()
	return l, nil
}

// Close closes the pool's connections. Lookups after Close fail with ErrUnavailable.
func (l *LDAP) Close() error {
	if !l.closed.CompareAndSwap(false, true) {
		return nil
	}
	l.wg.Wait()
	for _, s := range l.slots {
		s.mu.Lock()
		if s.conn != nil {
			_ = s.conn.Close()
			s.conn = nil
			l.m.ldapConnections.Dec()
		}
		s.mu.Unlock()
	}
	return nil
}

// Len is the number of cache entries.
func (l *LDAP) Len() int { return l.cache.len() }

func (l *LDAP) fresh(e cacheEntry, now time.Time) bool {
	ttl := l.cfg.Cache.TTL.D()
	if e.sub == nil {
		ttl = l.cfg.Cache.NegativeTTL.D()
	}
	return now.Sub(e.fetched) < ttl
}

func (l *LDAP) staleUsable(e cacheEntry, now time.Time) bool {
	if e.sub == nil {
		return false
	}
	ms := l.cfg.Cache.MaxStale.D()
	return ms == 0 || now.Sub(e.fetched) < l.cfg.Cache.TTL.D()+ms
}

// Lookup implements Source (auth).
func (l *LDAP) Lookup(ctx context.Context, username string) (*Subscriber, error) {
	if username == "" || len(username) > maxUsernameLen {
		return nil, ErrNotFound
	}
	now := l.now()
	e, cached := l.cache.get(username)
	if cached && l.fresh(e, now) {
		if e.sub == nil {
			l.m.ldapCache.WithLabelValues("negative_hit").Inc()
			return nil, ErrNotFound
		}
		l.m.ldapCache.WithLabelValues("hit").Inc()
		return e.sub, nil
	}
	l.m.ldapCache.WithLabelValues("miss").Inc()
	sub, err := l.fetch(ctx, username)
	if err == nil || !errors.Is(err, ErrUnavailable) {
		return sub, err
	}
	if cached && l.cfg.Cache.ServeStale && l.staleUsable(e, now) {
		l.m.ldapCache.WithLabelValues("stale").Inc()
		if l.log.Enabled(ctx, slog.LevelDebug) {
			l.log.Debug("LDAP unavailable: serving a stale profile", "user", username, "age", now.Sub(e.fetched).String(), "err", err)
		}
		return e.sub, nil
	}
	l.m.ldapCache.WithLabelValues("unavailable").Inc()
	return nil, err
}

// CachedLookup returns the cached profile of username, fresh or expired, without ever
// waiting for LDAP (accounting). A missing or expired entry starts a bounded background
// refresh so that the next message of the session finds it.
func (l *LDAP) CachedLookup(username string) (*Subscriber, bool) {
	if username == "" || len(username) > maxUsernameLen {
		return nil, false
	}
	e, ok := l.cache.get(username)
	now := l.now()
	switch {
	case ok && e.sub != nil && l.fresh(e, now):
		l.m.ldapCachedOnly.WithLabelValues("hit").Inc()
		return e.sub, true
	case ok && e.sub != nil:
		l.m.ldapCachedOnly.WithLabelValues("stale").Inc()
		l.refreshInBackground(username)
		return e.sub, true
	case ok && l.fresh(e, now):
		l.m.ldapCachedOnly.WithLabelValues("miss").Inc() // known not to exist
		return nil, false
	}
	l.m.ldapCachedOnly.WithLabelValues("miss").Inc()
	l.refreshInBackground(username)
	return nil, false
}

func (l *LDAP) refreshInBackground(username string) {
	if l.closed.Load() || l.isDown() {
		return
	}
	select {
	case l.refresh <- struct{}{}:
	default:
		return // enough refreshes under way
	}
	go func() {
		defer func() { <-l.refresh }()
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.ConnectTimeout.D()+l.cfg.Timeout.D())
		defer cancel()
		_, _ = l.fetch(ctx, username)
	}()
}

func (l *LDAP) isDown() bool {
	until := l.downUntil.Load()
	return until != 0 && l.now().UnixNano() < until
}

func (l *LDAP) markDown(err error) {
	l.m.ldapUp.Set(0)
	if d := l.cfg.RetryInterval.D(); d > 0 {
		if l.downUntil.Swap(l.now().Add(d).UnixNano()) == 0 {
			l.log.Warn("LDAP unavailable: failing fast", "retryIn", d.String(), "err", err)
		}
	}
}

func (l *LDAP) markUp() {
	l.m.ldapUp.Set(1)
	if l.downUntil.Swap(0) != 0 {
		l.log.Info("LDAP available again")
	}
}

// fetch asks LDAP (one search per user at a time) and caches the answer. It returns when
// the search ends or ctx does, whichever comes first; the search itself is bounded by
// connectTimeout + timeout and fills the cache even if nobody waits any more.
func (l *LDAP) fetch(ctx context.Context, username string) (*Subscriber, error) {
	if l.closed.Load() {
		return nil, fmt.Errorf("%w: LDAP source closed", ErrUnavailable)
	}
	if l.isDown() {
		return nil, fmt.Errorf("%w: LDAP down (retrying after %s)", ErrUnavailable, l.cfg.RetryInterval.D())
	}
	l.mu.Lock()
	f, ok := l.flights[username]
	if !ok {
		f = &flight{done: make(chan struct{})}
		l.flights[username] = f
		go l.run(username, f)
	}
	l.mu.Unlock()
	select {
	case <-f.done:
		return f.sub, f.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: LDAP lookup: %v", ErrUnavailable, ctx.Err())
	}
}

func (l *LDAP) run(username string, f *flight) {
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.ConnectTimeout.D()+l.cfg.Timeout.D())
	defer cancel()
	started := l.now()
	f.sub, f.err = l.search(ctx, username)
	switch {
	case f.err == nil:
		l.m.ldapCacheEntries.Add(float64(l.cache.put(username, f.sub, started)))
	case errors.Is(f.err, ErrNotFound) && l.cfg.Cache.NegativeTTL > 0:
		l.m.ldapCacheEntries.Add(float64(l.cache.put(username, nil, started)))
	}
	l.mu.Lock()
	delete(l.flights, username)
	l.mu.Unlock()
	close(f.done)
}

// search runs one search, retrying once on a new connection when a pooled one turns out
// dead (e.g. LDAP restarted since it was opened).
func (l *LDAP) search(ctx context.Context, username string) (*Subscriber, error) {
	filter := strings.ReplaceAll(l.cfg.Filter, config.LDAPUsernamePlaceholder, ldap.EscapeFilter(username))
	req := ldap.NewSearchRequest(l.cfg.BaseDN, l.scope, ldap.NeverDerefAliases, 2,
		max(1, int(l.cfg.Timeout.D()/time.Second)), false, filter, l.attrs, nil)
	for attempt := 0; ; attempt++ {
		slot, conn, fresh, err := l.conn(ctx)
		if err != nil {
			l.m.ldapSearches.WithLabelValues("error").Inc()
			return nil, fmt.Errorf("%w: LDAP: %v", ErrUnavailable, err)
		}
		start := time.Now()
		res, err := conn.Search(req)
		l.m.ldapSearchDuration.Observe(time.Since(start).Seconds())
		l.m.transactions.WithLabelValues("ldap").Inc()
		if err == nil || ldap.IsErrorWithCode(err, ldap.LDAPResultSizeLimitExceeded) {
			l.markUp()
			var entries []*ldap.Entry
			if res != nil {
				entries = res.Entries
			}
			sub, err := l.toSubscriber(username, entries)
			switch {
			case err == nil:
				l.m.ldapSearches.WithLabelValues("found").Inc()
			case errors.Is(err, ErrNotFound):
				l.m.ldapSearches.WithLabelValues("not_found").Inc()
			default:
				l.m.ldapSearches.WithLabelValues("invalid").Inc()
				l.log.Warn("LDAP entry rejected", "user", username, "err", err)
			}
			return sub, err
		}
		if ldap.IsErrorWithCode(err, ldap.ErrorNetwork) || conn.IsClosing() {
			l.drop(slot, conn)
			timeout := isTimeout(err)
			if timeout {
				l.m.ldapConnErrors.WithLabelValues("timeout").Inc()
			} else {
				l.m.ldapConnErrors.WithLabelValues("search").Inc()
			}
			if !fresh && !timeout && attempt == 0 && ctx.Err() == nil {
				continue
			}
			l.markDown(err)
			l.m.ldapSearches.WithLabelValues("error").Inc()
			return nil, fmt.Errorf("%w: LDAP search: %v", ErrUnavailable, err)
		}
		// The server answered with an error (e.g. no such base DN, busy, unwilling).
		l.m.ldapUp.Set(1)
		l.m.ldapSearches.WithLabelValues("error").Inc()
		return nil, fmt.Errorf("%w: LDAP search: %v", ErrUnavailable, err)
	}
}

// conn returns a pooled connection (round robin), opening it if needed; fresh tells a new one.
func (l *LDAP) conn(ctx context.Context) (*ldapSlot, *ldap.Conn, bool, error) {
	s := l.slots[l.next.Add(1)%uint64(len(l.slots))]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil && !s.conn.IsClosing() {
		return s, s.conn, false, nil
	}
	if s.conn != nil {
		go s.conn.Close() //nolint:errcheck // already broken
		s.conn = nil
		l.m.ldapConnections.Dec()
	}
	if l.closed.Load() {
		return nil, nil, false, errors.New("LDAP source closed")
	}
	c, err := l.dial(ctx)
	if err != nil {
		l.markDown(err)
		return nil, nil, false, err
	}
	if l.closed.Load() { // Close ran while we dialled
		go c.Close() //nolint:errcheck // never used
		return nil, nil, false, errors.New("LDAP source closed")
	}
	l.markUp()
	s.conn = c
	l.m.ldapConnections.Inc()
	return s, c, true, nil
}

// drop removes a broken connection from its slot.
func (l *LDAP) drop(s *ldapSlot, c *ldap.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == c {
		s.conn = nil
		l.m.ldapConnections.Dec()
		go c.Close() //nolint:errcheck // already broken
	}
}

// dial opens a connection to the first URL that answers.
func (l *LDAP) dial(ctx context.Context) (*ldap.Conn, error) {
	var errs []error
	for _, u := range l.urls {
		c, stage, err := l.dialOne(ctx, u)
		if err == nil {
			return c, nil
		}
		if isTimeout(err) {
			l.m.ldapConnErrors.WithLabelValues("timeout").Inc()
		} else {
			l.m.ldapConnErrors.WithLabelValues(stage).Inc()
		}
		errs = append(errs, fmt.Errorf("%s: %s: %w", u.Redacted(), stage, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// dialOne connects, secures and binds one connection, all within connectTimeout.
func (l *LDAP) dialOne(ctx context.Context, u *url.URL) (*ldap.Conn, string, error) {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "389"
		if u.Scheme == "ldaps" {
			port = "636"
		}
	}
	deadline := time.Now().Add(l.cfg.ConnectTimeout.D())
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	d := net.Dialer{Deadline: deadline}
	raw, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, "dial", err
	}
	_ = raw.SetDeadline(deadline) // the whole set-up: TLS, StartTLS, bind
	nc := raw
	if u.Scheme == "ldaps" {
		tc := tls.Client(raw, l.tlsFor(host))
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, "tls", err
		}
		nc = tc
	}
	conn := ldap.NewConn(nc, u.Scheme == "ldaps")
	conn.Start()
	conn.SetTimeout(time.Until(deadline))
	if l.cfg.StartTLS && u.Scheme == "ldap" {
		if err := conn.StartTLS(l.tlsFor(host)); err != nil {
			conn.Close()
			return nil, "tls", err
		}
	}
	if l.cfg.BindDN != "" {
		pw, err := l.bindPassword()
		if err != nil {
			conn.Close()
			return nil, "bind", err
		}
		if err := conn.Bind(l.cfg.BindDN, pw); err != nil {
			conn.Close()
			return nil, "bind", err
		}
	}
	_ = raw.SetDeadline(time.Time{})
	conn.SetTimeout(l.cfg.Timeout.D())
	return conn, "", nil
}

func (l *LDAP) tlsFor(host string) *tls.Config {
	c := l.tlsCfg.Clone()
	if c.ServerName == "" {
		c.ServerName = host
	}
	return c
}

// bindPassword reads the bind password file on each connect, so that a rotated Secret is
// used by the next connection; trailing newlines are not part of it.
func (l *LDAP) bindPassword() (string, error) {
	b, err := os.ReadFile(l.cfg.BindPasswordFile)
	if err != nil {
		return "", err
	}
	b = bytes.TrimRight(b, "\r\n")
	if len(b) == 0 {
		return "", fmt.Errorf("%s is empty", l.cfg.BindPasswordFile)
	}
	return string(b), nil
}

// toSubscriber maps the search result to a subscriber (exactly one entry expected).
func (l *LDAP) toSubscriber(username string, entries []*ldap.Entry) (*Subscriber, error) {
	switch len(entries) {
	case 0:
		return nil, ErrNotFound
	case 1:
	default:
		return nil, fmt.Errorf("%w: filter matches more than one entry for %q", errInvalidEntry, username)
	}
	e := entries[0]
	a := l.cfg.Attributes
	get := func(name string) string {
		if name == "" {
			return ""
		}
		return e.GetEqualFoldAttributeValue(name)
	}
	var errs []error
	num := func(name string, bits int) uint64 {
		v := strings.TrimSpace(get(name))
		if v == "" {
			return 0
		}
		n, err := strconv.ParseUint(v, 10, bits)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not a number", name, v))
		}
		return n
	}
	s := &Subscriber{Username: username}
	if a.Password != "" {
		s.Password = get(a.Password)
	}
	if a.NTPassword != "" && s.Password == "" {
		s.NTPassword = strings.TrimSpace(get(a.NTPassword))
		if _, ok := NTHash(s.NTPassword); s.NTPassword != "" && !ok {
			errs = append(errs, fmt.Errorf("%s: not an NT hash (32 hex digits)", a.NTPassword))
		}
	}
	s.Ki, s.OPc, s.OP = strings.TrimSpace(get(a.Ki)), strings.TrimSpace(get(a.OPc)), strings.TrimSpace(get(a.OP))
	s.AMF, s.SQN = strings.TrimSpace(get(a.AMF)), strings.TrimSpace(get(a.SQN))
	if err := s.checkAKA(); err != nil { // names the field, never the value
		errs = append(errs, fmt.Errorf("attributes.%w", err))
	}
	if s.Password == "" && s.NTPassword == "" && s.Ki == "" {
		names := a.Password
		for _, n := range []string{a.NTPassword, a.Ki} {
			if n != "" {
				names = strings.TrimPrefix(names+" or "+n, " or ")
			}
		}
		errs = append(errs, fmt.Errorf("%s: missing or not readable by the bind DN", names))
	}
	switch strings.ToUpper(strings.TrimSpace(get(a.Disabled))) {
	case "", "FALSE", "0", "NO":
	case "TRUE", "1", "YES":
		s.Disabled = true
	default:
		errs = append(errs, fmt.Errorf("%s: %q is not a boolean", a.Disabled, get(a.Disabled)))
	}
	p := &s.Profile
	p.FramedIPAddress = strings.TrimSpace(get(a.FramedIPAddress))
	p.FramedPool = get(a.FramedPool)
	p.SessionTimeout = uint32(num(a.SessionTimeout, 32))
	p.IdleTimeout = uint32(num(a.IdleTimeout, 32))
	p.AcctInterimInterval = uint32(num(a.AcctInterimInterval, 32))
	p.Class = get(a.Class)
	p.FilterID = get(a.FilterID)
	p.RateLimit = get(a.RateLimit)
	p.QuotaOctets = num(a.QuotaOctets, 64)
	p.UsedOctets = num(a.UsedOctets, 64)
	if a.ReplyAttributes != "" {
		for _, v := range e.GetEqualFoldAttributeValues(a.ReplyAttributes) {
			name, val, ok := strings.Cut(v, "=")
			name, val = strings.TrimSpace(name), strings.TrimSpace(val)
			if !ok || name == "" {
				errs = append(errs, fmt.Errorf("%s: %q is not Name=value", a.ReplyAttributes, v))
				continue
			}
			if p.ReplyAttributes == nil {
				p.ReplyAttributes = ReplyAttributes{}
			}
			// Several values of one name are repeated attributes, in the entry's order.
			p.ReplyAttributes[name] = append(p.ReplyAttributes[name], val)
		}
	}
	if name := strings.TrimSpace(get(a.ProfileName)); name != "" {
		if base, ok := l.profiles[name]; ok {
			*p = overlay(base, *p) // what the entry sets wins, as in the subscriber file
		} else {
			errs = append(errs, fmt.Errorf("%s: no profile %q in %s", a.ProfileName, name, l.cfg.ProfilesFile))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w %s: %v", errInvalidEntry, e.DN, err)
	}
	if l.check != nil {
		if err := l.check(p); err != nil {
			return nil, fmt.Errorf("%w %s: %v", errInvalidEntry, e.DN, err)
		}
	}
	return s, nil
}

// isTimeout tells a timeout (LDAP hung or too slow) from other connection failures.
func isTimeout(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "timed out") || strings.Contains(msg, "i/o timeout")
}
