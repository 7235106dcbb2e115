package session

import (
	"net/netip"
	"testing"
)

func TestIPv6ClaimsAndMatch(t *testing.T) {
	s := &Session{State: Active,
		DelegatedIPv6Prefix: netip.MustParsePrefix("2001:db8:100:ab00::/56"),
		FramedIPv6Prefix:    netip.MustParsePrefix("2001:db8:0:7::/64"),
		FramedIPv6Address:   netip.MustParseAddr("2001:db8:0:7::1"),
	}
	c := s.IPv6Claims()
	want := Claims{netip.MustParsePrefix("2001:db8:0:7::1/128"), netip.MustParsePrefix("2001:db8:0:7::/64"), netip.MustParsePrefix("2001:db8:100:ab00::/56")}
	if c != want {
		t.Fatalf("claims %v, want %v (longest first)", c, want)
	}
	// The same prefix twice, an IPv4-mapped one, a prefix with host bits: once, masked, none.
	d := &Session{FramedIPv6Prefix: netip.MustParsePrefix("2001:db8::1/64"), DelegatedIPv6Prefix: netip.MustParsePrefix("2001:db8::/64"),
		FramedIPv6Address: netip.MustParseAddr("::ffff:10.0.0.1")}
	if c := d.IPv6Claims(); c != (Claims{netip.MustParsePrefix("2001:db8::/64")}) {
		t.Fatalf("claims %v", c)
	}
	for q, n := range map[string]int{
		"2001:db8:0:7::1/128":     128,
		"2001:db8:0:7::2/128":     64,
		"2001:db8:100:abcd::/64":  56,
		"2001:db8:100:ab00::/56":  56,
		"2001:db8:100::/48":       -1, // wider than every claim
		"2001:db8:100:ac00::/128": -1,
	} {
		if got := s.IPv6Match(netip.MustParsePrefix(q)); got != n {
			t.Errorf("IPv6Match(%s) = %d, want %d", q, got, n)
		}
	}
}

func TestBestIPv6(t *testing.T) {
	mk := func(id, pd string, seen int) *Session {
		s := &Session{Key: Key{NAS: "n", ID: id}, State: Active, DelegatedIPv6Prefix: netip.MustParsePrefix(pd)}
		s.LastSeen = s.LastSeen.AddDate(0, 0, seen)
		return s
	}
	wide, narrow, again := mk("wide", "2001:db8::/48", 3), mk("narrow", "2001:db8:0:ab00::/56", 1), mk("again", "2001:db8:0:ab00::/56", 2)
	q := netip.MustParsePrefix("2001:db8:0:ab12::1/128")
	if b := BestIPv6(q, []*Session{wide, narrow}); b != narrow {
		t.Fatalf("best %v, want the longest claim", b)
	}
	if b := BestIPv6(q, []*Session{narrow, again, wide}); b != again {
		t.Fatalf("best %v, want the one seen last among equal claims", b)
	}
	again.State = Stopped
	if b := BestIPv6(q, []*Session{again, nil}); b != nil {
		t.Fatalf("best %v, want none", b)
	}
}

func TestParseIPQuery(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.1":               "10.0.0.1/32",
		" 2001:db8::1 ":          "2001:db8::1/128",
		"2001:db8:1:2::/56":      "2001:db8:1::/56",
		"::ffff:10.0.0.1":        "10.0.0.1/32",
		"2001:db8:100:ab00::/56": "2001:db8:100:ab00::/56",
	} {
		got, err := ParseIPQuery(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseIPQuery(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "10.0.0.0/8", "::ffff:10.0.0.0/104", "fe80::1%eth0", "2001:db8::/200"} {
		if p, err := ParseIPQuery(bad); err == nil {
			t.Errorf("ParseIPQuery(%q) = %v, want an error", bad, p)
		}
	}
}
