//go:build !linux

package radiusd

import (
	"net"
	"time"
)

func enableRxMeta(*net.UDPConn) {}

var oobSize = 64

func parseRxMeta([]byte) (time.Time, uint32, bool) { return time.Time{}, 0, false }
