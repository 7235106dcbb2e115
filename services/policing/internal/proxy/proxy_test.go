package proxy

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"layeh.com/radius"
	"layeh.com/radius/rfc2865"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// fakeUpstream answers each request with: a reply signed with the wrong secret, a correct
// reply without our Proxy-State, a correct reply with two extra Proxy-States, then the
// right one. Only the last may be taken.
func fakeUpstream(t *testing.T, secret string) string {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			req, err := radius.Parse(buf[:n], []byte(secret))
			if err != nil {
				continue
			}
			states := req.Attributes[:0:0]
			for _, a := range req.Attributes {
				if a.Type == radiusx.TypeProxyState {
					states = append(states, a)
				}
			}
			reply := func(s string, ps radius.Attributes) []byte {
				r := req.Response(radius.CodeAccountingResponse)
				r.Attributes = append(r.Attributes, ps...)
				b, _ := r.MarshalBinary()
				radiusx.SignResponse(b, -1, []byte(s), byte(radius.CodeAccountingRequest))
				return b
			}
			extra := append(append(radius.Attributes{}, states...), &radius.AVP{Type: radiusx.TypeProxyState, Attribute: []byte("x")},
				&radius.AVP{Type: radiusx.TypeProxyState, Attribute: []byte("y")})
			for _, b := range [][]byte{reply("wrong", states), reply(secret, nil), reply(secret, extra), reply(secret, states)} {
				_, _ = c.WriteTo(b, from)
			}
		}
	}()
	return c.LocalAddr().String()
}

// counter reads u's openaaa_proxy_replies_dropped_total{reason}.
func counter(u *upstream, reason string) float64 {
	var m dto.Metric
	_ = u.m.repliesDropped.WithLabelValues(reason).Write(&m)
	return m.GetCounter().GetValue()
}

func TestExchangeAcceptsOnlyVerifiedReplyWithOurProxyState(t *testing.T) {
	t.Parallel() // its metrics are its own
	u := &upstream{name: "fake", addr: fakeUpstream(t, "s3cret"), secret: []byte("s3cret"), m: NewMetrics(metrics.With(prometheus.NewRegistry()), metrics.New(metrics.Factory{}))}
	before := map[string]float64{}
	for _, r := range []string{"bad_authenticator", "proxy_state"} {
		before[r] = counter(u, r)
	}
	var attrs radius.Attributes
	attrs.Add(rfc2865.UserName_Type, radius.Attribute("alice"))
	attrs.Add(radiusx.TypeProxyState, radius.Attribute("from-the-nas")) // not forwarded
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reply, err := u.exchange(ctx, radius.CodeAccountingRequest, attrs, exchangeOpts{timeout: time.Second, maxTimeout: time.Second, retries: 1, maxProxyState: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range reply.Attributes {
		if a.Type == radiusx.TypeProxyState {
			n++
			if string(a.Attribute) == "from-the-nas" {
				t.Fatal("the NAS's Proxy-State was forwarded")
			}
		}
	}
	if n != 1 {
		t.Fatalf("accepted reply has %d Proxy-State", n)
	}
	if d := counter(u, "bad_authenticator") - before["bad_authenticator"]; d < 1 {
		t.Errorf("reply with a bad authenticator not counted as dropped")
	}
	if d := counter(u, "proxy_state") - before["proxy_state"]; d < 2 {
		t.Errorf("replies without our Proxy-State / over the limit: %v dropped, want 2", d)
	}
}

func TestExchangeTimesOutWithBackoff(t *testing.T) {
	c, _ := net.ListenPacket("udp", "127.0.0.1:0") // swallows everything
	defer c.Close()
	u := &upstream{name: "silent", addr: c.LocalAddr().String(), secret: []byte("x"), m: NewMetrics(metrics.Factory{}, metrics.New(metrics.Factory{}))}
	start := time.Now()
	_, err := u.exchange(context.Background(), radius.CodeAccountingRequest, nil, exchangeOpts{timeout: 100 * time.Millisecond, maxTimeout: 400 * time.Millisecond, retries: 2, maxProxyState: 1})
	if err == nil {
		t.Fatal("no error from a silent upstream")
	}
	// 100 + 200 + 400 ms of timers.
	if d := time.Since(start); d < 650*time.Millisecond || d > 5*time.Second {
		t.Fatalf("3 tries with backoff took %v", d)
	}
}
