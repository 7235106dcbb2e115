// Package diameter is the Diameter base protocol (RFC 6733) of a policing node: the TCP
// listener, the capabilities exchange (CER/CEA) against the allowed peer table, the watchdog
// (DWR/DWA) and disconnect (DPR/DPA). Application requests (Gx, internal/gx) reach the
// application's handler only on a connection whose CER was accepted.
package diameter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/tlsfiles"
	"github.com/openaaa/openaaa/services/policing/internal/workpool"
)

// Identifiers of the Gx application (3GPP TS 29.212).
const (
	GxApplicationID = 16777238
	Vendor3GPP      = 10415
)

// Result-Codes of RFC 6733 §7.1 that go-diameter does not name.
const (
	ResultUnknownPeer = 3010
	ResultTooBusy     = diam.TooBusy
)

const (
	cmdCER = 257
	cmdDWR = 280
	cmdDPR = 282
)

// Handler answers the application requests of an accepted peer, as radiusd's handlers
// answer RADIUS ones (net/http's shape). It returns the answer without
// Origin-Host/Origin-Realm (the server adds them) and its Result-Code (for metrics).
type Handler interface {
	ServeDiameter(r *Request) (ans *diam.Message, resultCode uint32)
}

// Request is one application request of an accepted peer. It is valid until ServeDiameter
// returns.
type Request struct {
	Peer    PeerInfo
	Message *diam.Message
	ctx     context.Context
	rc      requestContext // the server's requests' ctx (reqctx.go)
	// out holds the answer Wire copies out: the buffer of the reader or worker serving the
	// request, reused from request to request; nil: each answer gets a slice of its own.
	out []byte
}

// Wire is the message w wrote, as an Answer's Wire: valid until the server has sent it (it
// may be the buffer of the reader or worker serving the request, reused for its next one).
func (r *Request) Wire(w *Writer) []byte {
	r.out = w.AppendTo(r.out[:0])
	return r.out
}

// NewRequest is a request as the server builds it, for tests and other front ends.
func NewRequest(ctx context.Context, peer PeerInfo, m *diam.Message) *Request {
	return &Request{Peer: peer, Message: m, ctx: ctx}
}

// Context ends at the request's deadline (diameter.requestTimeout), when the peer's
// connection ends (nothing can take the answer), or when a shutdown's budget is spent. A
// Request built without one has context.Background, as net/http's.
func (r *Request) Context() context.Context {
	if r.ctx == nil {
		return context.Background()
	}
	return r.ctx
}

// PeerInfo is what the server knows of the peer a request came from.
type PeerInfo struct {
	OriginHost  string
	OriginRealm string
	Remote      net.Addr
}

// Options configure a Server.
type Options struct {
	OriginHost  string
	OriginRealm string
	// ServedHosts are the other Diameter identities this node answers for (the other data
	// centers of the cluster: any node serves any session): a request whose Destination-Host
	// names one is processed here; any other host is 3002 (check.go, destination).
	ServedHosts []string
	// VendorID is the CEA's Vendor-Id (RFC 6733 §5.3.3): the IANA enterprise number of the
	// Diameter software's vendor (diameter.vendorId). The CEA's ABNF requires the AVP
	// (§5.3.2; freeDiameter refuses a CEA without it); 0, the default, is the value §5.3.3
	// reserves in a CER or CEA for "ignore this field": OpenAAA has no enterprise number.
	VendorID    uint32
	ProductName string
	Peers       []Peer
	// Apps maps Auth-Application-Id to its handler; requests of any other application are
	// answered 3007 DIAMETER_APPLICATION_UNSUPPORTED.
	Apps map[uint32]Handler
	// Inline: each connection's reader serves the requests it reads, rather than handing
	// them to the worker pool, and sends their answers itself (diameter.dispatch). Only for
	// handlers that never wait (embedded store, file subscribers, no Lua policy): a request
	// served holds up the next ones of its connection, not another peer's.
	Inline bool
	// MaxInFlight bounds the application requests processed at once over all connections;
	// past it requests are answered 3004 DIAMETER_TOO_BUSY rather than left unanswered.
	MaxInFlight int
	// RequestTimeout is an application request's deadline from when it was read
	// (diameter.requestTimeout): its context ends then. 0 takes the configuration's default.
	RequestTimeout time.Duration
	// FlushTimeout is how long a closing connection waits for its queued messages to leave
	// (diameter.flushTimeout). 0 takes the configuration's default.
	FlushTimeout time.Duration
	// DPRTimeout is how long a shutdown waits for a peer's DPA to its DPR
	// (diameter.dprTimeout). 0 takes the configuration's default.
	DPRTimeout time.Duration
	// HandshakeTimeout bounds a TLS connection's handshake (diameter.tls.handshakeTimeout).
	// 0 takes the configuration's default.
	HandshakeTimeout time.Duration
	Log              *slog.Logger
	// TLS, when set, also serves Diameter over TLS on TLSAddress (RFC 6733 §2.1: the TLS
	// handshake right after the connection opens, the port apart from the TCP one): the
	// peer's certificate must chain to the CA file and name the Origin-Host of its CER.
	TLS        *tlsfiles.Files
	TLSAddress string
	Metrics    *Metrics // the node's; nil: unregistered ones
}

// Server is a running Diameter listener.
type Server struct {
	opt   Options
	id    Identity
	ln    net.Listener // the first TCP listener (Addr)
	tlsLn net.Listener // nil without TLS
	lns   []net.Listener
	// accepting are the accept loops (Serve): Shutdown closes their listeners and waits.
	accepting sync.WaitGroup
	hostIP    net.IP
	inFlight  atomic.Int64
	mu        sync.Mutex
	closing   bool
	conns     map[*peerConn]*peerState
	dups      *dupCache
	answers   arena                              // the bytes of the answers dups keeps
	handlers  *workpool.Pool[appRequest, []byte] // run the requests (conn.go), each worker with its answers' buffer
	out       pending                            // requests this node sent (request.go)
	wg        sync.WaitGroup
	// ctx is every request's parent: cancelled when a shutdown's budget is spent.
	ctx    context.Context
	cancel context.CancelFunc
}

type peerState struct {
	info PeerInfo
	open bool // CER accepted
	// leaving: a shutdown sent the peer a DPR; no request of ours may follow it (RFC 6733
	// §5.4), so connOf no longer picks the connection.
	leaving bool
}

// Listen opens the TCP listener and serves until Close.
func Listen(addr string, opt Options) (*Server, error) {
	s, err := New(opt)
	if err != nil {
		return nil, err
	}
	if err := s.Listen(addr); err != nil {
		return nil, err
	}
	return s, nil
}

// New builds a server that serves once Listen opens it. Handlers that send requests through
// the server (a Gx handler's RARs) are built with it in between, and added with Handle.
func New(opt Options) (*Server, error) {
	if opt.OriginHost == "" || opt.OriginRealm == "" {
		return nil, errors.New("origin host and realm are required")
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	if opt.Metrics == nil {
		opt.Metrics = NewMetrics(metrics.Factory{}, metrics.New(metrics.Factory{}))
	}
	if opt.ProductName == "" {
		opt.ProductName = "OpenAAA"
	}
	def := config.Default().Diameter // what an option left 0 takes
	if opt.MaxInFlight <= 0 {
		opt.MaxInFlight = def.MaxInFlight
	}
	if opt.RequestTimeout <= 0 {
		opt.RequestTimeout = def.RequestTimeout.D()
	}
	if opt.FlushTimeout <= 0 {
		opt.FlushTimeout = def.FlushTimeout.D()
	}
	if opt.HandshakeTimeout <= 0 {
		opt.HandshakeTimeout = def.TLS.HandshakeTimeout.D()
	}
	if opt.DPRTimeout <= 0 {
		opt.DPRTimeout = def.DPRTimeout.D()
	}
	if opt.TLS != nil && opt.TLS.Config() == nil {
		if _, err := opt.TLS.Reload(); err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
	}
	opt.Apps = maps.Clone(opt.Apps)
	if opt.Apps == nil {
		opt.Apps = map[uint32]Handler{}
	}
	s := &Server{opt: opt, id: Identity{Host: opt.OriginHost, Realm: opt.OriginRealm}, conns: map[*peerConn]*peerState{},
		dups: newDupCache(8192, 30*time.Second)}
	s.handlers = workpool.New(workpool.Options{Idle: workerIdle}, s.serveQueued)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Handle serves the application id with h; called before Listen.
func (s *Server) Handle(id uint32, h Handler) { s.opt.Apps[id] = h }

// ErrServerClosed is what Serve returns once Shutdown stopped it.
var ErrServerClosed = errors.New("diameter: server closed")

// Listen opens the TCP listener (and the TLS one) and serves them in the background until
// Shutdown.
func (s *Server) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	var tlsLn net.Listener
	if s.opt.TLS != nil {
		if tlsLn, err = net.Listen("tcp", s.opt.TLSAddress); err != nil {
			_ = ln.Close()
			return fmt.Errorf("tls address: %w", err)
		}
	}
	if !s.track(ln, false) {
		if tlsLn != nil {
			_ = tlsLn.Close()
		}
		return ErrServerClosed
	}
	go func() { _ = s.acceptOn(ln, false) }()
	if tlsLn != nil && s.track(tlsLn, true) {
		go func() { _ = s.acceptOn(tlsLn, true) }()
	}
	return nil
}

// Serve accepts Diameter peers on ln (TCP; TLS connections come through Listen's
// diameter.tls listener) until Shutdown, and returns ErrServerClosed then: radiusd's Serve,
// layeh/radius's PacketServer.Serve.
func (s *Server) Serve(ln net.Listener) error {
	if !s.track(ln, false) {
		return ErrServerClosed
	}
	return s.acceptOn(ln, false)
}

// track adds ln to the listeners Shutdown closes and counts its accept loop; false (ln
// closed) once the server is shutting down.
func (s *Server) track(ln net.Listener, overTLS bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		_ = ln.Close()
		return false
	}
	s.lns = append(s.lns, ln)
	if overTLS {
		s.tlsLn = ln
	} else if s.ln == nil {
		s.ln = ln
		s.hostIP = sourceIP(ln.Addr())
		if s.hostIP == nil || s.hostIP.IsUnspecified() {
			s.hostIP = net.IPv4(127, 0, 0, 1)
		}
	}
	s.accepting.Add(1)
	return true
}

// Addr is the listening address.
func (s *Server) Addr() net.Addr {
	s.mu.Lock() // set by Listen, or by a Serve that may run on another goroutine
	defer s.mu.Unlock()
	return s.ln.Addr()
}

// TLSAddr is the TLS listening address (nil without TLS).
func (s *Server) TLSAddr() net.Addr {
	if s.tlsLn == nil {
		return nil
	}
	return s.tlsLn.Addr()
}

// Shutdown stops accepting, tells every accepted peer with a DPR (Disconnect-Cause
// REBOOTING, RFC 6733 §5.4) and keeps reading its connection until its DPA or
// Options.DPRTimeout (the requests that crossed the DPR are served; a connection without
// an accepted CER stops reading at once), answers the requests in flight, then closes every
// peer connection (peers reconnect to another node). Requests still running when ctx ends
// are cancelled: their handlers answer what a cancelled request gets (Gx: 3004
// DIAMETER_TOO_BUSY, which sends the PCEF to another peer, RFC 6733 §7.1.3), and the
// connections close at most Options.FlushTimeout later whatever the handlers do.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	lns := s.lns
	s.mu.Unlock()
	for _, ln := range lns {
		_ = ln.Close()
	}
	s.accepting.Wait()
	var err error
	s.mu.Lock()
	open := map[*peerConn]PeerInfo{}
	for c, st := range s.conns {
		if st.open {
			st.leaving = true
			open[c] = st.info
			s.wg.Add(1) // the wait for its DPA (disconnect): drained only after it
			continue
		}
		// Unblocks the reader: the connection stays open for the answers in flight.
		_ = c.SetReadDeadline(time.Now())
	}
	s.mu.Unlock()
	for c, peer := range open {
		s.disconnect(c, peer)
	}
	drained := make(chan struct{})
	go func() { s.wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-ctx.Done():
		err = fmt.Errorf("diameter drain: %w", ctx.Err())
		s.cancel()
		select { // the cancelled handlers' answers leave before the connections close
		case <-drained:
		case <-time.After(s.opt.FlushTimeout):
		}
		s.mu.Lock()
		for c := range s.conns {
			_ = c.Close()
		}
		s.mu.Unlock()
	}
	s.cancel()
	return err
}

// Close is Shutdown without a budget: the requests in flight are cancelled at once.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func (s *Server) state(c *peerConn) (PeerInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.conns[c]
	if st == nil {
		return PeerInfo{Remote: c.RemoteAddr()}, false
	}
	return st.info, st.open
}

// serve answers one request: thin, it picks the command's function and writes its answer.
// lean is the request when m is only its head (decodeLean), else nil; out is the buffer of
// the reader or worker serving it (Request.Wire).
func (s *Server) serve(c *peerConn, m *diam.Message, lean *leanHead, out *[]byte) {
	start := time.Now()
	var (
		ans     Answer
		code    uint32
		closeIt bool
		name    string
	)
	// The peer's state, read once for the request (each read takes the server's lock).
	info, open := s.state(c)
	// An accepted peer's application request is in the duplicate cache (replay, write); the
	// base protocol's (CER, DWR, DPR) never are: no key to hash for them.
	cached := open && m.Header.ApplicationID != 0
	var ref dupRef
	if cached {
		ref = refOf(dupKey{info.OriginHost, sessionID(m), m.Header.EndToEndID})
	}
	switch {
	case m.Header.CommandFlags&diam.ErrorFlag != 0:
		// RFC 6733 §3: a request never has the E bit.
		name = commandName(m)
		ans.Message, code = s.id.Answer(m, resultInvalidHdrBits), resultInvalidHdrBits
	case m.Header.CommandCode == cmdCER:
		name = "CER"
		ans.Message, code, closeIt = s.cer(c, m)
	case m.Header.CommandCode == cmdDWR:
		name = "DWR"
		ans.Message, code, closeIt = s.base(open, m)
	case m.Header.CommandCode == cmdDPR:
		name = "DPR"
		ans.Message, code, _ = s.base(open, m)
		closeIt = true // RFC 6733 §5.4: the connection closes after DPA
	default:
		name = commandName(m)
		if cached && s.replay(c, ref, m, start) {
			return
		}
		ans, code, closeIt = s.app(c, info, open, m, lean, start, out)
	}
	// Counted before the answer leaves: a peer holding the answer finds its transaction counted.
	s.opt.Metrics.transactions.Inc()
	s.write(c, ans, name, start, ref, cached)
	answered, took := s.opt.Metrics.requestMetrics(name, code)
	answered.Inc()
	took.Observe(time.Since(start).Seconds())
	if closeIt {
		_ = c.Close()
	}
}

// codeLabel is a Result-Code as a metric label (2001 without formatting it).
func codeLabel(code uint32) string {
	if code == diam.Success {
		return "2001"
	}
	return strconv.FormatUint(uint64(code), 10)
}

// replay answers a retransmitted application request of an accepted peer from the cache
// (counted, not processed again); now is when the request was read.
func (s *Server) replay(c *peerConn, ref dupRef, m *diam.Message, now time.Time) bool {
	b, ok := cachedAnswer(s.dups, ref, m.Header.HopByHopID, now)
	if !ok {
		return false
	}
	s.opt.Metrics.duplicates.Inc()
	if err := c.answer(b); err != nil {
		s.opt.Log.Debug("diameter: cached answer not written", "err", err)
	}
	return true
}

// write sends the answer; an application answer is kept for retransmissions of its request,
// before it leaves: a peer that retransmits the moment it has the answer finds it cached,
// dated when the request was read (read, the time serve took once for all it does). cached
// tells an accepted peer's application request, ref its key in the cache.
func (s *Server) write(c *peerConn, ans Answer, name string, read time.Time, ref dupRef, cached bool) {
	b := ans.Wire
	if b == nil {
		if !serializable(ans.Message.AVP) {
			s.opt.Log.Error("diameter: answer not serialized: an AVP without data", "command", name)
			return
		}
		b = serialize(ans.Message)
	}
	if cached {
		putAnswer(s.dups, ref, s.answers.keep(b), read)
	}
	if err := c.answer(b); err != nil {
		s.opt.Log.Debug("diameter: answer not written", "command", name, "err", err)
	}
}

// sessionID is the request's Session-Id ("" without one).
func sessionID(m *diam.Message) string {
	a := SessionIDAVP(m)
	if a == nil {
		return ""
	}
	if v, ok := a.Data.(datatype.UTF8String); ok {
		return string(v)
	}
	return ""
}

func commandName(m *diam.Message) string {
	switch m.Header.CommandCode { // the frequent ones without a dictionary lookup
	case 272:
		return "CCR"
	case 258:
		return "RAR"
	}
	cmd, err := m.Dictionary().FindCommand(m.Header.ApplicationID, m.Header.CommandCode)
	if err != nil {
		return strconv.FormatUint(uint64(m.Header.CommandCode), 10)
	}
	return cmd.Short + "R"
}

// cer runs the capabilities exchange: the peer must be in the table (else 3010, counted,
// connection closed) and share Gx or relay with us (else 5010).
func (s *Server) cer(c *peerConn, m *diam.Message) (*diam.Message, uint32, bool) {
	host, realm := identity(m)
	if host == "" || realm == "" {
		s.opt.Metrics.peersRefused.WithLabelValues(refusedMissingOrigin).Inc()
		return s.id.FailedAVP(m, diam.MissingAVP, missingOrigin(host)), diam.MissingAVP, true
	}
	if c.certNames != nil && !slices.ContainsFunc(c.certNames, func(n string) bool { return strings.EqualFold(n, host) }) {
		s.opt.Metrics.peersRefused.WithLabelValues(refusedCertificate).Inc()
		s.opt.Log.Warn("diameter: Origin-Host is not a name of the peer's certificate", "originHost", host,
			"certificate", c.certNames, "peer", c.RemoteAddr().String())
		return s.cea(m, ResultUnknownPeer), ResultUnknownPeer, true
	}
	if !allowed(s.opt.Peers, host, realm, sourceIP(c.RemoteAddr())) {
		s.opt.Metrics.peersRefused.WithLabelValues(refusedUnknownPeer).Inc()
		s.opt.Log.Warn("diameter: unknown peer refused", "originHost", host, "originRealm", realm, "peer", c.RemoteAddr().String())
		return s.cea(m, ResultUnknownPeer), ResultUnknownPeer, true
	}
	if !s.sharesApp(m) {
		s.opt.Metrics.peersRefused.WithLabelValues(refusedNoCommonApp).Inc()
		return s.cea(m, diam.NoCommonApplication), diam.NoCommonApplication, true
	}
	s.mu.Lock()
	if st := s.conns[c]; st != nil {
		if !st.open {
			s.opt.Metrics.peersUp.Inc()
		}
		st.open = true
		st.info.OriginHost, st.info.OriginRealm = host, realm
	}
	s.mu.Unlock()
	s.opt.Log.Info("diameter: peer up", "originHost", host, "originRealm", realm, "peer", c.RemoteAddr().String())
	return s.cea(m, diam.Success), diam.Success, false
}

// base answers DWR and DPR: only an accepted peer gets 2001.
func (s *Server) base(open bool, m *diam.Message) (*diam.Message, uint32, bool) {
	if !open {
		s.opt.Metrics.peersRefused.WithLabelValues(refusedBeforeCER).Inc()
		return s.id.Answer(m, ResultUnknownPeer), ResultUnknownPeer, true
	}
	return s.id.Answer(m, diam.Success), diam.Success, false
}

// app serves an application request of the peer info (open: its capabilities exchange
// succeeded) on c, read at start; lean is the request when m is only its head (decodeLean).
func (s *Server) app(c *peerConn, info PeerInfo, open bool, m *diam.Message, lean *leanHead, start time.Time, out *[]byte) (Answer, uint32, bool) {
	if !open {
		s.opt.Metrics.peersRefused.WithLabelValues(refusedBeforeCER).Inc()
		return Answer{Message: s.id.Answer(m, ResultUnknownPeer)}, ResultUnknownPeer, true
	}
	h := s.opt.Apps[m.Header.ApplicationID]
	if h == nil {
		return Answer{Message: s.id.Answer(m, diam.ApplicationUnsupported)}, diam.ApplicationUnsupported, false
	}
	if code := s.destination(m); code != 0 {
		return Answer{Message: s.id.Answer(m, code)}, code, false
	}
	if s.inFlight.Add(1) > int64(s.opt.MaxInFlight) {
		s.inFlight.Add(-1)
		return Answer{Message: s.id.Answer(m, ResultTooBusy)}, ResultTooBusy, false
	}
	defer s.inFlight.Add(-1)
	var r *Request
	if lean != nil {
		r = &lean.req // allocated with the head
	} else {
		r = &Request{}
	}
	r.Peer, r.Message, r.out = info, m, (*out)[:0]
	r.rc.parent, r.rc.read, r.rc.timeout = c.ctx, start, s.opt.RequestTimeout
	r.ctx = &r.rc
	defer func() {
		r.rc.release()
		*out, r.out = r.out, nil // grown, for the next request; the answer is sent before then
	}()
	if lean != nil {
		if lh, isLean := h.(LeanHandler); isLean {
			if ans, code, ok := lh.ServeLean(r, lean.avps); ok {
				return ans, code, false
			}
		}
		// Decoded whole (it decodes: decodeLean checked it), for the handler's path of before.
		frame := lean.frame
		if lean.borrowed {
			frame = bytes.Clone(frame) // the decoded message may keep its bytes (decodeChecked)
		}
		full, code, failed := decode(frame)
		if code != 0 {
			return Answer{Message: s.id.undecodableAnswer(frame, code, failed)}, code, false
		}
		r.Message = full
	}
	if wh, isWire := h.(WireHandler); isWire {
		ans, code := wh.ServeWire(r)
		return ans, code, false
	}
	ans, code := h.ServeDiameter(r)
	return Answer{Message: ans}, code, false
}

// sharesApp reports whether the CER advertises Gx or the relay application.
func (s *Server) sharesApp(m *diam.Message) bool {
	ok := func(id uint32) bool {
		return s.opt.Apps[id] != nil || id == 0xffffffff
	}
	for _, a := range m.AVP {
		switch a.Code {
		case avp.AuthApplicationID, avp.AcctApplicationID:
			if v, isU := a.Data.(datatype.Unsigned32); isU && ok(uint32(v)) {
				return true
			}
		case avp.VendorSpecificApplicationID:
			g, isG := a.Data.(*diam.GroupedAVP)
			if !isG {
				continue
			}
			for _, in := range g.AVP {
				if in.Code != avp.AuthApplicationID && in.Code != avp.AcctApplicationID {
					continue
				}
				if v, isU := in.Data.(datatype.Unsigned32); isU && ok(uint32(v)) {
					return true
				}
			}
		}
	}
	return false
}

func identity(m *diam.Message) (host, realm string) {
	for _, a := range m.AVP {
		switch a.Code {
		case avp.OriginHost:
			host = String(a)
		case avp.OriginRealm:
			realm = String(a)
		}
	}
	return host, realm
}

func missingOrigin(host string) uint32 {
	if host == "" {
		return avp.OriginHost
	}
	return avp.OriginRealm
}

// cea builds the capabilities answer: our identity and Gx (plain and vendor-specific).
func (s *Server) cea(m *diam.Message, code uint32) *diam.Message {
	a := s.id.Answer(m, code)
	a.NewAVP(avp.HostIPAddress, avp.Mbit, 0, datatype.Address(s.hostIP))
	a.NewAVP(avp.VendorID, avp.Mbit, 0, datatype.Unsigned32(s.opt.VendorID))
	a.NewAVP(avp.ProductName, 0, 0, datatype.UTF8String(s.opt.ProductName))
	a.NewAVP(avp.SupportedVendorID, avp.Mbit, 0, datatype.Unsigned32(Vendor3GPP))
	for id := range s.opt.Apps {
		a.NewAVP(avp.AuthApplicationID, avp.Mbit, 0, datatype.Unsigned32(id))
		a.NewAVP(avp.VendorSpecificApplicationID, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
			diam.NewAVP(avp.VendorID, avp.Mbit, 0, datatype.Unsigned32(Vendor3GPP)),
			diam.NewAVP(avp.AuthApplicationID, avp.Mbit, 0, datatype.Unsigned32(id)),
		}})
	}
	return a
}

// String names the server for logs.
func (s *Server) String() string {
	return fmt.Sprintf("diameter %s@%s on %s", s.opt.OriginHost, s.opt.OriginRealm, s.ln.Addr())
}
