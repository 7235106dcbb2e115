package testenv

import (
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
