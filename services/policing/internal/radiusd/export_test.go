package radiusd

import (
	"net"
	"net/netip"
	"time"

	"layeh.com/radius"
)

// ServePacket runs one datagram through the worker's check, parse and dispatch path
// synchronously, as if a reader had queued it (the seam of FuzzServePacket). Datagrams
// longer than a read buffer are cut as a socket read would cut them.
func (s *Server) ServePacket(b []byte, from netip.AddrPort, conn *net.UDPConn, kind Kind, h Handler) {
	buf := s.bufs.Get().(*[radius.MaxPacketLength]byte)
	n := copy(buf[:], b)
	s.serve(&job{buf: buf, n: n, from: from, conn: conn, kind: kind, handler: h, at: time.Now()}, new(arena))
	s.bufs.Put(buf)
}
