// Package radiusd is the RADIUS/UDP server frame, shaped like net/http (Handler,
// ResponseWriter, Request). Two ways to dispatch: readers take datagrams off the socket
// into a bounded queue and a fixed pool of workers checks, deduplicates and serves them
// (handlers that wait on a remote store need many in flight), or, for handlers that never
// wait, each reader serves what it read itself (no hand-off between goroutines: less CPU
// and a shorter tail). What cannot be answered is dropped as the RFCs say and counted by
// reason.
package radiusd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"layeh.com/radius"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/dedup"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
	"github.com/openaaa/openaaa/services/policing/internal/workpool"
)

// Handler answers one request. It writes at most one reply; writing none means no answer
// (the NAS will retransmit), which is what a request that could not be stored must get.
type Handler interface {
	ServeRADIUS(w ResponseWriter, r *Request)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(w ResponseWriter, r *Request)

func (f HandlerFunc) ServeRADIUS(w ResponseWriter, r *Request) { f(w, r) }

// ResponseWriter sends the reply. The server adds Message-Authenticator and the response
// authenticator.
type ResponseWriter interface {
	Write(reply *radius.Packet) error
}

// Request is a verified, parsed request. It and its Packet (attribute values included) are
// valid until ServeRADIUS returns: the server reuses their memory for the next request, so a
// handler copies what it keeps (as the store does: strings and Merge copy).
type Request struct {
	*radius.Packet
	Client     *nas.Client
	RemoteAddr netip.AddrPort
	Received   time.Time
	ctx        context.Context
}

// Context is cancelled when the server is shut down hard. A Request built outside the
// server (tests, other front ends) has context.Background, as net/http does.
func (r *Request) Context() context.Context {
	if r.ctx == nil {
		return context.Background()
	}
	return r.ctx
}

// Options tune the server.
type Options struct {
	// Inline: readers serve their own datagrams; Workers and QueueSize are unused. Only
	// for handlers that never wait (embedded store, file subscribers, no proxy).
	Inline bool
	// Workers, QueueSize and MaxQueueWait: 0 takes the configuration's default (radius.*).
	Workers         int
	QueueSize       int
	MaxQueueWait    time.Duration
	Readers         int // per listener; 0: GOMAXPROCS
	DuplicateWindow time.Duration
	SocketBuffer    int
	Log             *slog.Logger
	Metrics         *metrics.Metrics // the node's; nil: unregistered ones
}

// Server serves RADIUS on any number of UDP listeners.
type Server struct {
	opt     Options
	clients atomic.Pointer[nas.Table]
	dups    *dupCache
	ctx     context.Context
	cancel  context.CancelFunc
	pool    *workpool.Pool[*job, arena] // nil: inline dispatch
	readers sync.WaitGroup
	mu      sync.Mutex
	conns   []*net.UDPConn
	closing atomic.Bool
	// stopReading is closed by Shutdown: readers waiting for room in the queue give up.
	stopReading chan struct{}
	dropLog     rateLimiter
	bufs        sync.Pool
}

// Listener kinds: which codes a port takes.
type Kind uint8

const (
	Auth Kind = iota + 1
	Acct
)

func (k Kind) String() string {
	if k == Auth {
		return "auth"
	}
	return "acct"
}

type job struct {
	buf     *[radius.MaxPacketLength]byte
	n       int
	from    netip.AddrPort
	conn    *net.UDPConn
	kind    Kind
	handler Handler
	client  *nas.Client // the listener's one client (ListenAs); nil: by source address
	at      time.Time
	// dst is the address the request was sent to, known on a wildcard socket only: the
	// reply leaves from it.
	dst     netip.Addr
	ifIndex uint32
}

// rxMeta is what the kernel told about one datagram (rxmeta_linux.go).
type rxMeta struct {
	arrived  time.Time
	drops    uint32
	hasDrops bool
	// dst is the address the datagram was sent to (wildcard sockets only); ifIndex the
	// interface it came in on.
	dst     netip.Addr
	ifIndex uint32
}

// New builds a server; Serve starts each listener.
func New(opt Options, clients *nas.Table) *Server {
	d := config.Default().Radius // the configuration's defaults, not copies of them
	if opt.Workers <= 0 {
		opt.Workers = d.Workers
	}
	if opt.QueueSize <= 0 {
		opt.QueueSize = d.QueueSize
	}
	if opt.MaxQueueWait <= 0 {
		opt.MaxQueueWait = d.MaxQueueWait.D()
	}
	if opt.Readers <= 0 {
		opt.Readers = runtime.GOMAXPROCS(0)
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	if opt.Metrics == nil {
		opt.Metrics = metrics.New(metrics.Factory{})
	}
	s := &Server{opt: opt, dups: newDupCache(opt.DuplicateWindow), stopReading: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.bufs.New = func() any { return new([radius.MaxPacketLength]byte) }
	s.clients.Store(clients)
	if opt.Inline {
		opt.Metrics.Workers.Set(0) // the readers are the workers: Listen counts them
		return s
	}
	opt.Metrics.Workers.Set(float64(opt.Workers))
	s.pool = workpool.New(workpool.Options{Workers: opt.Workers, Queue: opt.QueueSize}, s.work)
	return s
}

// SetClients swaps the client table (hot reload); requests in flight keep the old one.
func (s *Server) SetClients(t *nas.Table) { s.clients.Store(t) }

// Clients returns the table in force.
func (s *Server) Clients() *nas.Table { return s.clients.Load() }

// ErrServerClosed is what Serve returns once Shutdown stopped it.
var ErrServerClosed = errors.New("radius: server closed")

// Listen opens a UDP socket on addr and serves it in the background.
func (s *Server) Listen(addr string, kind Kind, h Handler) (*net.UDPConn, error) {
	return s.listen(addr, kind, h, nil)
}

// Serve serves the requests of kind that conn receives with h until Shutdown, which closes
// conn, and returns ErrServerClosed then: layeh/radius's PacketServer.Serve, and
// diameter.Server.Serve.
func (s *Server) Serve(conn *net.UDPConn, kind Kind, h Handler) error {
	readers, ok := s.serveConn(conn, kind, h, nil, false)
	if !ok {
		return ErrServerClosed
	}
	readers.Wait()
	return ErrServerClosed
}

// ListenAs opens an auth socket whose every request comes from client, whatever its source
// address (other policing nodes, pods whose addresses change): the same checks, the
// Message-Authenticator required under client's secret, the duplicate cache and the drop
// counters as on any listener. Used by EAP forwarding (eap.forward.address).
func (s *Server) ListenAs(addr string, client *nas.Client, h Handler) (*net.UDPConn, error) {
	return s.listen(addr, Auth, h, client)
}

func (s *Server) listen(addr string, kind Kind, h Handler, client *nas.Client) (*net.UDPConn, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("radius %s listener %q: %w", kind, addr, err)
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("radius %s listener: %w", kind, err)
	}
	if _, ok := s.serveConn(conn, kind, h, client, ua.IP == nil || ua.IP.IsUnspecified()); !ok {
		return nil, fmt.Errorf("radius %s listener: %w", kind, ErrServerClosed)
	}
	return conn, nil
}

// serveConn starts conn's readers (wildcard: the socket is bound to every address, and
// replies leave from the one each request was sent to); false when the server is shut down
// (conn closed). The returned group ends with the readers.
func (s *Server) serveConn(conn *net.UDPConn, kind Kind, h Handler, client *nas.Client, wildcard bool) (*sync.WaitGroup, bool) {
	if s.opt.SocketBuffer > 0 {
		_ = conn.SetReadBuffer(s.opt.SocketBuffer) // best effort: the kernel caps it
		_ = conn.SetWriteBuffer(s.opt.SocketBuffer)
	}
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		_ = conn.Close()
		return nil, false
	}
	s.conns = append(s.conns, conn)
	readers := new(sync.WaitGroup)
	readers.Add(s.opt.Readers)
	s.readers.Add(s.opt.Readers)
	s.mu.Unlock()
	enableRxMeta(conn, wildcard)
	bufDrops := new(atomic.Uint32)
	for i := 0; i < s.opt.Readers; i++ {
		go func() {
			defer readers.Done()
			s.read(conn, kind, h, client, bufDrops)
		}()
	}
	if s.opt.Inline {
		s.opt.Metrics.Workers.Add(float64(s.opt.Readers))
		s.opt.Log.Info("radius listener started", "kind", kind.String(), "address", conn.LocalAddr().String(),
			"dispatch", "inline", "readers", s.opt.Readers)
	} else {
		s.opt.Log.Info("radius listener started", "kind", kind.String(), "address", conn.LocalAddr().String(),
			"dispatch", "workers", "readers", s.opt.Readers, "workers", s.opt.Workers, "queue", s.opt.QueueSize)
	}
	return readers, true
}

func (s *Server) read(conn *net.UDPConn, kind Kind, h Handler, client *nas.Client, bufDrops *atomic.Uint32) {
	defer s.readers.Done()
	oob := make([]byte, oobSize)
	var buf *[radius.MaxPacketLength]byte // kept until a worker takes it
	var own job                           // inline: the one job this reader serves at a time
	var mem arena                         // inline: this reader's request memory
	defer func() {
		if buf != nil {
			s.bufs.Put(buf)
		}
	}()
	for {
		if buf == nil {
			buf = s.bufs.Get().(*[radius.MaxPacketLength]byte)
		}
		n, oobn, _, from, err := conn.ReadMsgUDPAddrPort(buf[:], oob)
		if err != nil {
			if s.closing.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			s.opt.Log.Warn("radius read failed", "kind", kind.String(), "err", err)
			time.Sleep(10 * time.Millisecond) // avoid a hot loop on a persistent socket error
			continue
		}
		now := time.Now()
		meta := parseRxMeta(oob[:oobn])
		if meta.hasDrops {
			s.countBufferDrops(bufDrops, meta.drops)
		}
		at := meta.arrived
		if at.IsZero() || at.After(now) {
			at = now
		}
		if now.Sub(at) > s.opt.MaxQueueWait {
			// It waited in the socket buffer for so long that the NAS has retransmitted or
			// given up: dropping it here costs less than answering it late.
			s.drop(metrics.DropOverload, from, errors.New("waited too long in the socket buffer"))
			continue
		}
		if s.opt.Inline {
			// While it serves, the reader reads nothing more: the excess waits in the socket
			// buffer and beyond it the kernel drops it, as with a full queue below.
			own = job{buf: buf, n: n, from: from, conn: conn, kind: kind, handler: h, client: client, at: at, dst: meta.dst, ifIndex: meta.ifIndex}
			s.serveCounted(&own, &mem)
			continue
		}
		j := &job{buf: buf, n: n, from: from, conn: conn, kind: kind, handler: h, client: client, at: at, dst: meta.dst, ifIndex: meta.ifIndex}
		// When every worker is busy and the queue is full, wait for a worker instead of
		// reading on: what we cannot take stays in the kernel's buffer, and beyond it the
		// kernel drops it (counted as socket_buffer_full) without costing us any CPU, so
		// the CPU goes to requests that will be answered.
		if !s.pool.Submit(j, s.stopReading) {
			// Shutting down with every worker busy: not taken, not answered; the NAS
			// retransmits to another node.
			return
		}
		s.opt.Metrics.QueueDepth.Inc()
		buf = nil
	}
}

// countBufferDrops adds the growth of a socket's drop counter (shared by its readers, which
// may see the values out of order) to the drop metric.
func (s *Server) countBufferDrops(last *atomic.Uint32, drops uint32) {
	for {
		prev := last.Load()
		d := drops - prev
		if d == 0 || d >= 1<<31 {
			return
		}
		if last.CompareAndSwap(prev, drops) {
			s.opt.Metrics.Dropped.WithLabelValues(metrics.DropSocketBuffer).Add(float64(d))
			return
		}
	}
}

// work serves one queued datagram; mem is the worker's request memory.
func (s *Server) work(mem *arena, j *job) {
	s.opt.Metrics.QueueDepth.Dec()
	if time.Since(j.at) > s.opt.MaxQueueWait {
		// The NAS has likely retransmitted or given up already: answering late only adds load.
		s.drop(metrics.DropOverload, j.from, errors.New("waited too long for a worker"))
	} else {
		s.serveCounted(j, mem)
	}
	s.bufs.Put(j.buf)
}

func (s *Server) serveCounted(j *job, mem *arena) {
	s.opt.Metrics.WorkersBusy.Inc()
	s.serve(j, mem)
	s.opt.Metrics.WorkersBusy.Dec()
}

// serve frames one datagram and hands it to the request pipeline; the parsed request lives
// in mem and aliases j.buf, both reused once it returns.
func (s *Server) serve(j *job, mem *arena) {
	n, err := radiusx.PacketLen(j.buf[:j.n])
	if err != nil {
		s.drop(metrics.DropMalformed, j.from, err)
		return
	}
	pkt := j.buf[:n]
	code := radius.Code(pkt[0])
	if !accepts(j.kind, code) {
		s.drop(metrics.DropUnsupported, j.from, fmt.Errorf("code %d on %s port", code, j.kind))
		return
	}
	client := j.client
	if client == nil {
		client = s.clients.Load().Match(j.from.Addr(), pkt)
	}
	if client == nil {
		s.drop(metrics.DropUnknownClient, j.from, nil)
		return
	}
	mem.udp = udpOut{conn: j.conn, to: j.from}
	mem.udp.oobN = replySource(&mem.udp.oob, j.dst, j.ifIndex)
	mem.in = inbound{pkt: pkt, from: j.from, kind: j.kind, handler: j.handler, client: client, at: j.at,
		out: &mem.udp, dups: s.dups}
	s.handle(&mem.in, mem)
}

// inbound is one request as its transport read it (UDP datagram or RadSec record) with the
// client it comes from. Everything after reading is one pipeline for every transport
// (handle); a transport only reads packets, finds the client and writes replies (out).
type inbound struct {
	pkt     []byte // one whole, length-checked packet
	from    netip.AddrPort
	kind    Kind
	handler Handler
	client  *nas.Client
	at      time.Time
	out     replyOut
	dups    *dupCache // nil: no duplicate detection (a reliable transport)
}

// replyOut writes one encoded reply on the request's transport.
type replyOut interface {
	send(b []byte) error
}

// handle is the request pipeline: verify, deduplicate, parse, serve (or answer
// Status-Server), reply. The parsed request lives in mem and aliases in.pkt, both reused
// once it returns.
func (s *Server) handle(in *inbound, mem *arena) {
	pkt := in.pkt
	if reason, err := verify(pkt, in.client); err != nil {
		s.drop(reason, in.from, err)
		return
	}
	var key dupKey
	if in.dups != nil {
		key = dupKey{from: in.from, id: pkt[1], code: pkt[0]}
		copy(key.auth[:], pkt[4:20])
		reply, state := in.dups.Begin(key.slot(), key.auth, in.at)
		switch state {
		case dedup.InFlight:
			s.drop(metrics.DropDuplicate, in.from, nil)
			return
		case dedup.Answered:
			s.opt.Metrics.DuplicatesAnswered.Inc()
			_ = in.out.send(reply)
			return
		}
	}
	p, err := mem.parse(pkt, in.client.Secret)
	if err != nil {
		in.dups.Abort(key.slot(), key.auth)
		s.drop(metrics.DropMalformed, in.from, err)
		return
	}
	mem.w = responseWriter{s: s, out: in.out, to: in.from, client: in.client.Name, dups: in.dups, secret: in.client.Secret, key: key, at: in.at, req: p}
	w := &mem.w
	if radius.Code(pkt[0]) == radius.CodeStatusServer {
		s.statusServer(w, p, in.kind)
	} else {
		mem.req = Request{Packet: p, Client: in.client, RemoteAddr: in.from, Received: in.at, ctx: s.ctx}
		in.handler.ServeRADIUS(w, &mem.req)
	}
	if !w.wrote {
		in.dups.Abort(key.slot(), key.auth)
	}
	// The request's memory is reused from now on. Zeroing the packet makes anything kept
	// by mistake read as empty (tests catch it) and leaves no password behind.
	clear(pkt)
}

func accepts(k Kind, c radius.Code) bool {
	switch c {
	case radius.CodeStatusServer:
		return true
	case radius.CodeAccessRequest:
		return k == Auth
	case radius.CodeAccountingRequest:
		return k == Acct
	}
	return false
}

// verify checks the request's authenticity with the client's secret.
func verify(pkt []byte, c *nas.Client) (string, error) {
	present, err := radiusx.VerifyRequestMA(pkt, c.Secret)
	switch {
	case errors.Is(err, radiusx.ErrBadMessageAuth), errors.Is(err, radiusx.ErrDuplicateMessageMA):
		return metrics.DropBadMA, err
	case err != nil:
		return metrics.DropMalformed, err
	}
	switch radius.Code(pkt[0]) {
	case radius.CodeAccessRequest:
		if present {
			break
		}
		if c.RequireMA {
			return metrics.DropMissingMA, errors.New("Access-Request without Message-Authenticator")
		}
		if has(pkt, typeEAPMessage) { // RFC 3579 §3.2: silently discarded
			return metrics.DropMissingMA, errors.New("Access-Request with EAP-Message without Message-Authenticator")
		}
		if c.LimitProxyState && has(pkt, radiusx.TypeProxyState) {
			// BlastRADIUS: the attacker's Proxy-State would be echoed ahead of the reply's
			// only unpredictable data (FreeRADIUS limit_proxy_state).
			return metrics.DropProxyStateWithoutMA, errors.New("Access-Request with Proxy-State without Message-Authenticator")
		}
	case radius.CodeStatusServer:
		if !present { // RFC 5997 §3: Status-Server must carry it
			return metrics.DropMissingMA, errors.New("Status-Server without Message-Authenticator")
		}
	case radius.CodeAccountingRequest:
		if err := radiusx.VerifyAccountingRequest(pkt, c.Secret); err != nil {
			return metrics.DropBadAuthenticator, err
		}
	}
	return "", nil
}

const typeEAPMessage = 79

// has reports whether a framing-checked packet carries an attribute of type t.
func has(pkt []byte, t byte) bool {
	off, _, err := radiusx.FindAttr(pkt, t)
	return err == nil && off >= 0
}

// statusServer answers RFC 5997 Status-Server: Access-Accept on the auth port,
// Accounting-Response on the accounting port.
func (s *Server) statusServer(w ResponseWriter, p *radius.Packet, k Kind) {
	code := radius.CodeAccessAccept
	if k == Acct {
		code = radius.CodeAccountingResponse
	}
	_ = w.Write(p.Response(code))
}

// responseWriter is the one reply writer of every transport.
type responseWriter struct {
	s      *Server
	out    replyOut
	to     netip.AddrPort
	client string
	dups   *dupCache
	secret []byte
	key    dupKey
	at     time.Time // when the request was read
	req    *radius.Packet
	wrote  bool
}

// Write encodes the reply with a Message-Authenticator (always: BlastRADIUS), remembers it
// for duplicates and sends it.
func (w *responseWriter) Write(reply *radius.Packet) error {
	if w.wrote {
		return errors.New("radius: reply already written")
	}
	b, err := encodeReply(reply, w.req, w.secret)
	if errors.Is(err, ErrReplyTooLarge) {
		// A profile or policy that hands out too much: the NAS gets no answer, the
		// operator a warning (at most one a second) naming the client.
		w.s.opt.Metrics.Dropped.WithLabelValues(metrics.DropReplyTooLarge).Inc()
		if w.s.dropLog.allow(metrics.DropReplyTooLarge) {
			w.s.opt.Log.Warn("radius reply not sent: too large", "client", w.client, "to", w.to.String(),
				"code", reply.Code.String(), "err", err)
		}
	}
	if err != nil {
		return err
	}
	w.wrote = true
	w.dups.Finish(w.key.slot(), w.key.auth, b, w.at)
	if err := w.out.send(b); err != nil {
		w.s.opt.Log.Warn("radius reply not sent", "to", w.to.String(), "err", err)
		return err
	}
	return nil
}

// udpOut sends replies as datagrams to the request's source, from the address the request
// was sent to when the socket is a wildcard one (oob: rxmeta_linux.go).
type udpOut struct {
	conn *net.UDPConn
	to   netip.AddrPort
	oob  [srcOOBSize]byte
	oobN int
}

func (u *udpOut) send(b []byte) error {
	if u.oobN == 0 {
		_, err := u.conn.WriteToUDPAddrPort(b, u.to)
		return err
	}
	_, _, err := u.conn.WriteMsgUDPAddrPort(b, u.oob[:u.oobN], u.to)
	return err
}

// ErrReplyTooLarge: the reply would be longer than a RADIUS packet may be (4,096 octets,
// RFC 2865 §3).
var ErrReplyTooLarge = errors.New("radius: reply longer than 4096 octets")

// maPlaceholder is the Message-Authenticator every reply starts with, zero until signed
// (shared and never written: encoding copies it).
var maPlaceholder = &radius.AVP{Type: radiusx.TypeMessageAuthenticator, Attribute: make(radius.Attribute, 16)}

// encodeReply encodes the reply to req on any transport: Message-Authenticator first
// (BlastRADIUS: as FreeRADIUS ≥ 3.2.5 does, so that nothing the client chose precedes it),
// the reply's attributes, the request's Proxy-State attributes copied unmodified and in
// order (RFC 2865 §5.33), then the response authenticator.
func encodeReply(reply, req *radius.Packet, secret []byte) ([]byte, error) {
	attrs := make(radius.Attributes, 1, len(reply.Attributes)+4)
	attrs[0] = maPlaceholder
	for _, a := range reply.Attributes {
		if a.Type != radiusx.TypeMessageAuthenticator && a.Type != radiusx.TypeProxyState {
			attrs = append(attrs, a)
		}
	}
	for _, a := range req.Attributes {
		if a.Type == radiusx.TypeProxyState {
			attrs = append(attrs, a)
		}
	}
	n, err := radius.AttributesEncodedLen(attrs)
	if err != nil {
		return nil, err
	}
	if radiusx.HeaderLen+n > radius.MaxPacketLength {
		return nil, fmt.Errorf("%w: %d octets", ErrReplyTooLarge, radiusx.HeaderLen+n)
	}
	out := radius.Packet{Code: reply.Code, Identifier: req.Identifier, Authenticator: req.Authenticator, Attributes: attrs}
	b, err := out.MarshalBinary()
	if err != nil {
		return nil, err
	}
	radiusx.SignResponse(b, radiusx.HeaderLen+2, secret, byte(req.Code))
	return b, nil
}

// drop counts a request dropped without reply and logs it at debug level, at most once a
// second per reason so that a flood cannot flood the log too.
func (s *Server) drop(reason string, from netip.AddrPort, err error) {
	s.opt.Metrics.Dropped.WithLabelValues(reason).Inc()
	if s.dropLog.allow(reason) && s.opt.Log.Enabled(context.Background(), slog.LevelDebug) {
		attrs := []any{"reason", reason, "from", from.String()}
		if err != nil {
			attrs = append(attrs, "err", err.Error())
		}
		s.opt.Log.Debug("radius request dropped", attrs...)
	}
}

// Shutdown stops reading, answers what is queued and in flight, then closes the sockets.
// Requests still unanswered when ctx ends are abandoned (the NAS retransmits elsewhere).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock() // no listener is added from now on (serveConn)
	if !s.closing.CompareAndSwap(false, true) {
		s.mu.Unlock()
		return nil
	}
	conns := append([]*net.UDPConn(nil), s.conns...)
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now()) // unblocks readers; the socket stays open for replies
	}
	close(s.stopReading)
	done := make(chan struct{})
	go func() {
		s.readers.Wait() // inline readers finish the request they are serving
		if s.pool != nil {
			s.pool.Close()
			s.pool.Wait()
		}
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("radius drain: %w", ctx.Err())
		s.cancel()
	}
	for _, c := range conns {
		_ = c.Close()
	}
	s.cancel()
	return err
}

type rateLimiter struct{ last sync.Map } // reason -> *atomic.Int64 (unix seconds)

func (r *rateLimiter) allow(key string) bool {
	now := time.Now().Unix()
	v, _ := r.last.LoadOrStore(key, new(atomic.Int64))
	last := v.(*atomic.Int64)
	prev := last.Load()
	return prev != now && last.CompareAndSwap(prev, now)
}
