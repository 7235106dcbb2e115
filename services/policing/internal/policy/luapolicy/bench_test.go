package luapolicy

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"layeh.com/radius"
	"layeh.com/radius/rfc2865"

	"github.com/openaaa/openaaa/services/policing/internal/aaa"
	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/eapforward"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/radiusd"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// BenchmarkPolicy: one decision of the built-in policy and of testdata/builtin.lua (the
// same decision in Lua), memoized and not, for authorize and for an accounting Interim. The difference is what Lua adds per decision (docs/benchmarks.md).
func BenchmarkPolicy(b *testing.B) {
	s := &subscriber.Subscriber{Username: "user00001", Profile: subscriber.Profile{FramedIPAddress: "10.0.0.1",
		SessionTimeout: 3600, AcctInterimInterval: 300}}
	req := request(b, "user00001", "Calling-Station-Id", "02-00-00-00-00-01", "NAS-Port", "7")
	engines := benchPolicies(b, 1000)
	ctx := context.Background()
	for _, en := range engines {
		b.Run("authorize/"+en.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d := en.pol.Authorize(ctx, req, s); !d.Accept || len(d.Reply) != 3 {
					b.Fatalf("%+v", d)
				}
			}
		})
		b.Run("accounting/"+en.name, func(b *testing.B) {
			b.ReportAllocs()
			u := &session.Update{Kind: session.KindInterim}
			u.Session.Key = session.Key{NAS: "192.0.2.1", ID: "s1"}
			for b.Loop() {
				u.Session.InputOctets += 1000 // an Interim: the counters move, within the GiB
				en.pol.Accounting(ctx, req, u, s)
			}
		})
	}
}

// namedPolicy is a policy as make bench-policy names it.
type namedPolicy struct {
	name string
	pol  policy.Policy
}

// benchPolicies: the built-in policy and testdata/builtin.lua un-memoized and memoized (a
// memo of memoSize decisions), each Lua engine closed at the end of the benchmark.
func benchPolicies(b *testing.B, memoSize int) []namedPolicy {
	pols := []namedPolicy{{"builtin", builtin()}}
	for _, memoize := range []bool{false, true} {
		o := options("testdata/builtin.lua")
		o.PoolSize, o.Memoize, o.MemoSize = 1, memoize, memoSize
		e, err := New(o)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(e.Close)
		pols = append(pols, namedPolicy{map[bool]string{false: "lua", true: "lua-memoized"}[memoize], e})
	}
	return pols
}

// BenchmarkFlowSession: the decisions of one session of make bench-policy's flow — an
// Access-Request, a Start, 5 Interims, a Stop (which decides nothing) — over 10,000
// subscribers in turn, as the load generator sends them. ns/op / 7 is a decision's cost. It
// shows what BenchmarkPolicy's single memoized entry hides and the outside sees: the memo
// holds an entry per distinct inputs — here one authorize decision per user (each has its own
// Framed-IP-Address), out of the caches — and the script's runs per session (runs/session).
func BenchmarkFlowSession(b *testing.B) {
	const users = 10000
	subs := make([]*subscriber.Subscriber, users)
	reqs := make([]*radius.Packet, users)
	for i := range subs {
		name := fmt.Sprintf("user%05d", i+1)
		subs[i] = &subscriber.Subscriber{Username: name, Profile: subscriber.Profile{
			FramedIPAddress: netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}).String(),
			SessionTimeout:  3600, AcctInterimInterval: 300}}
		reqs[i] = request(b, name, "Calling-Station-Id", "02-00-00-00-00-01", "NAS-Port", "7")
	}
	runs := func() float64 {
		return testutil.ToFloat64(testMetrics.Runs.WithLabelValues("authorize")) + testutil.ToFloat64(testMetrics.Runs.WithLabelValues("accounting"))
	}
	ctx := context.Background()
	for _, en := range benchPolicies(b, 100000) {
		b.Run(en.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := range users { // every user's Accept memoized, as after bench-policy's warm-up
				en.pol.Authorize(ctx, reqs[i], subs[i])
			}
			r0, n := runs(), 0
			for b.Loop() {
				i := n % users
				n++
				if d := en.pol.Authorize(ctx, reqs[i], subs[i]); !d.Accept || len(d.Reply) != 3 {
					b.Fatalf("%+v", d)
				}
				u := &session.Update{Kind: session.KindStart}
				u.Session.Key = session.Key{NAS: "192.0.2.1", ID: strconv.Itoa(n)}
				en.pol.Accounting(ctx, reqs[i], u, subs[i])
				u.Kind = session.KindInterim
				for range 5 {
					u.Session.InputOctets += 1 << 30 // the generator's ~1.2 GiB per interim
					en.pol.Accounting(ctx, reqs[i], u, subs[i])
				}
				u.Kind = session.KindStop
				en.pol.Accounting(ctx, reqs[i], u, subs[i])
			}
			b.ReportMetric((runs()-r0)/float64(n), "runs/session")
		})
	}
}

// oneSubscriber is a subscriber source of one user, answering from memory like the file source.
type oneSubscriber struct{ s *subscriber.Subscriber }

func (o oneSubscriber) Lookup(_ context.Context, user string) (*subscriber.Subscriber, error) {
	if user != o.s.Username {
		return nil, subscriber.ErrNotFound
	}
	return o.s, nil
}

// discard is a ResponseWriter that checks the reply is an Accept of n attributes and drops it.
type discard struct {
	b testing.TB
	n int
}

func (w *discard) Write(p *radius.Packet) error {
	if p.Code != radius.CodeAccessAccept || len(p.Attributes) != w.n {
		w.b.Fatalf("reply %v with %d attributes", p.Code, len(p.Attributes))
	}
	return nil
}

// authRequest is a PAP Access-Request of a subscriber with testdata/builtin.lua's three
// reply attributes, as the server hands it to the auth handler.
func authRequest(tb testing.TB) (*subscriber.Subscriber, *radiusd.Request) {
	s := &subscriber.Subscriber{Username: "user00001", Password: "secret00001", Profile: subscriber.Profile{
		FramedIPAddress: "10.0.0.1", SessionTimeout: 3600, AcctInterimInterval: 300}}
	secret := []byte("secret")
	p := radius.New(radius.CodeAccessRequest, secret)
	rfc2865.UserName_SetString(p, s.Username)
	_ = rfc2865.UserPassword_SetString(p, s.Password)
	rfc2865.CallingStationID_SetString(p, "02-00-00-00-00-01")
	rfc2865.NASPort_Set(p, 7)
	wire, err := p.Encode()
	if err != nil {
		tb.Fatal(err)
	}
	req, err := radius.Parse(wire, secret)
	if err != nil {
		tb.Fatal(err)
	}
	client := nas.NewTable(&nas.Client{Name: "bng", Prefix: netip.MustParsePrefix("192.0.2.0/24"), Secret: secret}).All()[0]
	return s, &radiusd.Request{Packet: req, Client: client, RemoteAddr: netip.MustParseAddrPort("192.0.2.1:40000"), Received: time.Now()}
}

// fixed is a policy that accepts with attributes made once: the handler's cost without any
// policy work.
type fixed struct {
	*policy.Default
	reply radius.Attributes
}

func (f fixed) Authorize(context.Context, *radius.Packet, *subscriber.Subscriber) policy.AuthDecision {
	return policy.AuthDecision{Accept: true, Reply: f.reply}
}

// BenchmarkAuthRequest: one PAP Access-Request through the RADIUS auth handler (password
// check, subscriber lookup, policy, reply, metrics), with no Lua policy (the built-in one,
// "none"), with a policy doing no work ("fixed"), and with testdata/builtin.lua memoized and
// un-memoized; "lua-memoized-req" is the sample blocklist.lua memoized (it declares a
// request attribute, Calling-Station-Id). "lua-memoized" minus "none" is what a memoized
// Lua decision adds to a request against the built-in policy, finer than make
// bench-policy's figure from outside (docs/policy.md, Cost); minus "fixed", the memoized
// path's whole cost.
func BenchmarkAuthRequest(b *testing.B) {
	s, r := authRequest(b)
	log := slog.New(slog.DiscardHandler)
	for _, variant := range []string{"none", "fixed", "lua-memoized", "lua", "lua-memoized-req"} {
		var pol policy.Policy = builtin()
		replies := 3
		switch variant {
		case "fixed":
			reply, err := builtin().ReplyAttributes(&s.Profile)
			if err != nil {
				b.Fatal(err)
			}
			pol = fixed{builtin(), reply}
		case "lua-memoized", "lua":
			o := options("testdata/builtin.lua")
			o.PoolSize, o.Memoize = 1, variant == "lua-memoized"
			e, err := New(o)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			pol = e
		case "lua-memoized-req":
			e, err := New(options("../../../../../config/samples/policy/blocklist.lua"))
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			pol, replies = e, 0 // the subscriber has no rate limit
		}
		h := &aaa.Auth{Subscribers: oneSubscriber{s}, Policy: pol, Log: log, Metrics: aaa.NewMetrics(metrics.Factory{}, metrics.New(metrics.Factory{}), eap.NewMetrics(metrics.Factory{}), eapforward.NewMetrics(metrics.Factory{}))}
		b.Run(variant, func(b *testing.B) {
			b.ReportAllocs()
			w := &discard{b, replies}
			for b.Loop() {
				h.ServeRADIUS(w, r)
			}
		})
	}
}

// BenchmarkGxSession: the Lua hooks of one Gx session as the policy server calls them —
// gx_initial, then gx_update for each of 5 usage reports (the CCR-T runs none) — with
// gx/testdata/throttle.lua, memoized and not, over 1,000 subscribers. ns/op is the Lua CPU
// of a session of 7 Gx requests: divided by 7, what Lua adds per Gx request (docs/benchmarks.md).
func BenchmarkGxSession(b *testing.B) {
	const subscribers = 1000
	subs := make([]*subscriber.Subscriber, subscribers)
	for i := range subs {
		subs[i] = &subscriber.Subscriber{Username: fmt.Sprintf("%015d", 1010000000001+i), ProfileName: "data",
			Profile: subscriber.Profile{QuotaOctets: 1 << 40}}
	}
	ctx := context.Background()
	for _, memoize := range []bool{false, true} {
		o := options("../../gx/testdata/throttle.lua")
		o.PoolSize, o.Memoize, o.MemoSize = 1, memoize, 100000
		// A failed hook says why (kind and error, at most once a second) in the benchmark's
		// output: `make bench-gx` keeps it in lua-inprocess.txt.
		o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		e, err := New(o)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(map[bool]string{false: "lua", true: "lua-memoized"}[memoize], func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n++
				sub := subs[n%subscribers]
				u := &session.Update{Kind: session.KindStart}
				u.Session.Key = session.Key{NAS: "gx", ID: fmt.Sprintf("pgw;1;%d", n)}
				u.Session.UserName = sub.Username
				if _, ok := e.Gx(ctx, true, u, sub); !ok {
					b.Fatalf("gx_initial failed at session %d (the engine's warning above says why)", n)
				}
				u.Kind = session.KindInterim
				for range 5 {
					u.Session.OutputOctets += 1 << 20 // a usage report: a MiB, within the percent
					if _, ok := e.Gx(ctx, false, u, sub); !ok {
						b.Fatalf("gx_update failed at session %d (the engine's warning above says why)", n)
					}
				}
			}
		})
		e.Close()
	}
}
