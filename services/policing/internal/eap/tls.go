package eap

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"
)

// engine is crypto/tls driven round by round over an in-memory connection: the handshake
// runs in its own goroutine (crypto/tls cannot pause a handshake otherwise) that blocks
// between rounds reading the peer's next flight; a round hands it the flight and waits, at
// most RoundTimeout, until it wants more or is done. After the handshake the tunnel's records
// are read and written by the caller directly (the connection never blocks then).
type engine struct {
	conn    *tls.Conn
	mc      *memConn
	started bool
	done    chan struct{} // closed when the handshake returned
	err     error         // its error, read after done
}

func newEngine(cfg *tls.Config) *engine {
	mc := &memConn{feed: make(chan []byte), idle: make(chan struct{}), closed: make(chan struct{})}
	return &engine{conn: tls.Server(mc, cfg), mc: mc, done: make(chan struct{})}
}

var (
	errRoundTimeout = errors.New("TLS round timed out")
	errClosed       = errors.New("TLS engine closed")
)

// handshake hands the peer's flight to the handshake and returns what the server sends
// back, and whether the handshake is complete.
func (e *engine) handshake(in []byte, timeout time.Duration) ([]byte, bool, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	if !e.started {
		// The first round starts the handshake and waits for it to ask for the ClientHello;
		// after any other round it is already waiting for the next flight.
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
			return nil, false, errRoundTimeout
		}
	}
	select {
	case e.mc.feed <- in:
	case <-t.C:
		return nil, false, errRoundTimeout
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
		return nil, false, errRoundTimeout
	}
}

func (e *engine) endErr() error {
	if e.err != nil {
		return e.err
	}
	return errClosed
}

// read decrypts the peer's records (after the handshake).
func (e *engine) read(in []byte) ([]byte, error) {
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

// write encrypts p into records for the peer (after the handshake).
func (e *engine) write(p []byte) ([]byte, error) {
	if _, err := e.conn.Write(p); err != nil {
		return nil, err
	}
	return e.mc.take(), nil
}

// export is the TLS exporter (RFC 5705; RFC 8446 §7.5) the EAP keys come from.
func (e *engine) export(label string, context []byte, n int) ([]byte, error) {
	st := e.conn.ConnectionState()
	return st.ExportKeyingMaterial(label, context, n)
}

func (e *engine) state() tls.ConnectionState { return e.conn.ConnectionState() }

// close ends the handshake goroutine, if any.
func (e *engine) close() { e.mc.close() }

// memConn is the engine's net.Conn: what the server writes is collected for the next
// Request, and reads come from the rounds.
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
