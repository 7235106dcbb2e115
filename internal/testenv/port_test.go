package testenv

import (
	"net"
	"strconv"
	"testing"
)

// The ports handed out are below the kernel's ephemeral range and the fixed ones, never twice, and bind.
func TestFreePortsBelowTheEphemeralRange(t *testing.T) {
	hi := min(ephemeralLow(), pickHigh)
	seen := map[int]bool{}
	for range 200 {
		for _, p := range []int{FreePort(t), FreeUDPPort(t), FreeUDPPorts(t, 2), FreeUDPPorts(t, 2) + 1, FreeTCPUDPPorts(t, 1)[0]} {
			if hi-pickLow >= 1000 && (p < pickLow || p >= hi) {
				t.Fatalf("port %d outside [%d, %d)", p, pickLow, hi)
			}
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
		}
	}
	p := FreeUDPPort(t)
	c, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatalf("the port handed out does not bind: %v", err)
	}
	c.Close()
}
