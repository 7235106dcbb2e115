package luapolicy

import (
	"context"
	"log/slog"
	"testing"

	"github.com/openaaa/openaaa/services/policing/internal/aaa"
	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/eapforward"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// TestDecisionAllocations holds the allocations of a decision on the server's path — an
// Access-Request through the auth handler (aaa.Auth.ServeRADIUS, as the RADIUS server calls
// it) and an Interim through Engine.Accounting (as aaa.Acct calls it) — with
// testdata/builtin.lua, issue 35: a memoized decision allocates nothing the request would
// not allocate without policy work, and an un-memoized one no more than today. More
// allocations are more CPU per decision from outside (the collector's share), which the
// in-process ns/op of one user's hot decision does not show.
func TestDecisionAllocations(t *testing.T) {
	s, r := authRequest(t)
	log := slog.New(slog.DiscardHandler)
	engine := func(memoize bool) *Engine {
		o := options("testdata/builtin.lua")
		o.PoolSize, o.Memoize = 1, memoize
		e, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		return e
	}
	memo, plain := engine(true), engine(false)
	reply, err := builtin().ReplyAttributes(&s.Profile)
	if err != nil {
		t.Fatal(err)
	}
	auth := func(p aaa.Auth) float64 {
		p.Subscribers, p.Log, p.Metrics = oneSubscriber{s}, log, aaa.NewMetrics(metrics.Factory{}, metrics.New(metrics.Factory{}), eap.NewMetrics(metrics.Factory{}), eapforward.NewMetrics(metrics.Factory{}))
		w := &discard{t, 3}
		return testing.AllocsPerRun(200, func() { p.ServeRADIUS(w, r) })
	}
	none := auth(aaa.Auth{Policy: fixed{builtin(), reply}}) // the handler's own
	if got := auth(aaa.Auth{Policy: memo}); got > none {
		t.Errorf("memoized authorize: %.0f allocations per request, %.0f without policy work: the memoized path allocates", got, none)
	}
	// testdata/builtin.lua's authorize: 8 reads, 3 replies (a list and an AVP array, the
	// values, the Lua strings of the reads); 25 before the replies shared their allocations.
	const maxUnmemoized = 16
	if got := auth(aaa.Auth{Policy: plain}) - none; got > maxUnmemoized {
		t.Errorf("un-memoized authorize: %.0f allocations per request beyond the handler's, want at most %d", got, maxUnmemoized)
	}

	ctx := context.Background()
	for _, c := range []struct {
		e   *Engine
		max float64
	}{{memo, 0}, {plain, 1}} { // un-memoized: the Lua string of the one read's key
		u := &session.Update{Kind: session.KindInterim}
		u.Session.Key = session.Key{NAS: "192.0.2.1", ID: "s1"}
		c.e.Accounting(ctx, r.Packet, u, s) // the memo's entry for the session
		got := testing.AllocsPerRun(200, func() {
			u.Session.InputOctets += 1000
			c.e.Accounting(ctx, r.Packet, u, s)
		})
		if got > c.max {
			t.Errorf("accounting (memoized %v): %.0f allocations per Interim, want at most %.0f", c.e.prog.Load().memo != nil, got, c.max)
		}
	}
}
