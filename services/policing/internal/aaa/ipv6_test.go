package aaa

import (
	"net/netip"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"layeh.com/radius"
	"layeh.com/radius/rfc2866"
	"layeh.com/radius/rfc3162"
	"layeh.com/radius/rfc4818"
)

// A malformed IPv6 attribute is ignored and counted; the request is still stored and
// answered (RFC 6929 §2.8). Bits past a prefix's length are cleared, not refused.
func TestAcctMalformedIPv6Ignored(t *testing.T) {
	st := &fakeStore{}
	h := acctHandler(st, &fakeSource{})
	count := func(name string) float64 {
		return testutil.ToFloat64(testMetrics.shared.InvalidAttributes.WithLabelValues(name))
	}
	pd, nas := count("Delegated-IPv6-Prefix"), count("NAS-IPv6-Address")
	w := &recWriter{}
	h.ServeRADIUS(w, acctRequest(rfc2866.AcctStatusType_Value_Start, "bad6", func(p *radius.Packet) {
		p.Add(rfc4818.DelegatedIPv6Prefix_Type, radius.Attribute{0, 200, 0x20, 0x01})
		p.Add(rfc3162.NASIPv6Address_Type, radius.Attribute{1, 2, 3})
		p.Add(rfc3162.FramedIPv6Prefix_Type, radius.Attribute{0, 56, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0xab, 0xcd, 0xff})
	}))
	if len(w.replies) != 1 || len(st.updates) != 1 {
		t.Fatalf("replies %d, updates %d; want the request stored and answered", len(w.replies), len(st.updates))
	}
	s := st.updates[0].Session
	if s.DelegatedIPv6Prefix.IsValid() || s.NASIPv6Address.IsValid() {
		t.Fatalf("malformed attributes stored: %v %v", s.DelegatedIPv6Prefix, s.NASIPv6Address)
	}
	if want := netip.MustParsePrefix("2001:db8:ab:cd00::/56"); s.FramedIPv6Prefix != want {
		t.Fatalf("Framed-IPv6-Prefix %v, want %v", s.FramedIPv6Prefix, want)
	}
	if count("Delegated-IPv6-Prefix") != pd+1 || count("NAS-IPv6-Address") != nas+1 {
		t.Fatal("malformed attributes not counted")
	}
}
