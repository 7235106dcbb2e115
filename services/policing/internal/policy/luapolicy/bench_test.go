package luapolicy

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// BenchmarkPolicy: one decision of the built-in policy and of testdata/builtin.lua (the
// same decision in Lua), memoized and not, for authorize and for an accounting Interim. The difference is what Lua adds per decision (docs/benchmarks.md).
func BenchmarkPolicy(b *testing.B) {
	s := &subscriber.Subscriber{Username: "user00001", Profile: subscriber.Profile{FramedIPAddress: "10.0.0.1",
		SessionTimeout: 3600, AcctInterimInterval: 300}}
	req := request(b, "user00001", "Calling-Station-Id", "02-00-00-00-00-01", "NAS-Port", "7")
	engines := []struct {
		name string
		pol  policy.Policy
	}{{"builtin", builtin()}}
	for _, memoize := range []bool{false, true} {
		o := options("testdata/builtin.lua")
		o.PoolSize, o.Memoize = 1, memoize
		e, err := New(o)
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		engines = append(engines, struct {
			name string
			pol  policy.Policy
		}{map[bool]string{false: "lua", true: "lua-memoized"}[memoize], e})
	}
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
				e.ForgetGx(u.Session.ID)
			}
		})
		e.Close()
	}
}
