package session

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Claims are the IPv6 prefixes a session holds, longest first, each masked and once:
// Framed-IPv6-Address (a /128), Framed-IPv6-Prefix, Delegated-IPv6-Prefix; unused places
// hold the zero (invalid) Prefix. An array, not a slice: comparable, and no allocation on
// the accounting path that indexes them.
type Claims [3]netip.Prefix

// IPv6Claims returns the session's claims. A lookup by IPv6 (Store.ByIPv6) finds the
// session through any of them.
func (s *Session) IPv6Claims() Claims {
	var out Claims
	n := 0
	add := func(p netip.Prefix) {
		if !p.IsValid() || !p.Addr().Is6() || p.Addr().Is4In6() {
			return
		}
		p = p.Masked()
		for _, q := range out[:n] {
			if q == p {
				return
			}
		}
		out[n] = p
		// Longest first: the order a longest-prefix match wants.
		for j := n; j > 0 && out[j].Bits() > out[j-1].Bits(); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
		n++
	}
	if a := s.FramedIPv6Address; a.IsValid() {
		add(netip.PrefixFrom(a.WithZone(""), 128))
	}
	add(s.FramedIPv6Prefix)
	add(s.DelegatedIPv6Prefix)
	return out
}

// Covers reports whether the claim c covers the query q: q lies inside c (an address is a
// /128; a prefix query is covered by a claim as long as or shorter than it).
func Covers(c, q netip.Prefix) bool {
	return c.Bits() <= q.Bits() && c.Contains(q.Addr())
}

// IPv6Match returns the length of the session's longest IPv6 claim covering q, -1 if none.
func (s *Session) IPv6Match(q netip.Prefix) int {
	for _, c := range s.IPv6Claims() { // longest first
		if c.IsValid() && Covers(c, q) {
			return c.Bits()
		}
	}
	return -1
}

// BestIPv6 picks the answer of Store.ByIPv6 among candidate sessions: the longest claim
// covering q wins; between sessions holding the same claim, the one seen last. nil if none
// covers q.
func BestIPv6(q netip.Prefix, candidates []*Session) *Session {
	var best *Session
	bestLen := -1
	for _, s := range candidates {
		if s == nil || s.State != Active {
			continue
		}
		n := s.IPv6Match(q)
		if n > bestLen || (n == bestLen && n >= 0 && s.LastSeen.After(best.LastSeen)) {
			best, bestLen = s, n
		}
	}
	return best
}

// ParseIPQuery reads the address an operator looks a session up by: an IPv4 address (the
// framed IP), an IPv6 address, or an IPv6 prefix such as 2001:db8:1:100::/56. The answer
// is a prefix, an address as one of its full length; IPv4-mapped IPv6 is read as IPv4.
func ParseIPQuery(text string) (netip.Prefix, error) {
	text = strings.TrimSpace(text)
	if strings.Contains(text, "/") {
		p, err := netip.ParsePrefix(text)
		if err != nil {
			return netip.Prefix{}, err
		}
		if !p.Addr().Is6() || p.Addr().Is4In6() {
			return netip.Prefix{}, fmt.Errorf("%q: an IPv4 lookup takes an address, not a prefix", text)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(text)
	if err != nil {
		return netip.Prefix{}, err
	}
	if a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("%q: a zoned (link-local) address names no session", text)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// ByIP finds the active session of a query as ParseIPQuery reads it: an IPv4 address by the
// framed IP, anything IPv6 by Store.ByIPv6 (longest-prefix match).
func ByIP(ctx context.Context, st Store, q netip.Prefix) (*Session, error) {
	if !q.IsValid() {
		return nil, errors.New("no address to look up")
	}
	if q.Addr().Is4() {
		return st.ByFramedIP(ctx, q.Addr())
	}
	return st.ByIPv6(ctx, q)
}
