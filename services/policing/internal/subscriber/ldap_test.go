package subscriber

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/testslapd"
)

func testLog() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func openLDAP(t *testing.T, cfg config.LDAP) *LDAP {
	t.Helper()
	c := config.Default()
	c.Subscribers.Source = "ldap"
	c.Subscribers.LDAP = cfg
	c.Clients = []config.Client{{Name: "x", Address: "127.0.0.1", SecretFile: "/dev/null"}}
	if err := c.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	l, err := OpenLDAP(cfg, nil, testLog(), NewMetrics(metrics.With(prometheus.NewRegistry()), metrics.New(metrics.Factory{})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestProfileCacheBoundAndLRU(t *testing.T) {
	c := newProfileCache(3)
	now := time.Now()
	for i := range 3 {
		c.put(fmt.Sprint(i), &Subscriber{Username: fmt.Sprint(i)}, now)
	}
	c.get("0") // 0 is now the most recently used: 1 goes first
	c.put("3", &Subscriber{Username: "3"}, now)
	if c.len() != 3 {
		t.Fatalf("len = %d, want 3", c.len())
	}
	if _, ok := c.get("1"); ok {
		t.Error("least recently used entry not evicted")
	}
	for _, k := range []string{"0", "2", "3"} {
		if _, ok := c.get(k); !ok {
			t.Errorf("%s evicted", k)
		}
	}
	// An older answer does not replace a newer one.
	c.put("0", nil, now.Add(-time.Second))
	if e, _ := c.get("0"); e.sub == nil {
		t.Error("older negative answer replaced a newer profile")
	}
	big := newProfileCache(100000)
	for i := range 200000 {
		big.put(fmt.Sprint(i), nil, now)
	}
	if n := big.len(); n > 100000 || n < 99000 {
		t.Errorf("sharded cache holds %d, want about 100000", n)
	}
}

// With no LDAP server at all, auth gets ErrUnavailable at once, and then fails fast.
func TestLDAPUnreachableFailsFast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg := config.Default().Subscribers.LDAP
	cfg.URLs = []string{"ldap://" + addr}
	cfg.BaseDN = testslapd.Suffix
	cfg.RetryInterval = config.Duration(time.Minute)
	l := openLDAP(t, cfg)
	for i := range 3 {
		start := time.Now()
		_, err := l.Lookup(context.Background(), "user00001")
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("lookup %d: err = %v, want ErrUnavailable", i, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("lookup %d took %v", i, d)
		}
	}
	if _, ok := l.CachedLookup("user00001"); ok {
		t.Error("CachedLookup found a profile in an empty cache")
	}
}

func TestLDAPProfiles(t *testing.T) {
	srv := testslapd.Start(t, 200)
	l := openLDAP(t, srv.Config())
	ctx := context.Background()
	searches := testutil.ToFloat64(l.m.transactions.WithLabelValues("ldap"))

	s, err := l.Lookup(ctx, "user00001")
	if err != nil {
		t.Fatal(err)
	}
	want := Profile{FramedIPAddress: "10.64.0.1", SessionTimeout: 3600, AcctInterimInterval: 300,
		Class: "ldap-gold", RateLimit: "20M/20M", ReplyAttributes: ReplyAttributes{"Framed-MTU": {"1492"}}}
	if s.Password != "pw00001" || s.Disabled || fmt.Sprint(s.Profile) != fmt.Sprint(want) {
		t.Errorf("user00001 = %+v, want password pw00001 and %+v", s, want)
	}
	if s, err := l.Lookup(ctx, "user00100"); err != nil || !s.Disabled {
		t.Errorf("user00100: %+v, %v; want disabled", s, err)
	}
	// Filter injection: the user name is escaped, so these match nothing.
	for _, u := range []string{"nobody", "*", "user0000*", "user00001)(uid=*", `\2a`} {
		if _, err := l.Lookup(ctx, u); !errors.Is(err, ErrNotFound) {
			t.Errorf("%q: err = %v, want ErrNotFound", u, err)
		}
	}
	after := testutil.ToFloat64(l.m.transactions.WithLabelValues("ldap"))
	if after-searches != 7 {
		t.Errorf("ldap transactions +%v, want +7", after-searches)
	}
	// Cached now: no more searches for either answer.
	hits := testutil.ToFloat64(l.m.ldapCache.WithLabelValues("hit"))
	if _, err := l.Lookup(ctx, "user00001"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Lookup(ctx, "nobody"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if d := testutil.ToFloat64(l.m.transactions.WithLabelValues("ldap")) - after; d != 0 {
		t.Errorf("cached lookups sent %v searches", d)
	}
	if d := testutil.ToFloat64(l.m.ldapCache.WithLabelValues("hit")) - hits; d != 1 {
		t.Errorf("cache hits +%v, want +1", d)
	}
	if sub, ok := l.CachedLookup("user00001"); !ok || sub.Password != "pw00001" {
		t.Error("CachedLookup misses a cached profile")
	}
}

func TestLDAPConcurrentLookupsShareOneSearch(t *testing.T) {
	srv := testslapd.Start(t, 10)
	l := openLDAP(t, srv.Config())
	before := testutil.ToFloat64(l.m.transactions.WithLabelValues("ldap"))
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Lookup(context.Background(), "user00003"); err != nil {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d lookups failed", failed.Load())
	}
	if d := testutil.ToFloat64(l.m.transactions.WithLabelValues("ldap")) - before; d > 2 {
		t.Errorf("50 concurrent lookups of one user sent %v searches", d)
	}
}

func TestLDAPSAndStartTLS(t *testing.T) {
	srv := testslapd.Start(t, 5)
	for _, tc := range []struct {
		name string
		mod  func(*config.LDAP)
		ok   bool
	}{
		{"ldaps", func(c *config.LDAP) { c.URLs = []string{srv.LDAPSURL} }, true},
		{"starttls", func(c *config.LDAP) { c.StartTLS = true }, true},
		{"ldaps-unknown-ca", func(c *config.LDAP) { c.URLs = []string{srv.LDAPSURL}; c.CAFile = "" }, false},
		{"ldaps-wrong-name", func(c *config.LDAP) { c.URLs = []string{srv.LDAPSURL}; c.ServerName = "ldap.example.org" }, false},
		{"wrong-bind-password", func(c *config.LDAP) {
			p := t.TempDir() + "/pw"
			if err := os.WriteFile(p, []byte("wrong\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			c.BindPasswordFile = p
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := srv.Config()
			tc.mod(&cfg)
			l := openLDAP(t, cfg)
			start := time.Now()
			s, err := l.Lookup(context.Background(), "user00002")
			if tc.ok && (err != nil || s.Password != "pw00002") {
				t.Fatalf("lookup: %+v, %v", s, err)
			}
			if !tc.ok && !errors.Is(err, ErrUnavailable) {
				t.Fatalf("lookup: err = %v, want ErrUnavailable", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
			t.Logf("%s: %v in %v", tc.name, err, time.Since(start).Round(time.Millisecond))
		})
	}
}

// slapd stopped: stale profiles are served when allowed, otherwise lookups fail at once;
// after a restart lookups recover.
func TestLDAPOutageAndRecovery(t *testing.T) {
	srv := testslapd.Start(t, 20)
	ctx := context.Background()
	mk := func(serveStale bool) *LDAP {
		cfg := srv.Config()
		cfg.Cache.TTL = config.Duration(300 * time.Millisecond)
		cfg.Cache.ServeStale = serveStale
		cfg.RetryInterval = config.Duration(200 * time.Millisecond)
		// Long timeouts: a lookup that waited for one would stand out against the bound below.
		cfg.Timeout = config.Duration(3 * time.Second)
		cfg.ConnectTimeout = config.Duration(3 * time.Second)
		return openLDAP(t, cfg)
	}
	stale, strict := mk(true), mk(false)
	for _, l := range []*LDAP{stale, strict} {
		if _, err := l.Lookup(ctx, "user00001"); err != nil {
			t.Fatal(err)
		}
	}
	srv.Stop(t)
	time.Sleep(350 * time.Millisecond) // the cached profiles expire

	staleServed := testutil.ToFloat64(stale.m.ldapCache.WithLabelValues("stale"))
	for i := range 5 {
		start := time.Now()
		s, err := stale.Lookup(ctx, "user00001")
		if err != nil || s.Password != "pw00001" {
			t.Fatalf("serveStale lookup %d: %+v, %v", i, s, err)
		}
		if _, err := strict.Lookup(ctx, "user00001"); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("strict lookup %d: err = %v, want ErrUnavailable", i, err)
		}
		if _, err := stale.Lookup(ctx, "user00002"); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("uncached user: err = %v, want ErrUnavailable", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("lookups during the outage took %v", d)
		}
	}
	if d := testutil.ToFloat64(stale.m.ldapCache.WithLabelValues("stale")) - staleServed; d != 5 {
		t.Errorf("stale served +%v, want +5", d)
	}
	if v := testutil.ToFloat64(stale.m.ldapUp); v != 0 {
		t.Errorf("openaaa_ldap_up = %v during the outage", v)
	}
	// Accounting's cache-only lookup still has the (expired) profile.
	if _, ok := stale.CachedLookup("user00001"); !ok {
		t.Error("CachedLookup lost the profile during the outage")
	}

	srv.Start(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := strict.Lookup(ctx, "user00002")
		if err == nil && s.Password == "pw00002" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after slapd restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := stale.Lookup(ctx, "user00003"); err != nil {
		t.Errorf("serveStale source after restart: %v", err)
	}
	if v := testutil.ToFloat64(stale.m.ldapUp); v != 1 {
		t.Errorf("openaaa_ldap_up = %v after recovery", v)
	}
}

// A hung slapd (SIGSTOP) answers nothing: auth's lookup ends at its deadline, accounting's
// cache-only lookup does not wait at all.
func TestLDAPHungServerNeverHangs(t *testing.T) {
	srv := testslapd.Start(t, 20)
	cfg := srv.Config()
	cfg.Timeout = config.Duration(400 * time.Millisecond)
	cfg.ConnectTimeout = config.Duration(400 * time.Millisecond)
	cfg.RetryInterval = config.Duration(300 * time.Millisecond)
	cfg.PoolSize = 1 // the first search after SIGSTOP goes to the open, bound connection
	l := openLDAP(t, cfg)
	if _, err := l.Lookup(context.Background(), "user00001"); err != nil {
		t.Fatal(err)
	}
	srv.Pause(t)
	defer srv.Resume(t)
	timeouts := testutil.ToFloat64(l.m.ldapConnErrors.WithLabelValues("timeout"))
	for _, user := range []string{"user00002", "user00003", "user00004"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		start := time.Now()
		_, err := l.Lookup(ctx, user)
		cancel()
		d := time.Since(start)
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("%s: err = %v, want ErrUnavailable", user, err)
		}
		if d > 2*time.Second { // timeout is 400ms; a hang would last until the 5 s context
			t.Errorf("%s: lookup against a hung LDAP took %v", user, d)
		}
		start = time.Now()
		if _, ok := l.CachedLookup("user00001"); !ok || time.Since(start) > 100*time.Millisecond {
			t.Errorf("CachedLookup: ok=%v after %v", ok, time.Since(start))
		}
		t.Logf("%s: %v after %v", user, err, d.Round(time.Millisecond))
	}
	if testutil.ToFloat64(l.m.ldapConnErrors.WithLabelValues("timeout")) == timeouts {
		t.Error("no timeout counted")
	}
	srv.Resume(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := l.Lookup(context.Background(), "user00005"); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no recovery after SIGCONT: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLDAPSearchRate measures uncached lookups per second against slapd (reported, not
// asserted beyond a floor that only catches a broken pool).
func TestLDAPSearchRate(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const users = 3000
	srv := testslapd.Start(t, users)
	cfg := srv.Config()
	cfg.PoolSize = 16
	l := openLDAP(t, cfg)
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > users {
					return
				}
				if _, err := l.Lookup(context.Background(), fmt.Sprintf("user%05d", i)); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	rate := float64(users) / d.Seconds()
	t.Logf("%d uncached LDAP lookups in %v: %.0f/s (pool 16, 32 goroutines)", users, d.Round(time.Millisecond), rate)
	if failed.Load() != 0 {
		t.Errorf("%d lookups failed", failed.Load())
	}
	if rate < 200 {
		t.Errorf("only %.0f lookups/s", rate)
	}
	if n := l.Len(); n != users {
		t.Errorf("cache holds %d, want %d", n, users)
	}
}

// A profiles file names profiles an entry picks by an attribute (here its class, which the
// test directory sets to ldap-gold for user00001): the profile is the base, the entry's own
// attributes win, and the Gx data policy comes from the profile.
func TestLDAPProfilesFile(t *testing.T) {
	srv := testslapd.Start(t, 2)
	cfg := srv.Config()
	cfg.ProfilesFile = filepath.Join(t.TempDir(), "profiles.yaml")
	cfg.Attributes.ProfileName = "openaaaClass"
	if err := os.WriteFile(cfg.ProfilesFile, []byte(`profiles:
  ldap-gold:
    sessionTimeout: 100
    idleTimeout: 900
    dataPolicy: {rules: [internet-gold], qci: 8, monitoringKey: mk1, quotaOctets: 1000000}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	l := openLDAP(t, cfg)
	s, err := l.Lookup(context.Background(), "user00001")
	if err != nil {
		t.Fatal(err)
	}
	p := s.Profile
	if p.DataPolicy == nil || fmt.Sprint(p.DataPolicy.Rules) != "[internet-gold]" || p.DataPolicy.QCI != 8 {
		t.Fatalf("data policy %+v, want the profile's", p.DataPolicy)
	}
	if p.SessionTimeout != 3600 || p.IdleTimeout != 900 || p.Class != "ldap-gold" {
		t.Errorf("profile %+v: want the entry's session timeout (3600) over the profile's, the profile's idle timeout", p)
	}
	// A file with subscribers in it, or a profile the policy refuses, does not open.
	if err := os.WriteFile(cfg.ProfilesFile, []byte("subscribers: [{username: a, password: b}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLDAP(cfg, nil, testLog(), nil); err == nil || !strings.Contains(err.Error(), "profiles only") {
		t.Errorf("a profiles file with subscribers: %v", err)
	}
}
