package diameter

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/dict"
)

// maxMessage bounds one message; a longer one is taken as lost framing.
const maxMessage = 1 << 20

// maxKeptBuffer bounds the frame buffer a connection keeps between messages: a larger
// message's is dropped after it, so a rare large one does not pin its size per peer.
const maxKeptBuffer = 64 << 10

// Result-Codes for messages that are framed correctly but cannot be decoded (RFC 6733 §7.1):
// the connection survives them.
const (
	resultCommandUnsupported = 3001
	resultInvalidAVPValue    = 5004
)

// peerConn is one peer's TCP connection: one reader that frames messages, handlers that run
// concurrently (bounded), and writes serialized by a lock.
type peerConn struct {
	net.Conn
	sem chan struct{}
	// inline: the reader serves the requests it reads (Options.Inline) and sends their
	// answers itself (answer, send) once it has no whole request left to read.
	inline bool
	// certNames are the DNS names and CN of the peer's certificate (TLS only; nil on TCP).
	certNames []string

	wmu     sync.Mutex
	pending []byte        // messages written, not yet in the socket
	spare   []byte        // the buffer the writer sent last, reused for pending
	writing bool          // the writer has a batch in the socket
	werr    error         // the socket failed: every later Write fails with it
	kick    chan struct{} // wakes the writer (buffered 1)
	stop    chan struct{} // ends the writer (closed by Close)
	once    sync.Once
	flush   time.Duration // Close's wait for pending (Options.FlushTimeout)

	// ctx is the parent of the connection's requests: cancelled when the peer's end closes
	// (their answers have nowhere to go) or the server's requests are.
	ctx    context.Context
	cancel context.CancelFunc
}

func newPeerConn(nc net.Conn, flush time.Duration) *peerConn {
	c := &peerConn{Conn: nc, sem: make(chan struct{}, 64), kick: make(chan struct{}, 1), stop: make(chan struct{}), flush: flush}
	go c.writer()
	return c
}

// Write queues one whole message for the connection's writer, which sends everything queued
// at once: a syscall per burst of answers rather than one per answer (that was a sixth of
// the Gx CPU), and no handler waits on the socket. A message whose send fails is not
// reported to its writer: the connection is broken, and its reader closes it.
func (c *peerConn) Write(b []byte) (int, error) {
	if err := c.queue(b); err != nil {
		return 0, err
	}
	c.wake()
	return len(b), nil
}

// queue adds b to the messages to send, waking no one: an inline reader's answers, which it
// sends itself (send) when it has no whole request left to read.
func (c *peerConn) queue(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	c.pending = append(c.pending, b...)
	return nil
}

// answer queues an answer of the request being served: an inline reader sends it with the
// answers of the requests read with it, a worker's goes to the writer.
func (c *peerConn) answer(b []byte) error {
	if c.inline {
		return c.queue(b)
	}
	_, err := c.Write(b)
	return err
}

// wake wakes the writer unless it is awake already.
func (c *peerConn) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *peerConn) writer() {
	for {
		select {
		case <-c.kick:
		case <-c.stop:
			return
		}
		// Let the handlers that are ready finish first: their answers join this batch. Woken
		// at once, the writer sent one answer per syscall.
		runtime.Gosched()
		c.send()
	}
}

// send writes what is queued, on the caller's goroutine (the writer, an inline reader), unless
// another send is under way. What was queued during a send is the writer's, woken for it: a
// message queued is never left behind, the messages leave in their order, and the writer
// batches as it did (it yields before it takes a batch).
func (c *peerConn) send() {
	c.wmu.Lock()
	if c.writing || len(c.pending) == 0 || c.werr != nil {
		c.wmu.Unlock()
		return
	}
	out := c.pending
	c.pending, c.spare = c.spare[:0], out
	c.writing = true
	c.wmu.Unlock()
	_, err := c.Conn.Write(out)
	c.wmu.Lock()
	c.writing = false
	if err != nil && c.werr == nil {
		c.werr = err
	}
	more := len(c.pending) > 0 && c.werr == nil
	c.wmu.Unlock()
	if more {
		c.wake()
	}
}

// Close closes the connection once the queued messages are sent (a DPA or a refused CEA
// leaves before the close), waiting at most the flush timeout for them: a peer that stopped
// reading must not hold a shutdown.
func (c *peerConn) Close() error {
	deadline := time.Now().Add(c.flush)
	c.wake() // an inline reader's answers may be queued with no one woken to send them
	c.wmu.Lock()
	for (c.writing || len(c.pending) > 0) && c.werr == nil && time.Now().Before(deadline) {
		c.wmu.Unlock()
		time.Sleep(time.Millisecond)
		c.wmu.Lock()
	}
	c.wmu.Unlock()
	c.once.Do(func() { close(c.stop) })
	return c.Conn.Close()
}

// acceptOn takes ln's connections until it closes: ErrServerClosed after Shutdown, else
// the listener's error.
func (s *Server) acceptOn(ln net.Listener, overTLS bool) error {
	defer s.accepting.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return ErrServerClosed
			}
			if !errors.Is(err, net.ErrClosed) {
				s.opt.Log.Error("diameter listener failed", "err", err)
			}
			return err
		}
		s.wg.Add(1)
		go func() {
			conn, names := nc, []string(nil)
			if overTLS {
				if conn, names = s.handshake(nc); conn == nil {
					_ = nc.Close()
					s.wg.Done()
					return
				}
			}
			c := newPeerConn(conn, s.opt.FlushTimeout)
			c.certNames, c.inline = names, s.opt.Inline
			c.ctx, c.cancel = context.WithCancel(s.ctx)
			s.mu.Lock()
			if s.closing { // Close ran during the handshake
				s.mu.Unlock()
				_ = c.Close()
				s.wg.Done()
				return
			}
			s.conns[c] = &peerState{info: PeerInfo{Remote: nc.RemoteAddr()}}
			s.mu.Unlock()
			s.read(c)
		}()
	}
}

// handshake runs the TLS handshake, bounded (a peer cannot hold a connection by stalling
// it), and returns the connection and the names of the peer's certificate for its CER;
// nil when it failed.
func (s *Server) handshake(nc net.Conn) (net.Conn, []string) {
	tc := tls.Server(nc, s.opt.TLS.Config())
	_ = tc.SetDeadline(time.Now().Add(s.opt.HandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		s.opt.Metrics.peersRefused.WithLabelValues(refusedHandshake).Inc()
		s.opt.Log.Warn("diameter: TLS handshake failed", "peer", nc.RemoteAddr().String(), "err", err.Error())
		return nil, nil
	}
	_ = tc.SetDeadline(time.Time{})
	leaf := tc.ConnectionState().PeerCertificates[0] // RequireAndVerifyClientCert
	return tc, append(slices.Clone(leaf.DNSNames), leaf.Subject.CommonName)
}

// read frames messages with our own reader rather than go-diameter's: a message whose AVPs
// do not decode then costs an error answer, not the connection (go-diameter v4.3.0 panics on
// some such AVPs and drops the connection uncounted; FuzzDecode found it).
func (s *Server) read(c *peerConn) {
	var handlers sync.WaitGroup
	defer func() {
		handlers.Wait()
		c.cancel()
		_ = c.Close()
		s.mu.Lock()
		var gone *PeerInfo
		if st := s.conns[c]; st != nil && st.open {
			s.opt.Metrics.peersUp.Dec()
			gone = &st.info
		}
		delete(s.conns, c)
		s.mu.Unlock()
		if gone != nil {
			// The peers_up gauge has no names: this line says which peer left.
			s.opt.Log.Info("diameter: peer down", "originHost", gone.OriginHost, "originRealm", gone.OriginRealm, "peer", c.RemoteAddr().String())
		}
		s.wg.Done()
	}()
	// Buffered: a burst of requests costs one read syscall, not two per message.
	r := bufio.NewReaderSize(c.Conn, 64<<10)
	// The connection's frame buffer, reused for every message: a lean request's head copies
	// its frame (decodeHead), any other message is decoded from a clone, so nothing read here
	// outlives the next read (TestReadBufferNotRetained).
	buf := make([]byte, 0, 4096)
	// Inline, the lean head of the request served before, reused for the next one: its frame
	// is the buffer's (served before the next read) and nothing of it outlives its request.
	var own *leanHead
	var out []byte // inline, the buffer its requests' answers are written into (Request.Wire)
	for {
		if c.inline && !wholeFrame(r) {
			c.send() // the answers so far leave before a read that may wait
		}
		frame, err := readFrameInto(r, buf)
		if cap(frame) <= maxKeptBuffer {
			buf = frame
		}
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing && errors.Is(err, os.ErrDeadlineExceeded) {
				// Shutdown stopped the reading (a read deadline): the requests in flight
				// are answered on the connection, which is still open.
				return
			}
			c.cancel() // the peer went away: its requests have no one to answer
			// A peer that closes or resets its end is gone, not malformed.
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.ECONNRESET) {
				s.opt.Metrics.malformed.Inc()
				s.opt.Log.Warn("diameter: framing lost, closing the connection", "peer", c.RemoteAddr().String(), "err", err.Error())
			}
			return
		}
		// A request its handler reads from its bytes needs only its head decoded (lean.go).
		var m *diam.Message
		var lean *leanHead
		if c.inline {
			lean = s.decodeLean(frame, own)
		} else {
			lean = s.decodeLean(frame, nil)
		}
		if lean != nil {
			m = &lean.m
		} else {
			var (
				code   uint32
				failed *diam.AVP
			)
			frame = bytes.Clone(frame) // the decoded message may keep its bytes (decodeChecked)
			if m, code, failed = decode(frame); code != 0 {
				s.opt.Metrics.malformed.Inc()
				s.answerUndecodable(c, frame, code, failed)
				continue
			}
		}
		if m.Header.CommandFlags&diam.RequestFlag == 0 {
			s.out.deliver(m) // the answer to a request this node sent (request.go)
			continue
		}
		if c.inline {
			s.serve(c, m, lean, &out)
			if lean != nil {
				own = lean.reusable()
			}
			continue
		}
		c.sem <- struct{}{}
		handlers.Add(1)
		s.handlers.Submit(appRequest{c: c, m: m, lean: lean, done: &handlers}, nil)
	}
}

// wholeFrame reports whether r holds the next message whole: reading it will not wait on the
// socket.
func wholeFrame(r *bufio.Reader) bool {
	if r.Buffered() < diam.HeaderLength {
		return false
	}
	h, _ := r.Peek(4)
	return r.Buffered() >= int(binary.BigEndian.Uint32(h)&0xffffff)
}

// readFrame reads one message: the header's version and length must be sane, else framing
// is lost and the connection must close (RFC 6733 §3).
func readFrame(r io.Reader) ([]byte, error) {
	return readFrameInto(r, nil)
}

// readFrameInto is readFrame reading into buf's array when it is large enough (the frame
// then aliases buf), else into a new one.
func readFrameInto(r io.Reader, buf []byte) ([]byte, error) {
	if cap(buf) < diam.HeaderLength {
		buf = make([]byte, diam.HeaderLength) // a header on the stack would escape (io.Reader)
	}
	h := buf[:diam.HeaderLength]
	if _, err := io.ReadFull(r, h); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(h[0:4]) & 0xffffff)
	if h[0] != 1 || n < diam.HeaderLength || n > maxMessage || n%4 != 0 {
		return nil, fmt.Errorf("bad header: version %d, length %d", h[0], n)
	}
	b := buf[:cap(buf)]
	if len(b) < n {
		b = make([]byte, n)
		copy(b, h)
	}
	b = b[:n]
	if _, err := io.ReadFull(r, b[diam.HeaderLength:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

// decode parses one framed message; a non-zero code is the Result-Code to answer with when it
// cannot be used, with the AVP at fault when one can be named (Failed-AVP). The AVPs'
// lengths and mandatory bits are checked on the bytes first (checkAVPs), then a request is
// decoded by decodeChecked (codec.go), which leaves to go-diameter what it is not sure of.
func decode(frame []byte) (m *diam.Message, code uint32, failed *diam.AVP) {
	defer func() {
		if recover() != nil {
			m, code, failed = nil, resultInvalidAVPValue, nil
		}
	}()
	h, err := diam.DecodeHeader(frame[:diam.HeaderLength])
	if err != nil {
		return nil, resultInvalidAVPValue, nil
	}
	if _, err := dict.Default.FindCommand(h.ApplicationID, h.CommandCode); err != nil {
		return nil, resultCommandUnsupported, nil
	}
	if h.CommandFlags&diam.RequestFlag != 0 {
		if f, _ := checkAVPs(frame[diam.HeaderLength:], h.ApplicationID, dict.Default); f != nil {
			return nil, f.code, f.failed
		}
		if m = decodeChecked(h, frame, dict.Default); m != nil {
			return m, 0, nil
		}
	}
	m, err = diam.ReadMessage(bytes.NewReader(frame), dict.Default)
	if err != nil || m.DecodeErr != nil {
		return nil, resultInvalidAVPValue, undecodableAVP(frame[diam.HeaderLength:], h.ApplicationID, dict.Default)
	}
	return m, 0, nil
}

// answerUndecodable answers a request whose body could not be used, from its header, its
// Session-Id and Proxy-Info when they are sound (RFC 6733 §6.2), and the AVP at fault.
func (s *Server) answerUndecodable(c *peerConn, frame []byte, code uint32, failed *diam.AVP) {
	ans := s.id.undecodableAnswer(frame, code, failed)
	if ans == nil {
		return
	}
	if _, err := ans.WriteTo(c); err != nil {
		s.opt.Log.Debug("diameter: error answer not written", "err", err)
	}
	s.opt.Metrics.requests.WithLabelValues("undecodable", fmt.Sprint(code)).Inc()
	s.opt.Log.Warn("diameter: request not decodable, answered", "peer", c.RemoteAddr().String(), "resultCode", code)
}

// undecodableAnswer is the answer to a request whose body could not be used (nil for an
// answer that cannot be used either: it is dropped), pure.
func (id Identity) undecodableAnswer(frame []byte, code uint32, failed *diam.AVP) *diam.Message {
	h, err := diam.DecodeHeader(frame[:diam.HeaderLength])
	if err != nil || h.CommandFlags&diam.RequestFlag == 0 {
		return nil
	}
	req := diam.NewMessage(h.CommandCode, h.CommandFlags, h.ApplicationID, h.HopByHopID, h.EndToEndID, dict.Default)
	for _, a := range topLevel(frame[diam.HeaderLength:], h.ApplicationID, dict.Default) {
		req.AddAVP(a)
	}
	ans := id.Answer(req, code)
	if failed != nil {
		ans.NewAVP(avp.FailedAVP, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{failed}})
	}
	return ans
}

// appRequest is a request handed to the server's workers (internal/workpool, on demand:
// how many run at once is bounded by the connections' semaphores); done counts the
// connection's requests in flight.
type appRequest struct {
	c    *peerConn
	m    *diam.Message
	lean *leanHead
	done *sync.WaitGroup
}

const workerIdle = 10 * time.Second

// serveQueued serves one request on a worker, whose buffer out its answer is written into.
func (s *Server) serveQueued(out *[]byte, r appRequest) {
	defer func() { <-r.c.sem; r.done.Done() }()
	s.serve(r.c, r.m, r.lean, out)
}
