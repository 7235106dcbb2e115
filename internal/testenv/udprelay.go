package testenv

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
)

// UDPRelay stands between a RADIUS client and several servers as a load balancer that does
// not stick would: each datagram a client sends to Addr goes to the next server in turn
// (round robin over all clients), and what a server answers goes back to the client that
// sent the request. Every client gets its own socket towards each server, so the servers see
// one source address per client (and the relay's address, not the client's). It runs until
// the test ends.
type UDPRelay struct {
	front    *net.UDPConn
	backends []*net.UDPAddr
	mu       sync.Mutex
	next     int
	sent     []int
	down     []bool // backends lost (LoseAt)
	count    int    // datagrams since LoseAt
	loseAt   int
	lost     int
	lose     func()
	route    func([]byte) int
	legs     map[netip.AddrPort][]*net.UDPConn
	wg       sync.WaitGroup
	closed   bool
}

// StartUDPRelay listens on 127.0.0.1 and relays to backends (host:port).
func StartUDPRelay(t testing.TB, backends ...string) *UDPRelay {
	t.Helper()
	if len(backends) == 0 {
		t.Fatal("UDPRelay: no backend")
	}
	r := &UDPRelay{legs: map[netip.AddrPort][]*net.UDPConn{}, sent: make([]int, len(backends)), down: make([]bool, len(backends))}
	for _, b := range backends {
		a, err := net.ResolveUDPAddr("udp", b)
		if err != nil {
			t.Fatalf("UDPRelay: backend %q: %v", b, err)
		}
		r.backends = append(r.backends, a)
	}
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	r.front = front
	r.wg.Add(1)
	go r.serve()
	t.Cleanup(r.Close)
	return r
}

// Addr is where clients send (127.0.0.1:port).
func (r *UDPRelay) Addr() *net.UDPAddr { return r.front.LocalAddr().(*net.UDPAddr) }

// Sent returns how many datagrams went to each backend, in the order given.
func (r *UDPRelay) Sent() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.sent...)
}

// SetNext makes backend i (in the order given) take the next datagram: a test places a
// conversation's rounds on chosen nodes.
func (r *UDPRelay) SetNext(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next = i % len(r.backends)
}

// SetRoute makes route pick the backend (its index in the order given) of every datagram
// from now on, instead of the round robin: a test places whole conversations on chosen
// nodes. nil restores the round robin.
func (r *UDPRelay) SetRoute(route func(datagram []byte) int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.route = route
}

// LoseAt loses backend i at the n-th datagram from now (1: the next): lose runs before that
// datagram is relayed (a test kills the node there), and from then on i gets no datagram, as
// a load balancer that found it dead would do, until Restore.
func (r *UDPRelay) LoseAt(n, i int, lose func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count, r.loseAt, r.lost, r.lose = 0, n, i, lose
}

// Restore makes every backend reachable again.
func (r *UDPRelay) Restore() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.down)
	r.lose = nil
}

// Close stops relaying and waits for the relay's goroutines.
func (r *UDPRelay) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	_ = r.front.Close()
	for _, conns := range r.legs {
		for _, c := range conns {
			_ = c.Close()
		}
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *UDPRelay) serve() {
	defer r.wg.Done()
	buf := make([]byte, 65535)
	for {
		n, from, err := r.front.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		conn := r.leg(from, buf[:n])
		if conn != nil {
			_, _ = conn.Write(buf[:n])
		}
	}
}

// leg picks the next backend and returns the client's socket towards it (made at the
// client's first datagram); nil once closed.
func (r *UDPRelay) leg(client netip.AddrPort, datagram []byte) *net.UDPConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	conns, ok := r.legs[client]
	if !ok {
		for _, b := range r.backends {
			c, err := net.DialUDP("udp", nil, b)
			if err != nil {
				for _, c := range conns {
					_ = c.Close()
				}
				return nil
			}
			conns = append(conns, c)
			r.wg.Add(1)
			go r.back(c, client)
		}
		r.legs[client] = conns
	}
	if r.count++; r.lose != nil && r.count == r.loseAt {
		r.lose() // under the lock: nothing is relayed while the backend goes
		r.lose, r.down[r.lost] = nil, true
	}
	if r.route != nil {
		i := r.route(datagram) % len(r.backends)
		r.sent[i]++
		return conns[i]
	}
	for range r.backends {
		if !r.down[r.next] {
			break
		}
		r.next = (r.next + 1) % len(r.backends)
	}
	i := r.next
	r.next = (r.next + 1) % len(r.backends)
	r.sent[i]++
	return conns[i]
}

// back relays a backend's answers on one client's socket to that client.
func (r *UDPRelay) back(c *net.UDPConn, client netip.AddrPort) {
	defer r.wg.Done()
	buf := make([]byte, 65535)
	for {
		n, err := c.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // ICMP port unreachable from a stopped backend: keep reading
		}
		_, _ = r.front.WriteToUDPAddrPort(buf[:n], client)
	}
}
