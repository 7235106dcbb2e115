//go:build !linux

package radiusd

import (
	"net"
	"net/netip"
)

func enableRxMeta(*net.UDPConn, bool) {}

var oobSize = 64

func parseRxMeta([]byte) rxMeta { return rxMeta{} }

const srcOOBSize = 40

func replySource(*[srcOOBSize]byte, netip.Addr, uint32) int { return 0 }
