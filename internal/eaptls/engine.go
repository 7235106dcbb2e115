// Package eaptls drives crypto/tls over EAP rounds, for either side: policing's EAP server
// (EAP-TLS, PEAP, TTLS) and aaa-loadgen's EAP peer.
package eaptls

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"
)

// Engine is crypto/tls driven round by round over an in-memory connection: the handshake
// runs in its own goroutine (crypto/tls cannot pause a handshake otherwise) that blocks
// between rounds reading the other side's next flight; a round hands it the flight and
// waits, at most a timeout, until it wants more or is done. After the handshake the tunnel's
// records are read and written by the caller directly (the connection never blocks then).
type Engine struct {
	conn    *tls.Conn
	mc      *memConn
	client  bool
	started bool
	done    chan struct{} // closed when the handshake returned
	err     error         // its error, read after done
}

// NewServer is the server side of a handshake.
func NewServer(cfg *tls.Config) *Engine {
	mc := newMemConn()
	return &Engine{conn: tls.Server(mc, cfg), mc: mc, done: make(chan struct{})}
}

// NewClient is the client side: its first Handshake (with no input) returns the ClientHello.
func NewClient(cfg *tls.Config) *Engine {
	mc := newMemConn()
	return &Engine{conn: tls.Client(mc, cfg), mc: mc, client: true, done: make(chan struct{})}
}

var (
	// ErrRoundTimeout: the handshake did not answer a flight within the round's timeout.
	ErrRoundTimeout = errors.New("TLS round timed out")
	errClosed       = errors.New("TLS engine closed")
)

// Handshake hands the other side's flight to the handshake and returns what to send back,
// and whether the handshake is complete.
func (e *Engine) Handshake(in []byte, timeout time.Duration) ([]byte, bool, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	if !e.started {
		// The first round starts the handshake and waits for it to read (a server: the
		// ClientHello; a client: the answer to the ClientHello it wrote); after any other
		// round it is already waiting for the next flight.
		e.started = true
		go func() {
			e.err = e.conn.Handshake()
			close(e.done)
		}()
		select {
		case <-e.mc.idle:
		case <-e.done:
			return nil, false, e.endErr()
		case <-t.C:
			return nil, false, ErrRoundTimeout
		}
		if e.client {
			return e.mc.take(), false, nil
		}
	}
	select {
	case e.mc.feed <- in:
	case <-e.done:
		return nil, false, e.endErr()
	case <-t.C:
		return nil, false, ErrRoundTimeout
	}
	select {
	case <-e.mc.idle: // it wants the next flight
		return e.mc.take(), false, nil
	case <-e.done:
		if e.err != nil {
			return nil, false, e.err
		}
		e.mc.direct = true
		return e.mc.take(), true, nil
	case <-t.C:
		return nil, false, ErrRoundTimeout
	}
}

func (e *Engine) endErr() error {
	if e.err != nil {
		return e.err
	}
	return errClosed
}

// Done is closed when the handshake goroutine has returned.
func (e *Engine) Done() <-chan struct{} { return e.done }

// Read decrypts the other side's records (after the handshake).
func (e *Engine) Read(in []byte) ([]byte, error) {
	e.mc.pending = append(e.mc.pending, in...)
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := e.conn.Read(buf)
		out = append(out, buf[:n]...)
		if errors.Is(err, errWouldBlock) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Write encrypts p into records for the other side (after the handshake).
func (e *Engine) Write(p []byte) ([]byte, error) {
	if _, err := e.conn.Write(p); err != nil {
		return nil, err
	}
	return e.mc.take(), nil
}

// Export is the TLS exporter (RFC 5705; RFC 8446 §7.5) the EAP keys come from.
func (e *Engine) Export(label string, context []byte, n int) ([]byte, error) {
	st := e.conn.ConnectionState()
	return st.ExportKeyingMaterial(label, context, n)
}

// State is the connection's TLS state.
func (e *Engine) State() tls.ConnectionState { return e.conn.ConnectionState() }

// Close ends the handshake goroutine, if any.
func (e *Engine) Close() { e.mc.close() }

// memConn is the engine's net.Conn: what the TLS side writes is collected for the next
// message, and reads come from the rounds.
type memConn struct {
	feed   chan []byte   // a round's flight, to a blocked Read
	idle   chan struct{} // Read is about to block
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	out     bytes.Buffer
	pending []byte
	direct  bool // the handshake is over: Read never blocks
}

func newMemConn() *memConn {
	return &memConn{feed: make(chan []byte), idle: make(chan struct{}), closed: make(chan struct{})}
}

// errWouldBlock is a temporary net.Error: crypto/tls keeps the connection usable after it.
var errWouldBlock = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "no more input this round" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

func (m *memConn) Read(p []byte) (int, error) {
	if len(m.pending) == 0 {
		if m.direct {
			return 0, errWouldBlock
		}
		select {
		case m.idle <- struct{}{}:
		case <-m.closed:
			return 0, net.ErrClosed
		}
		select {
		case b := <-m.feed:
			m.pending = b
		case <-m.closed:
			return 0, net.ErrClosed
		}
	}
	n := copy(p, m.pending)
	m.pending = m.pending[n:]
	return n, nil
}

func (m *memConn) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.out.Write(p)
}

func (m *memConn) take() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := bytes.Clone(m.out.Bytes())
	m.out.Reset()
	return b
}

func (m *memConn) close()                           { m.once.Do(func() { close(m.closed) }) }
func (m *memConn) Close() error                     { m.close(); return nil }
func (m *memConn) LocalAddr() net.Addr              { return memAddr{} }
func (m *memConn) RemoteAddr() net.Addr             { return memAddr{} }
func (m *memConn) SetDeadline(time.Time) error      { return nil }
func (m *memConn) SetReadDeadline(time.Time) error  { return nil }
func (m *memConn) SetWriteDeadline(time.Time) error { return nil }

type memAddr struct{}

func (memAddr) Network() string { return "eap" }
func (memAddr) String() string  { return "eap" }
