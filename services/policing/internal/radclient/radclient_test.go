package radclient

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// responder is a loopback UDP peer that records what it receives (payload, arrival time)
// and answers each datagram with what answer returns (nothing when nil).
type responder struct {
	addr string
	mu   sync.Mutex
	got  [][]byte
	at   []time.Time
}

func newResponder(t *testing.T, answer func(req []byte) [][]byte) *responder {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := &responder{addr: c.LocalAddr().String()}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			req := append([]byte(nil), buf[:n]...)
			r.mu.Lock()
			r.got, r.at = append(r.got, req), append(r.at, time.Now())
			r.mu.Unlock()
			if answer != nil {
				for _, b := range answer(req) {
					_, _ = c.WriteTo(b, from)
				}
			}
		}
	}()
	return r
}

func (r *responder) received() ([][]byte, []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.got...), append([]time.Time(nil), r.at...)
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

var wire = []byte("request-datagram")

func never([]byte) bool { return false }

func TestRetransmitsRetriesTimesThenTimesOut(t *testing.T) {
	r := newResponder(t, nil)
	var retrans atomic.Int32
	o := Options{Timeout: 50 * time.Millisecond, Retries: 2, OnRetransmit: func() { retrans.Add(1) }}
	reply, err := Exchange(context.Background(), dial(t, r.addr), wire, o, never)
	if !errors.Is(err, ErrTimeout) || reply != nil {
		t.Fatalf("got %q, %v; want ErrTimeout", reply, err)
	}
	if n := retrans.Load(); n != 2 {
		t.Errorf("OnRetransmit called %d times, want 2", n)
	}
	time.Sleep(20 * time.Millisecond) // let the responder record the last datagram
	got, _ := r.received()
	if len(got) != 3 {
		t.Fatalf("responder got %d datagrams, want 3 (1 + 2 retransmissions)", len(got))
	}
	for i, b := range got {
		if !bytes.Equal(b, wire) {
			t.Errorf("datagram %d is %q, want the same wire each time", i, b)
		}
	}
}

// TestContextDeadlineCutsTheTimer: a context deadline shorter than the timer ends the
// exchange at the deadline with the context's error, not after the 10s timer and without
// spending the remaining retransmissions against a deadline that has passed (the read's
// deadline and the context's timer expire together, and the read may win).
func TestContextDeadlineCutsTheTimer(t *testing.T) {
	for i := 0; i < 5; i++ {
		r := newResponder(t, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		var retrans atomic.Int32
		o := Options{Timeout: 10 * time.Second, Retries: 3, OnRetransmit: func() { retrans.Add(1) }}
		start := time.Now()
		_, err := Exchange(ctx, dial(t, r.addr), wire, o, never)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
		if n := retrans.Load(); n != 0 {
			t.Fatalf("%d retransmissions after the context's deadline", n)
		}
		if d := time.Since(start); d < 140*time.Millisecond || d > 2*time.Second {
			t.Errorf("returned after %v, want about the 150ms context deadline", d)
		}
	}
}

// TestCancelledContextEndsAfterTheTimer: cancellation (no deadline) does not interrupt a
// read; the exchange returns ctx's error when the running timer ends, without retransmitting.
func TestCancelledContextEndsAfterTheTimer(t *testing.T) {
	r := newResponder(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	var retrans atomic.Int32
	o := Options{Timeout: 150 * time.Millisecond, Retries: 3, OnRetransmit: func() { retrans.Add(1) }}
	start := time.Now()
	_, err := Exchange(ctx, dial(t, r.addr), wire, o, never)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d < 140*time.Millisecond || d > 2*time.Second {
		t.Errorf("returned after %v, want when the 150ms timer ended", d)
	}
	if n := retrans.Load(); n != 0 {
		t.Errorf("%d retransmissions after the context was cancelled", n)
	}
}

func TestNonMatchingReplyIgnored(t *testing.T) {
	r := newResponder(t, func([]byte) [][]byte {
		return [][]byte{[]byte("stranger"), []byte("forged"), []byte("ours")}
	})
	var seen []string
	accept := func(b []byte) bool {
		seen = append(seen, string(b))
		return string(b) == "ours"
	}
	var retrans atomic.Int32
	o := Options{Timeout: 2 * time.Second, Retries: 3, OnRetransmit: func() { retrans.Add(1) }}
	reply, err := Exchange(context.Background(), dial(t, r.addr), wire, o, accept)
	if err != nil {
		t.Fatal(err)
	}
	if string(reply) != "ours" {
		t.Fatalf("reply %q, want the accepted one", reply)
	}
	if want := []string{"stranger", "forged", "ours"}; len(seen) != 3 || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
		t.Errorf("accept saw %q, want %q", seen, want)
	}
	if n := retrans.Load(); n != 0 {
		t.Errorf("%d retransmissions although the reply came within the first timer", n)
	}
}

// TestBackoffIsCapped: with Timeout 100ms and MaxTimeout 200ms the timers are 100, 200,
// 200, 200 ms (uncapped doubling would be 100, 200, 400, 800).
func TestBackoffIsCapped(t *testing.T) {
	r := newResponder(t, nil)
	o := Options{Timeout: 100 * time.Millisecond, MaxTimeout: 200 * time.Millisecond, Retries: 3}
	start := time.Now()
	_, err := Exchange(context.Background(), dial(t, r.addr), wire, o, never)
	total := time.Since(start)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if total < 680*time.Millisecond || total > 1300*time.Millisecond {
		t.Errorf("4 tries took %v, want about 700ms (capped), not 1.5s", total)
	}
	time.Sleep(20 * time.Millisecond)
	_, at := r.received()
	if len(at) != 4 {
		t.Fatalf("responder got %d datagrams, want 4", len(at))
	}
	if gap := at[3].Sub(at[2]); gap < 180*time.Millisecond || gap > 350*time.Millisecond {
		t.Errorf("last retransmission came %v after the one before, want the 200ms cap", gap)
	}
}

// TestBackoffDoublesWithoutCap: MaxTimeout 0 doubles without limit: 50, 100, 200 ms.
func TestBackoffDoublesWithoutCap(t *testing.T) {
	r := newResponder(t, nil)
	o := Options{Timeout: 50 * time.Millisecond, Retries: 2}
	start := time.Now()
	_, err := Exchange(context.Background(), dial(t, r.addr), wire, o, never)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d < 340*time.Millisecond || d > time.Second {
		t.Errorf("3 tries took %v, want about 350ms", d)
	}
}

// TestUnreachableWaitsTheTimerOut: a closed loopback port answers with ICMP port
// unreachable, which the connected socket reports as a read error; the exchange must wait
// each timer out rather than spin through its retries.
func TestUnreachableWaitsTheTimerOut(t *testing.T) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := c.LocalAddr().String()
	c.Close() // nobody listens there now
	var retrans atomic.Int32
	o := Options{Timeout: 100 * time.Millisecond, Retries: 1, OnRetransmit: func() { retrans.Add(1) }}
	start := time.Now()
	_, err = Exchange(context.Background(), dial(t, addr), wire, o, never)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d < 290*time.Millisecond {
		t.Errorf("gave up after %v, want the 100 + 200ms timers waited out", d)
	}
	if n := retrans.Load(); n != 1 {
		t.Errorf("OnRetransmit called %d times, want 1", n)
	}
}
