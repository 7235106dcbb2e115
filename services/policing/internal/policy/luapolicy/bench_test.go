package luapolicy

import (
	"context"
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
