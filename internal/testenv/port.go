package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"
)

// Ports for test servers that take theirs from a configuration file are picked below the
// kernel's ephemeral range: a port the kernel handed out free a moment ago (port 0) is the
// kind it hands out next for any process's outgoing socket, and under make test's load one
// took a policing listener's port between the pick and the bind (a cold run, 2026-11-29:
// "bind: address already in use"). Below that range only another test's pick can collide,
// and the pick is random over thousands of ports. Not below pickLow: well-known services and
// the shared Cassandra node's (17000-19042); not from pickHigh: the benchmarks' fixed ports
// (27000 and up) and the local cluster's NodePorts (31000-31999), which its iptables rules
// take from 127.0.0.1 too (route_localnet).
const (
	pickLow  = 20000
	pickHigh = 27000
)

var (
	pickedMu sync.Mutex
	picked   = map[int]bool{} // handed out by this process: never twice
)

// ephemeralLow is the first port of the kernel's ephemeral range (32768 when unreadable).
func ephemeralLow() int {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var hi int
		if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
			lo = 32768
		}
	}
	return lo
}

// pick is the first of n consecutive ports on 127.0.0.1 that bind for network ("tcp", "udp"
// or "tcp+udp": both) now, below the ephemeral range, none handed out before by this process.
func pick(t testing.TB, network string, n int) int {
	t.Helper()
	hi := min(ephemeralLow(), pickHigh)
	if hi-pickLow < 1000 { // an ephemeral range set so low that nothing is below it
		hi = pickHigh
	}
	pickedMu.Lock()
	defer pickedMu.Unlock()
	for range 500 {
		p := pickLow + rand.IntN(hi-pickLow-n)
		if bindable(network, p, n) {
			for i := range n {
				picked[p+i] = true
			}
			return p
		}
	}
	t.Fatalf("no %d consecutive free %s ports on 127.0.0.1 in [%d, %d)", n, network, pickLow, hi)
	return 0
}

func bindable(network string, p, n int) bool {
	var closers []func() error
	defer func() {
		for _, c := range closers {
			_ = c()
		}
	}()
	for i := range n {
		if picked[p+i] {
			return false
		}
		addr := fmt.Sprintf("127.0.0.1:%d", p+i)
		if network != "udp" {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return false
			}
			closers = append(closers, l.Close)
		}
		if network != "tcp" {
			c, err := net.ListenPacket("udp", addr)
			if err != nil {
				return false
			}
			closers = append(closers, c.Close)
		}
	}
	return true
}

// FreePort is a TCP port on 127.0.0.1 free a moment ago, for a test peer (a daemon that
// cannot be told to pick its own) to listen on.
func FreePort(t testing.TB) int {
	t.Helper()
	return pick(t, "tcp", 1)
}

// FreeUDPPort is a UDP port on 127.0.0.1 free a moment ago, for a server that takes its port
// from a configuration file (policing's RADIUS listeners).
func FreeUDPPort(t testing.TB) int {
	t.Helper()
	return pick(t, "udp", 1)
}

// FreeUDPPorts is the first of n consecutive UDP ports on 127.0.0.1 free a moment ago, for a
// server that takes one port and the next ones from it (FreeRADIUS: auth and accounting).
func FreeUDPPorts(t testing.TB, n int) int {
	t.Helper()
	return pick(t, "udp", n)
}

// FreeTCPUDPPorts is n ports on 127.0.0.1, each free a moment ago for both TCP and UDP, for
// servers that listen on one port with both (RADIUS and RadSec, Diameter beside RADIUS).
func FreeTCPUDPPorts(t testing.TB, n int) []int {
	t.Helper()
	out := make([]int, n)
	for i := range out {
		out[i] = pick(t, "tcp+udp", 1)
	}
	return out
}
