package radiusd

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"layeh.com/radius"

	"github.com/openaaa/openaaa/services/policing/config"
)

// On a wildcard socket the reply leaves from the address the request was sent to. All of
// 127.0.0.0/8 is loopback on Linux, so 127.0.0.2 plays a second address of a multi-homed
// node (or a VIP): the kernel would answer a request sent to it from 127.0.0.1, its
// preferred source, and the NAS — here a UDP socket connected to 127.0.0.2, which takes
// datagrams from that address only — would never see the reply.
func TestReplyFromTheAddressTheRequestWasSentTo(t *testing.T) {
	bothDispatches(t, func(t *testing.T, inline bool) {
		for _, c := range []struct{ listen, to string }{
			{"0.0.0.0:0", "127.0.0.2"},
			{"[::]:0", "127.0.0.2"}, // dual-stack socket, IPv4-mapped request
			{"[::]:0", "::1"},
			{"127.0.0.2:0", "127.0.0.2"}, // a socket bound to the address needs nothing
		} {
			t.Run(c.listen+"->"+c.to, func(t *testing.T) {
				s := New(Options{Inline: inline, Workers: 2, Readers: 1, DuplicateWindow: time.Second, Log: quietLog()},
					clientTable(t, config.Client{Name: "lo", Address: "127.0.0.0/8"}, config.Client{Name: "lo6", Address: "::1"}))
				t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
				ln, err := s.Listen(c.listen, Auth, newRecorder(radius.CodeAccessAccept))
				if err != nil {
					t.Skipf("cannot listen on %s here: %v", c.listen, err)
				}
				port := ln.LocalAddr().(*net.UDPAddr).Port
				conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(c.to), uint16(port))))
				if err != nil {
					t.Skipf("no route to %s here: %v", c.to, err)
				}
				t.Cleanup(func() { _ = conn.Close() })
				b := request(t, reqOpt{code: radius.CodeAccessRequest, withMA: true})
				// A connected socket receives only what comes from c.to: getting the reply
				// at all proves its source.
				p := roundTrip(t, conn, b)
				if p.Code != radius.CodeAccessAccept {
					t.Fatalf("code %v", p.Code)
				}
				// The retransmission answered from the duplicate cache leaves from it too.
				roundTrip(t, conn, b)
			})
		}
	})
}

// The control message that sets the source is what the kernel expects: in_pktinfo with
// ipi_spec_dst for IPv4, in6_pktinfo for IPv6 (with the interface for a link-local one),
// nothing for addresses that cannot be a source.
func TestReplySourceControlMessage(t *testing.T) {
	var oob [srcOOBSize]byte
	for _, c := range []struct {
		src  string
		want string // parsed back
	}{
		{"127.0.0.2", "127.0.0.2"},
		{"2001:db8::1", "2001:db8::1"},
		{"fe80::1", "fe80::1"},
		{"255.255.255.255", ""},
		{"224.0.0.1", ""},
		{"0.0.0.0", ""},
	} {
		n := replySource(&oob, netip.MustParseAddr(c.src), 7)
		if c.want == "" {
			if n != 0 {
				t.Errorf("%s: %d octets of control message, want none", c.src, n)
			}
			continue
		}
		// The sending form of in_pktinfo carries the source in ipi_spec_dst; read it back.
		m := parseSent(oob[:n])
		if got := fmt.Sprint(m); got != c.want {
			t.Errorf("%s: control message sets source %s", c.src, got)
		}
	}
	if n := replySource(&oob, netip.Addr{}, 0); n != 0 {
		t.Error("no destination known: no control message")
	}
}

// parseSent reads the source address from a control message built by replySource.
func parseSent(oob []byte) netip.Addr {
	if len(oob) < 16+12 {
		return netip.Addr{}
	}
	if oob[8] == 0 { // IPPROTO_IP: in_pktinfo{ifindex, spec_dst, addr}
		return netip.AddrFrom4([4]byte(oob[16+4 : 16+8]))
	}
	return netip.AddrFrom16([16]byte(oob[16 : 16+16]))
}
