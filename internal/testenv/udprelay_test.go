package testenv

import (
	"net"
	"strings"
	"testing"
	"time"
)

// echo answers every datagram with its name, the datagram and the source it saw.
func echo(t *testing.T, name string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			_, _ = c.WriteToUDP([]byte(name+" "+string(buf[:n])+" "+from.String()), from)
		}
	}()
	return c
}

// Requests go to each backend in turn, across clients; each answer goes back to the client
// that sent the request; a backend sees one source per client.
func TestUDPRelay(t *testing.T) {
	a, b := echo(t, "a"), echo(t, "b")
	r := StartUDPRelay(t, a.LocalAddr().String(), b.LocalAddr().String())
	dial := func() *net.UDPConn {
		c, err := net.DialUDP("udp", nil, r.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	ask := func(c *net.UDPConn, msg string) (string, string) {
		t.Helper()
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 1500)
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("%s: %v", msg, err)
		}
		var backend, echoed, src string
		for i, f := range strings.Fields(string(buf[:n])) {
			switch i {
			case 0:
				backend = f
			case 1:
				echoed = f
			case 2:
				src = f
			}
		}
		if echoed != msg {
			t.Fatalf("sent %q, %s answered %q", msg, backend, echoed)
		}
		return backend, src
	}
	c1, c2 := dial(), dial()
	var order []string
	srcs := map[string]map[string]bool{} // backend -> sources
	for i, c := range []*net.UDPConn{c1, c1, c2, c2, c1} {
		backend, src := ask(c, "m"+string(rune('0'+i)))
		order = append(order, backend)
		if srcs[backend] == nil {
			srcs[backend] = map[string]bool{}
		}
		srcs[backend][src] = true
	}
	if got := strings.Join(order, " "); got != "a b a b a" {
		t.Fatalf("backends in turn: %s", got)
	}
	if s := r.Sent(); s[0] != 3 || s[1] != 2 {
		t.Fatalf("Sent = %v", s)
	}
	r.SetNext(0) // b was next
	if backend, _ := ask(c2, "m5"); backend != "a" {
		t.Fatalf("SetNext(0): %s answered", backend)
	}
	if len(srcs["a"]) != 2 || len(srcs["b"]) != 2 {
		t.Fatalf("sources seen: %v", srcs)
	}
	// b is lost at the second datagram from now: the hook runs before it, b gets nothing more.
	lost := false
	r.LoseAt(2, 1, func() { lost = true })
	order = order[:0]
	for i := range 4 {
		backend, _ := ask(c1, "l"+string(rune('0'+i)))
		order = append(order, backend)
	}
	if got := strings.Join(order, " "); got != "b a a a" || !lost {
		t.Fatalf("b lost at the second datagram: %s (hook ran: %v)", got, lost)
	}
	r.Restore()
	r.SetNext(1)
	if backend, _ := ask(c1, "r"); backend != "b" {
		t.Fatalf("after Restore: %s answered", backend)
	}
	// A route picks the backend of each datagram, from its content; nil: round robin again.
	r.SetRoute(func(d []byte) int {
		if strings.HasPrefix(string(d), "to-b") {
			return 1
		}
		return 0
	})
	order = order[:0]
	for _, m := range []string{"to-b1", "to-a", "to-b2", "to-b3"} {
		backend, _ := ask(c2, m)
		order = append(order, backend)
	}
	if got := strings.Join(order, " "); got != "b a b b" {
		t.Fatalf("routed: %s", got)
	}
	r.SetRoute(nil)
	r.SetNext(0)
	if b1, _ := ask(c2, "to-b4"); b1 != "a" {
		t.Fatalf("round robin after SetRoute(nil): %s answered", b1)
	}
	r.Close()
	r.Close() // idempotent
}
