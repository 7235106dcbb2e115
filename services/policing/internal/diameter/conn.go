package diameter

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/dict"
)

// maxMessage bounds one message; a longer one is taken as lost framing.
const maxMessage = 1 << 20

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
	wmu sync.Mutex
	sem chan struct{}
	// certNames are the DNS names and CN of the peer's certificate (TLS only; nil on TCP).
	certNames []string
}

func (c *peerConn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.Conn.Write(b)
}

// accept takes the connections of both listeners; s.done closes when both have stopped.
func (s *Server) accept() {
	defer close(s.done)
	var wg sync.WaitGroup
	for _, ln := range []net.Listener{s.ln, s.tlsLn} {
		if ln == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.acceptOn(ln, ln == s.tlsLn)
		}()
	}
	wg.Wait()
}

func (s *Server) acceptOn(ln net.Listener, overTLS bool) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.opt.Log.Error("diameter listener failed", "err", err)
			}
			return
		}
		s.wg.Add(1)
		go func() {
			c := &peerConn{Conn: nc, sem: make(chan struct{}, 64)}
			if overTLS {
				if c.Conn, c.certNames = s.handshake(nc); c.Conn == nil {
					_ = nc.Close()
					s.wg.Done()
					return
				}
			}
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
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err != nil {
		peersRefused.WithLabelValues(refusedHandshake).Inc()
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
		_ = c.Close()
		s.mu.Lock()
		var gone *PeerInfo
		if st := s.conns[c]; st != nil && st.open {
			peersUp.Dec()
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
	for {
		frame, err := readFrame(c.Conn)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				malformed.Inc()
				s.opt.Log.Warn("diameter: framing lost, closing the connection", "peer", c.RemoteAddr().String(), "err", err.Error())
			}
			return
		}
		m, code := decode(frame)
		if code != 0 {
			malformed.Inc()
			s.answerUndecodable(c, frame, code)
			continue
		}
		if m.Header.CommandFlags&diam.RequestFlag == 0 {
			s.out.deliver(m) // the answer to a request this node sent (request.go)
			continue
		}
		c.sem <- struct{}{}
		handlers.Add(1)
		go func() {
			defer func() { <-c.sem; handlers.Done() }()
			s.serve(c, m)
		}()
	}
}

// readFrame reads one message: the header's version and length must be sane, else framing
// is lost and the connection must close (RFC 6733 §3).
func readFrame(r io.Reader) ([]byte, error) {
	var h [diam.HeaderLength]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(h[0:4]) & 0xffffff)
	if h[0] != 1 || n < diam.HeaderLength || n > maxMessage || n%4 != 0 {
		return nil, fmt.Errorf("bad header: version %d, length %d", h[0], n)
	}
	b := make([]byte, n)
	copy(b, h[:])
	if _, err := io.ReadFull(r, b[diam.HeaderLength:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

// decode parses one framed message; a non-zero code is the Result-Code to answer with when it
// cannot be used.
func decode(frame []byte) (m *diam.Message, code uint32) {
	defer func() {
		if recover() != nil {
			m, code = nil, resultInvalidAVPValue
		}
	}()
	h, err := diam.DecodeHeader(frame[:diam.HeaderLength])
	if err != nil {
		return nil, resultInvalidAVPValue
	}
	if _, err := dict.Default.FindCommand(h.ApplicationID, h.CommandCode); err != nil {
		return nil, resultCommandUnsupported
	}
	m, err = diam.ReadMessage(bytes.NewReader(frame), dict.Default)
	if err != nil || m.DecodeErr != nil {
		return nil, resultInvalidAVPValue
	}
	return m, 0
}

// answerUndecodable answers a request whose body could not be decoded, from its header alone.
func (s *Server) answerUndecodable(c *peerConn, frame []byte, code uint32) {
	h, err := diam.DecodeHeader(frame[:diam.HeaderLength])
	if err != nil || h.CommandFlags&diam.RequestFlag == 0 {
		return
	}
	req := diam.NewMessage(h.CommandCode, h.CommandFlags, h.ApplicationID, h.HopByHopID, h.EndToEndID, dict.Default)
	if _, err := s.id.Answer(req, code).WriteTo(c); err != nil {
		s.opt.Log.Debug("diameter: error answer not written", "err", err)
	}
	requests.WithLabelValues("undecodable", fmt.Sprint(code)).Inc()
	s.opt.Log.Warn("diameter: request not decodable, answered", "peer", c.RemoteAddr().String(), "resultCode", code)
}
