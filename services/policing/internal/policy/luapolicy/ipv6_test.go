package luapolicy

import (
	"context"
	"net/netip"
	"testing"

	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// A script reads the session's IPv6 side and tests it with ip_in (longest-prefix rule:
// an address or a prefix inside a prefix), and hands out IPv6 reply attributes.
func TestIPv6SessionFieldsAndIPIn(t *testing.T) {
	e := newEngine(t, `
inputs = { accounting = { "session.delegatedIpv6Prefix", "session.nasIpv6Address", "session.framedIpv6Address" },
           authorize = { "sub.delegatedIPv6Prefix" } }
function accounting(req, session, sub)
  if ip_in(session.delegatedIpv6Prefix, "2001:db8:100::/40") and ip_in(session.nasIpv6Address, "2001:db8:ffff::/48")
     and ip_in(session.framedIpv6Address, session.delegatedIpv6Prefix) == false and not ip_in(nil, "::/0")
     and ip_in("10.1.2.3", "10.0.0.0/8") and not ip_in("10.1.2.3", "::/0") then
    disconnect("v6 block")
  end
end
function authorize(req, sub)
  reply("Delegated-IPv6-Prefix", sub.delegatedIPv6Prefix)
  reply("DNS-Server-IPv6-Address", "2001:db8::53")
end`)
	upd := func(pd string) policy.Actions {
		u := &session.Update{Kind: session.KindInterim}
		u.Session.Key = session.Key{NAS: "n", ID: pd}
		u.Session.DelegatedIPv6Prefix = netip.MustParsePrefix(pd)
		u.Session.NASIPv6Address = netip.MustParseAddr("2001:db8:ffff::1")
		u.Session.FramedIPv6Address = netip.MustParseAddr("2001:db8:0:7::1")
		return e.Accounting(context.Background(), request(t, "alice"), u, sub("gold", ""))
	}
	if a := upd("2001:db8:1ab:cd00::/56"); a.Disconnect != "v6 block" {
		t.Fatalf("a prefix inside the block: %+v", a)
	}
	if a := upd("2001:db8:200:cd00::/56"); a.Disconnect != "" {
		t.Fatalf("a prefix outside the block: %+v", a)
	}
	s := sub("gold", "")
	s.Profile.DelegatedIPv6Prefix = "2001:db8:100:ab00::/56"
	d := e.Authorize(context.Background(), request(t, "alice"), s)
	if !d.Accept || replyText(t, d, "Delegated-IPv6-Prefix") != "2001:db8:100:ab00::/56" || replyText(t, d, "DNS-Server-IPv6-Address") != "2001:db8::53" {
		t.Fatalf("reply %+v", d)
	}
}
