package radiusd

import (
	"encoding/binary"
	"net"
	"syscall"
	"time"
)

// enableRxMeta asks the kernel to attach to every datagram its arrival time
// (SO_TIMESTAMPNS) and the socket's running count of datagrams dropped because the receive
// buffer was full (SO_RXQ_OVFL). Both are best effort: without them the read time stands in
// for the arrival time and buffer drops go uncounted.
func enableRxMeta(c *net.UDPConn) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RXQ_OVFL, 1)
	})
}

// oobSize holds both control messages.
var oobSize = syscall.CmsgSpace(16) + syscall.CmsgSpace(4)

// parseRxMeta reads the arrival time and the drop count from a datagram's control
// messages without allocating. ok reports whether a drop count was present.
func parseRxMeta(oob []byte) (arrived time.Time, drops uint32, ok bool) {
	for len(oob) >= syscall.SizeofCmsghdr {
		l := int(binary.NativeEndian.Uint64(oob[0:8]))
		level := int32(binary.NativeEndian.Uint32(oob[8:12]))
		typ := int32(binary.NativeEndian.Uint32(oob[12:16]))
		if l < syscall.SizeofCmsghdr || l > len(oob) {
			return arrived, drops, ok
		}
		data := oob[syscall.SizeofCmsghdr:l]
		if level == syscall.SOL_SOCKET {
			switch typ {
			case syscall.SO_TIMESTAMPNS:
				if len(data) >= 16 {
					arrived = time.Unix(int64(binary.NativeEndian.Uint64(data[0:8])), int64(binary.NativeEndian.Uint64(data[8:16])))
				}
			case syscall.SO_RXQ_OVFL:
				if len(data) >= 4 {
					drops, ok = binary.NativeEndian.Uint32(data[0:4]), true
				}
			}
		}
		space := syscall.CmsgSpace(l - syscall.SizeofCmsghdr)
		if space > len(oob) {
			break
		}
		oob = oob[space:]
	}
	return arrived, drops, ok
}
