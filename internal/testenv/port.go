package testenv

import (
	"fmt"
	"net"
	"testing"
)

// FreePort is a TCP port on 127.0.0.1 free a moment ago, for a test peer (a daemon that
// cannot be told to pick its own) to listen on.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FreeUDPPort is a UDP port on 127.0.0.1 free a moment ago, for a server that takes its port
// from a configuration file (policing's RADIUS listeners).
func FreeUDPPort(t testing.TB) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// FreeUDPPorts is the first of n consecutive UDP ports on 127.0.0.1 free a moment ago, for a
// server that takes one port and the next ones from it (FreeRADIUS: auth and accounting).
func FreeUDPPorts(t testing.TB, n int) int {
	t.Helper()
	for range 50 {
		first, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := first.LocalAddr().(*net.UDPAddr).Port
		held := []net.PacketConn{first}
		for i := 1; i < n && p+i < 65536; i++ {
			c, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", p+i))
			if err != nil {
				break
			}
			held = append(held, c)
		}
		for _, c := range held {
			c.Close()
		}
		if len(held) == n {
			return p
		}
	}
	t.Fatalf("no %d consecutive free UDP ports on 127.0.0.1", n)
	return 0
}
