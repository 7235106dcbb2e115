package policy

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2869"
	"layeh.com/radius/rfc3162"
	"layeh.com/radius/rfc4818"
	"layeh.com/radius/rfc6911"

	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

func newPolicy() *Default {
	return &Default{Dict: dict.Builtin, RateLimitAttribute: "Mikrotik-Rate-Limit", RejectMessage: "Authentication failed"}
}

func TestAuthorizeProfile(t *testing.T) {
	d := newPolicy()
	sub := &subscriber.Subscriber{Username: "alice", Profile: subscriber.Profile{
		FramedIPAddress: "10.1.0.1", FramedPool: "pool-a", SessionTimeout: 3600, IdleTimeout: 600, AcctInterimInterval: 300,
		Class: "gold", FilterID: "std", RateLimit: "10M/10M",
		ReplyAttributes: subscriber.ReplyAttributes{"Framed-MTU": {"1492"}, "Service-Type": {"Framed-User"}, "Cisco-AVPair": {"ip:addr-pool=a"}},
	}}
	dec := d.Authorize(context.Background(), radius.New(radius.CodeAccessRequest, []byte("s")), sub)
	if !dec.Accept {
		t.Fatalf("rejected: %s", dec.Reason)
	}
	p := &radius.Packet{Code: radius.CodeAccessAccept, Attributes: dec.Reply}
	if ip := rfc2865.FramedIPAddress_Get(p); !ip.Equal(net.IPv4(10, 1, 0, 1)) {
		t.Errorf("Framed-IP-Address %v", ip)
	}
	if rfc2869.FramedPool_GetString(p) != "pool-a" {
		t.Error("Framed-Pool")
	}
	if rfc2865.SessionTimeout_Get(p) != 3600 || rfc2865.IdleTimeout_Get(p) != 600 || rfc2869.AcctInterimInterval_Get(p) != 300 {
		t.Error("timeouts")
	}
	if string(rfc2865.Class_Get(p)) != "gold" || rfc2865.FilterID_GetString(p) != "std" {
		t.Error("Class / Filter-Id")
	}
	if rfc2865.FramedMTU_Get(p) != 1492 || rfc2865.ServiceType_Get(p) != rfc2865.ServiceType_Value_FramedUser {
		t.Error("replyAttributes")
	}
	var vsas [][]byte
	for _, avp := range p.Attributes {
		if avp.Type == 26 {
			vsas = append(vsas, avp.Attribute)
		}
	}
	if len(vsas) != 2 {
		t.Fatalf("%d VSAs, want rate limit and Cisco-AVPair", len(vsas))
	}
	if !bytes.Contains(vsas[0], []byte("10M/10M")) {
		t.Errorf("rate limit VSA first (before replyAttributes): % x", vsas[0])
	}
	// Replies are stable: the same profile gives the same bytes.
	again := d.Authorize(context.Background(), nil, sub)
	a, _ := (&radius.Packet{Code: 2, Attributes: dec.Reply}).MarshalBinary()
	b, _ := (&radius.Packet{Code: 2, Attributes: again.Reply}).MarshalBinary()
	if !bytes.Equal(a, b) {
		t.Fatal("reply attributes not in a stable order")
	}
	if _, ok := p.Lookup(rfc2865.ReplyMessage_Type); ok {
		t.Error("an accept carries no Reply-Message")
	}
}

func TestAuthorizeEmptyProfile(t *testing.T) {
	dec := newPolicy().Authorize(context.Background(), nil, &subscriber.Subscriber{Username: "x"})
	if !dec.Accept || len(dec.Reply) != 0 {
		t.Fatalf("empty profile: %+v", dec)
	}
}

func TestRejects(t *testing.T) {
	d := newPolicy()
	dec := d.Authorize(context.Background(), nil, &subscriber.Subscriber{Username: "carol", Disabled: true,
		Profile: subscriber.Profile{FramedIPAddress: "10.0.0.1"}})
	if dec.Accept || dec.Reason != "subscriber disabled" {
		t.Fatalf("disabled: %+v", dec)
	}
	p := &radius.Packet{Attributes: dec.Reply}
	if rfc2865.ReplyMessage_GetString(p) != "Authentication failed" || len(dec.Reply) != 1 {
		t.Fatalf("reject reply: %v", dec.Reply)
	}
	r := d.Reject("wrong password")
	if r.Accept || r.Reason != "wrong password" {
		t.Fatal(r)
	}
	if strings.Contains(rfc2865.ReplyMessage_GetString(&radius.Packet{Attributes: r.Reply}), "password") {
		t.Fatal("the reason must not be sent")
	}
	silent := &Default{Dict: dict.Builtin}
	if len(silent.Reject("x").Reply) != 0 {
		t.Fatal("no RejectMessage: no Reply-Message")
	}
	// A profile that no longer encodes rejects rather than sending a broken accept.
	bad := d.Authorize(context.Background(), nil, &subscriber.Subscriber{Profile: subscriber.Profile{ReplyAttributes: subscriber.ReplyAttributes{"No-Such": {"1"}}}})
	if bad.Accept || !strings.Contains(bad.Reason, "No-Such") {
		t.Fatalf("%+v", bad)
	}
}

// CheckProfile refuses what Authorize could not encode, naming the field.
func TestCheckProfile(t *testing.T) {
	d := newPolicy()
	cases := []struct {
		p    subscriber.Profile
		want string
	}{
		{subscriber.Profile{FramedIPAddress: "10.0.0"}, "framedIPAddress"},
		{subscriber.Profile{FramedIPAddress: "2001:db8::1/64"}, "framedIPAddress"},
		{subscriber.Profile{RateLimit: strings.Repeat("r", 300)}, "rateLimit"},
		{subscriber.Profile{ReplyAttributes: subscriber.ReplyAttributes{"Framed-MTU": {"big"}}}, "replyAttributes.Framed-MTU"},
		{subscriber.Profile{ReplyAttributes: subscriber.ReplyAttributes{"Framed-Mtu": {"1"}}}, "replyAttributes.Framed-Mtu"},
		{subscriber.Profile{DataPolicy: &subscriber.DataPolicy{ThrottleAttributes: subscriber.ReplyAttributes{"Filter-Idd": {"slow"}}}},
			"dataPolicy.throttleAttributes.Filter-Idd"},
		{subscriber.Profile{DataPolicy: &subscriber.DataPolicy{ThrottleAttributes: subscriber.ReplyAttributes{"Session-Timeout": {"1", "soon"}}}},
			"dataPolicy.throttleAttributes.Session-Timeout[1]"},
	}
	for _, c := range cases {
		err := d.CheckProfile(&c.p)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error starting with %s", c.p, err, c.want)
		}
	}
	if err := d.CheckProfile(&subscriber.Profile{FramedIPAddress: "192.0.2.1", RateLimit: "1M"}); err != nil {
		t.Fatal(err)
	}
	throttle := &subscriber.Profile{DataPolicy: &subscriber.DataPolicy{ThrottleAttributes: subscriber.ReplyAttributes{"Filter-Id": {"slow"}}}}
	if err := d.CheckProfile(throttle); err != nil {
		t.Fatal(err)
	}
	if a, err := d.ThrottleAttributes(throttle); err != nil || len(a) != 1 || string(a[0].Attribute) != "slow" {
		t.Fatalf("throttle attributes %v, %v; want Filter-Id slow", a, err)
	}
	noRate := &Default{Dict: dict.Builtin, RateLimitAttribute: "No-Such-Attr"}
	if err := noRate.CheckProfile(&subscriber.Profile{RateLimit: "1M"}); err == nil || !strings.Contains(err.Error(), "No-Such-Attr") {
		t.Fatalf("unknown rate limit attribute: %v", err)
	}
}

// framedIPAddress takes an IPv6 address too (an IPv6-only subscriber): it goes out as
// Framed-IPv6-Address (RFC 6911), where it used to be refused as "not an IPv4 address".
func TestFramedIPAddressIPv6(t *testing.T) {
	d := newPolicy()
	p := subscriber.Profile{FramedIPAddress: "2001:db8:0:1::10"}
	if err := d.CheckProfile(&p); err != nil {
		t.Fatalf("an IPv6 framedIPAddress refused: %v", err)
	}
	dec := d.Authorize(context.Background(), nil, &subscriber.Subscriber{Username: "v6", Profile: p})
	reply := &radius.Packet{Attributes: dec.Reply}
	if !dec.Accept || !rfc6911.FramedIPv6Address_Get(reply).Equal(net.ParseIP("2001:db8:0:1::10")) {
		t.Fatalf("accept %v, reply %v; want Framed-IPv6-Address 2001:db8:0:1::10", dec.Accept, dec.Reply)
	}
	if _, ok := reply.Lookup(rfc2865.FramedIPAddress_Type); ok {
		t.Fatal("an IPv6 address sent as Framed-IP-Address")
	}
}

// A dual-stack profile hands out its IPv6 attributes, DNS servers in order; a bad value is
// refused naming the field.
func TestIPv6ProfileAttributes(t *testing.T) {
	d := newPolicy()
	p := subscriber.Profile{FramedIPAddress: "10.1.0.1", FramedIPv6Prefix: "2001:db8:0:7::/64",
		DelegatedIPv6Prefix: "2001:db8:100:ab00::/56", FramedIPv6Pool: "v6-wan", DelegatedIPv6PrefixPool: "pd-pool",
		FramedIPv6Address: "2001:db8:0:7::1", DNSServerIPv6Addresses: []string{"2001:db8::53", "2001:db8::5353"}}
	dec := d.Authorize(context.Background(), nil, &subscriber.Subscriber{Username: "ds", Profile: p})
	if !dec.Accept {
		t.Fatalf("rejected: %s", dec.Reason)
	}
	reply := &radius.Packet{Attributes: dec.Reply}
	if pfx := rfc3162.FramedIPv6Prefix_Get(reply); pfx == nil || pfx.String() != "2001:db8:0:7::/64" {
		t.Errorf("Framed-IPv6-Prefix %v", pfx)
	}
	if pfx := rfc4818.DelegatedIPv6Prefix_Get(reply); pfx == nil || pfx.String() != "2001:db8:100:ab00::/56" {
		t.Errorf("Delegated-IPv6-Prefix %v", pfx)
	}
	if rfc3162.FramedIPv6Pool_GetString(reply) != "v6-wan" || rfc6911.DelegatedIPv6PrefixPool_GetString(reply) != "pd-pool" {
		t.Error("Framed-IPv6-Pool / Delegated-IPv6-Prefix-Pool")
	}
	if ip := rfc6911.FramedIPv6Address_Get(reply); !ip.Equal(net.ParseIP("2001:db8:0:7::1")) {
		t.Errorf("Framed-IPv6-Address %v", ip)
	}
	if ip := rfc2865.FramedIPAddress_Get(reply); !ip.Equal(net.IPv4(10, 1, 0, 1)) {
		t.Errorf("Framed-IP-Address %v (dual stack)", ip)
	}
	dns, _ := rfc6911.DNSServerIPv6Address_Gets(reply)
	if len(dns) != 2 || !dns[0].Equal(net.ParseIP("2001:db8::53")) || !dns[1].Equal(net.ParseIP("2001:db8::5353")) {
		t.Errorf("DNS-Server-IPv6-Address %v, want both in order", dns)
	}
	for field, bad := range map[string]subscriber.Profile{
		"delegatedIPv6Prefix":       {DelegatedIPv6Prefix: "10.0.0.0/8"},
		"framedIPv6Prefix":          {FramedIPv6Prefix: "2001:db8::"},
		"framedIPv6Address":         {FramedIPv6Address: "10.0.0.1"},
		"dnsServerIPv6Addresses[1]": {DNSServerIPv6Addresses: []string{"2001:db8::53", "dns.example"}},
	} {
		if err := d.CheckProfile(&bad); err == nil || !strings.HasPrefix(err.Error(), field) {
			t.Errorf("%+v: %v, want an error naming %s", bad, err, field)
		}
	}
}

func TestAccountingQuota(t *testing.T) {
	t.Parallel() // its metrics are its own
	d := newPolicy()
	d.Disconnects = metrics.New(metrics.With(prometheus.NewRegistry())).PolicyDisconnects
	sub := &subscriber.Subscriber{Username: "alice", Profile: subscriber.Profile{QuotaOctets: 1000}}
	period := &subscriber.Subscriber{Username: "bob", Profile: subscriber.Profile{QuotaOctets: 1000, UsedOctets: 800}}
	before := testutil.ToFloat64(d.Disconnects.WithLabelValues(QuotaReason))
	cases := []struct {
		kind    session.Kind
		in, out uint64
		sub     *subscriber.Subscriber
		want    string
	}{
		{session.KindInterim, 400, 599, sub, ""},
		{session.KindInterim, 400, 600, sub, QuotaReason},
		{session.KindStart, 5000, 0, sub, QuotaReason},
		{session.KindStop, 5000, 5000, sub, ""}, // already ending
		{session.KindInterim, 5000, 5000, &subscriber.Subscriber{}, ""},
		{session.KindInterim, 5000, 5000, nil, ""},
		{session.KindInterim, 1 << 40, 1 << 40, sub, QuotaReason}, // beyond 32 bits (Gigawords)
		// the billing period's usage before this session counts too
		{session.KindInterim, 100, 99, period, ""},
		{session.KindInterim, 100, 100, period, QuotaReason},
	}
	marked := 0
	for i, c := range cases {
		u := &session.Update{Kind: c.kind, Session: session.Session{InputOctets: c.in, OutputOctets: c.out}}
		acts := d.Accounting(context.Background(), nil, u, c.sub)
		if acts.Disconnect != c.want || u.Session.DisconnectReason != "" {
			t.Errorf("case %d: Disconnect %q (update's %q), want %q", i, acts.Disconnect, u.Session.DisconnectReason, c.want)
		}
		if c.want != "" {
			marked++
		}
	}
	if d := testutil.ToFloat64(d.Disconnects.WithLabelValues(QuotaReason)) - before; d != float64(marked) {
		t.Fatalf("disconnects_marked delta %v, want %d", d, marked)
	}
}

// Several values of one attribute are repeated attributes in the profile's order (what
// FreeRADIUS sends for `Cisco-AVPair += ...` lines); a bad value is named by its index.
func TestReplyAttributesRepeated(t *testing.T) {
	d := newPolicy()
	attrs, err := d.ReplyAttributes(&subscriber.Profile{ReplyAttributes: subscriber.ReplyAttributes{
		"Cisco-AVPair":          {"ip:addr-pool=gold", "subscriber:accounting-list=acct", "ip:vrf-id=inet"},
		"Mikrotik-Address-List": {"list-a", "list-b"},
		"Framed-MTU":            {"1492"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, avp := range attrs {
		if avp.Type == 26 {
			got = append(got, string(avp.Attribute[6:]))
		}
	}
	want := "[ip:addr-pool=gold subscriber:accounting-list=acct ip:vrf-id=inet list-a list-b]"
	if fmt.Sprint(got) != want {
		t.Fatalf("VSAs %q, want %q", got, want)
	}
	_, err = d.ReplyAttributes(&subscriber.Profile{ReplyAttributes: subscriber.ReplyAttributes{"Framed-MTU": {"1400", "big"}}})
	if err == nil || !strings.HasPrefix(err.Error(), "replyAttributes.Framed-MTU[1]:") {
		t.Fatalf("bad second value: %v", err)
	}
}

// A tagged attribute takes FreeRADIUS's Name:tag (RFC 2868 tags 1-31); an attribute without
// has_tag refuses one.
func TestReplyAttributesTagged(t *testing.T) {
	d := newPolicy()
	attrs, err := d.ReplyAttributes(&subscriber.Profile{ReplyAttributes: subscriber.ReplyAttributes{
		"ERX-Service-Activate:1": {"svc-a"}, "ERX-Service-Activate:2": {"svc-b"}, "Tunnel-Type:3": {"VLAN"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, avp := range attrs {
		got = append(got, fmt.Sprintf("%d:% x", avp.Type, []byte(avp.Attribute)))
	}
	want := "[26:00 00 13 0a 41 08 01 73 76 63 2d 61 26:00 00 13 0a 41 08 02 73 76 63 2d 62 64:03 00 00 0d]"
	if fmt.Sprint(got) != want {
		t.Fatalf("%s, want %s", got, want)
	}
	for _, bad := range []string{"Framed-MTU:1", "ERX-Service-Activate:32", "Tunnel-Type:x"} {
		err := d.CheckProfile(&subscriber.Profile{ReplyAttributes: subscriber.ReplyAttributes{bad: {"1"}}})
		if err == nil || !strings.Contains(err.Error(), "replyAttributes."+bad) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
