package radiusd

// RADIUS over TLS (RFC 6614) on TCP: one port takes Access-Request, Accounting-Request and
// Status-Server. TLS 1.2 or later, the client's certificate must chain to the CA file; the
// RADIUS shared secret is "radsec" (configurable). Packets go through the same checks as
// on UDP (verify: authenticators, Message-Authenticator rules per client) and the same
// handlers; replies carry Message-Authenticator. There is no duplicate cache on TCP: the
// transport is reliable and RFC 6613 §2.6 forbids retransmission on one connection.
//
// Certificate, key and CA are files (a mounted cert-manager Secret), reloaded as
// internal/tlsfiles describes: the caller's file watcher (policing serve: the hot-reload
// watcher, every reload.interval and on SIGHUP) calls Reload.

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"layeh.com/radius"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
	"github.com/openaaa/openaaa/services/policing/internal/tlsfiles"
)

// RadSecOptions configure a RadSec listener.
type RadSecOptions struct {
	CertFile, KeyFile, CAFile string
	Secret                    []byte
	IdleTimeout               time.Duration
	// HandshakeTimeout bounds a connection's TLS handshake (radius.radsec.handshakeTimeout).
	HandshakeTimeout time.Duration
	MaxConnections   int
	// PerConnection bounds the requests processed at once on one connection (default 64).
	PerConnection int
}

// RadSec is a running RadSec listener.
type RadSec struct {
	s      *Server
	opt    RadSecOptions
	ln     net.Listener
	auth   Handler
	acct   Handler
	files  *tlsfiles.Files
	conns  sync.Map // net.Conn -> struct{}
	slots  chan struct{}
	wg     sync.WaitGroup // connections
	reqs   sync.WaitGroup // requests in flight
	closed atomic.Bool
}

// ListenRadSec opens a TLS listener on addr. auth and acct handle the two request kinds.
func (s *Server) ListenRadSec(addr string, opt RadSecOptions, auth, acct Handler) (*RadSec, error) {
	d := config.Default().Radius.RadSec // the configuration's defaults, not copies of them
	if len(opt.Secret) == 0 {
		opt.Secret = []byte(d.Secret)
	}
	if opt.IdleTimeout <= 0 {
		opt.IdleTimeout = d.IdleTimeout.D()
	}
	if opt.HandshakeTimeout <= 0 {
		opt.HandshakeTimeout = d.HandshakeTimeout.D()
	}
	if opt.MaxConnections <= 0 {
		opt.MaxConnections = d.MaxConnections
	}
	if opt.PerConnection <= 0 {
		opt.PerConnection = 64
	}
	r := &RadSec{s: s, opt: opt, auth: auth, acct: acct, slots: make(chan struct{}, opt.MaxConnections),
		files: &tlsfiles.Files{CertFile: opt.CertFile, KeyFile: opt.KeyFile, CAFile: opt.CAFile, Name: "radsec", Log: s.opt.Log}}
	if _, err := r.Reload(); err != nil {
		return nil, fmt.Errorf("radsec: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("radsec listener: %w", err)
	}
	r.ln = ln
	r.wg.Add(1)
	go r.accept()
	s.opt.Log.Info("radsec listener started", "address", ln.Addr().String(), "cert", opt.CertFile, "ca", opt.CAFile)
	return r, nil
}

// Addr is the listening address.
func (r *RadSec) Addr() net.Addr { return r.ln.Addr() }

// Reload reads the certificate, key and CA files and puts a changed set in force for new
// connections (tlsfiles.Files.Reload). The caller logs and counts errors (the hot-reload
// watcher).
func (r *RadSec) Reload() (bool, error) { return r.files.Reload() }

func (r *RadSec) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if r.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			r.s.opt.Log.Warn("radsec accept failed", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		select {
		case r.slots <- struct{}{}:
		default:
			r.s.drop(metrics.DropOverload, addrPortOf(c.RemoteAddr()), errors.New("radsec: too many connections"))
			_ = c.Close()
			continue
		}
		r.wg.Add(1)
		go func() {
			defer func() { <-r.slots; r.wg.Done() }()
			r.serveConn(c)
		}()
	}
}

func addrPortOf(a net.Addr) netip.AddrPort {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

func (r *RadSec) serveConn(raw net.Conn) {
	r.conns.Store(raw, struct{}{})
	defer r.conns.Delete(raw)
	defer raw.Close()
	from := addrPortOf(raw.RemoteAddr())
	c := tls.Server(raw, r.files.Config())
	_ = c.SetDeadline(time.Now().Add(r.opt.HandshakeTimeout))
	if err := c.Handshake(); err != nil {
		r.s.drop("tls_handshake", from, err)
		return
	}
	cn := ""
	if st := c.ConnectionState(); len(st.PeerCertificates) > 0 {
		cn = st.PeerCertificates[0].Subject.CommonName
	}
	_ = c.SetDeadline(time.Time{})
	w := &streamConn{c: c}
	sem := make(chan struct{}, r.opt.PerConnection)
	var inflight sync.WaitGroup
	defer inflight.Wait()
	hdr := make([]byte, 4)
	for {
		if r.closed.Load() {
			return
		}
		_ = c.SetReadDeadline(time.Now().Add(r.opt.IdleTimeout))
		if _, err := io.ReadFull(c, hdr); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint16(hdr[2:4]))
		if n < radiusx.HeaderLen || n > radius.MaxPacketLength {
			// The stream has lost its framing: nothing after this can be trusted.
			r.s.drop(metrics.DropMalformed, from, fmt.Errorf("radsec: packet length %d", n))
			return
		}
		pkt := make([]byte, n)
		copy(pkt, hdr)
		if _, err := io.ReadFull(c, pkt[4:]); err != nil {
			return
		}
		at := time.Now()
		sem <- struct{}{}
		inflight.Add(1)
		r.reqs.Add(1)
		go func() {
			defer func() { <-sem; inflight.Done(); r.reqs.Done() }()
			r.s.opt.Metrics.WorkersBusy.Inc()
			r.serve(w, pkt, from, cn, at)
			r.s.opt.Metrics.WorkersBusy.Dec()
		}()
	}
}

// client is the NAS entry for a RadSec request: the configured client of the source
// address (its name, NAS-Identifier and Message-Authenticator rule) with the RadSec secret;
// a peer with a valid certificate but no entry is known by its certificate's name.
func (r *RadSec) client(from netip.AddrPort, pkt []byte, cn string) *nas.Client {
	c := &nas.Client{Name: "radsec:" + cn, RequireMA: true}
	if base := r.s.clients.Load().Match(from.Addr(), pkt); base != nil {
		cp := *base
		c = &cp
	}
	c.Secret = r.opt.Secret
	return c
}

// serve picks the handler by code (one port takes both kinds) and hands the request to the
// same pipeline as UDP, without duplicate detection (RFC 6613 §2.6: no retransmission on a
// connection).
func (r *RadSec) serve(sc *streamConn, pkt []byte, from netip.AddrPort, cn string, at time.Time) {
	code := radius.Code(pkt[0])
	var h Handler
	kind := Auth
	switch code {
	case radius.CodeAccessRequest, radius.CodeStatusServer:
		h = r.auth
	case radius.CodeAccountingRequest:
		h, kind = r.acct, Acct
	}
	if h == nil {
		r.s.drop(metrics.DropUnsupported, from, fmt.Errorf("radsec: code %d", code))
		return
	}
	r.s.handle(&inbound{pkt: pkt, from: from, kind: kind, handler: h, client: r.client(from, pkt, cn), at: at, out: sc}, new(arena))
}

// streamConn is one RadSec connection's reply side: replies of concurrent requests are
// written whole, one at a time.
type streamConn struct {
	mu sync.Mutex
	c  *tls.Conn
}

func (sc *streamConn) send(b []byte) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	_ = sc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := sc.c.Write(b)
	return err
}

// Close stops accepting, lets the requests in flight finish (bounded by ctx), then closes
// every connection.
func (r *RadSec) Close(ctx context.Context) error {
	if !r.closed.CompareAndSwap(false, true) {
		return nil
	}
	_ = r.ln.Close()
	// Unblock readers waiting for the next packet; replies in flight can still be written.
	r.conns.Range(func(k, _ any) bool {
		_ = k.(net.Conn).SetReadDeadline(time.Now())
		return true
	})
	done := make(chan struct{})
	go func() { r.reqs.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("radsec drain: %w", ctx.Err())
	}
	r.conns.Range(func(k, _ any) bool {
		_ = k.(net.Conn).Close()
		return true
	})
	r.wg.Wait()
	return err
}
