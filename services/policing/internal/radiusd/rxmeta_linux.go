package radiusd

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// enableRxMeta asks the kernel to attach to every datagram its arrival time
// (SO_TIMESTAMPNS) and the socket's running count of datagrams dropped because the receive
// buffer was full (SO_RXQ_OVFL). Both are best effort: without them the read time stands in
// for the arrival time and buffer drops go uncounted.
//
// On a wildcard socket (0.0.0.0, [::]) it also asks for the address each datagram was sent
// to (IP_PKTINFO, IPV6_RECVPKTINFO), so that the reply leaves from that address: a NAS
// accepts a reply only from the address it sent to, and on a multi-homed node or a VIP
// the kernel's choice of source may be another one. A socket bound to one address needs
// none of it: its replies leave from that address.
func enableRxMeta(c *net.UDPConn, wildcard bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RXQ_OVFL, 1)
		if wildcard {
			// One of them fails on a socket of the other family; an IPv6 socket takes both
			// (IPv4 datagrams arrive on it as IPv4-mapped addresses).
			_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_PKTINFO, 1)
			_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IPV6, syscall.IPV6_RECVPKTINFO, 1)
		}
	})
}

// oobSize holds every control message asked for above.
var oobSize = syscall.CmsgSpace(16) + syscall.CmsgSpace(4) + syscall.CmsgSpace(syscall.SizeofInet4Pktinfo) +
	syscall.CmsgSpace(syscall.SizeofInet6Pktinfo)

// parseRxMeta reads a datagram's control messages without allocating.
func parseRxMeta(oob []byte) (m rxMeta) {
	for len(oob) >= syscall.SizeofCmsghdr {
		l := int(binary.NativeEndian.Uint64(oob[0:8]))
		level := int32(binary.NativeEndian.Uint32(oob[8:12]))
		typ := int32(binary.NativeEndian.Uint32(oob[12:16]))
		if l < syscall.SizeofCmsghdr || l > len(oob) {
			return m
		}
		data := oob[syscall.SizeofCmsghdr:l]
		switch {
		case level == syscall.SOL_SOCKET && typ == syscall.SO_TIMESTAMPNS && len(data) >= 16:
			m.arrived = time.Unix(int64(binary.NativeEndian.Uint64(data[0:8])), int64(binary.NativeEndian.Uint64(data[8:16])))
		case level == syscall.SOL_SOCKET && typ == syscall.SO_RXQ_OVFL && len(data) >= 4:
			m.drops, m.hasDrops = binary.NativeEndian.Uint32(data[0:4]), true
		case level == syscall.IPPROTO_IP && typ == syscall.IP_PKTINFO && len(data) >= syscall.SizeofInet4Pktinfo:
			// struct in_pktinfo: ifindex, spec_dst, addr (the header's destination).
			m.ifIndex = binary.NativeEndian.Uint32(data[0:4])
			m.dst = netip.AddrFrom4([4]byte(data[8:12]))
		case level == syscall.IPPROTO_IPV6 && typ == syscall.IPV6_PKTINFO && len(data) >= syscall.SizeofInet6Pktinfo:
			// struct in6_pktinfo: addr, ifindex.
			m.dst = netip.AddrFrom16([16]byte(data[0:16])).Unmap()
			m.ifIndex = binary.NativeEndian.Uint32(data[16:20])
		}
		space := syscall.CmsgSpace(l - syscall.SizeofCmsghdr)
		if space > len(oob) {
			break
		}
		oob = oob[space:]
	}
	return m
}

// srcOOBSize holds the one control message that sets a reply's source address.
const srcOOBSize = syscall.SizeofCmsghdr + 24 // CmsgSpace(SizeofInet6Pktinfo)

// replySource encodes into oob the control message that makes a reply leave from src
// (the address the request was sent to) and returns its length; 0 when src cannot be a
// source (a broadcast or multicast destination), and the kernel picks as usual.
func replySource(oob *[srcOOBSize]byte, src netip.Addr, ifIndex uint32) int {
	if !src.IsValid() || src.IsMulticast() || src.IsUnspecified() || src == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return 0
	}
	b := oob[:]
	clear(b)
	if src.Is4() {
		// struct in_pktinfo with ipi_spec_dst = src; no interface, the route decides.
		n := syscall.CmsgLen(syscall.SizeofInet4Pktinfo)
		putCmsgHdr(b, n, syscall.IPPROTO_IP, syscall.IP_PKTINFO)
		a := src.As4()
		copy(b[syscall.SizeofCmsghdr+4:], a[:])
		return syscall.CmsgSpace(syscall.SizeofInet4Pktinfo)
	}
	n := syscall.CmsgLen(syscall.SizeofInet6Pktinfo)
	putCmsgHdr(b, n, syscall.IPPROTO_IPV6, syscall.IPV6_PKTINFO)
	a := src.As16()
	copy(b[syscall.SizeofCmsghdr:], a[:])
	if src.IsLinkLocalUnicast() { // a link-local source only means something on its interface
		binary.NativeEndian.PutUint32(b[syscall.SizeofCmsghdr+16:], ifIndex)
	}
	return syscall.CmsgSpace(syscall.SizeofInet6Pktinfo)
}

func putCmsgHdr(b []byte, l, level, typ int) {
	binary.NativeEndian.PutUint64(b[0:8], uint64(l))
	binary.NativeEndian.PutUint32(b[8:12], uint32(level))
	binary.NativeEndian.PutUint32(b[12:16], uint32(typ))
}
