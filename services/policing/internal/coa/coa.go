// Package coa sends CoA-Request and Disconnect-Request (RFC 5176) to the NAS that owns a
// session: the NAS is the client the session was recorded from (whichever node or DC wrote
// it, the store's lookups find it), reached on its CoA port (default 3799) with its shared
// secret. Replies are accepted only when their authenticator verifies; NAKs carry their
// Error-Cause back to the caller. docs/coa.md.
package coa

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"
	"layeh.com/radius/rfc2869"
	"layeh.com/radius/rfc3162"
	"layeh.com/radius/rfc3576"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
	"github.com/openaaa/openaaa/services/policing/internal/radclient"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// Results.
const (
	ResultACK       = "ack"
	ResultNAK       = "nak"
	ResultTimeout   = "timeout"
	ResultError     = "error"
	ResultNoSession = "no_session"
	ResultNoClient  = "no_client"
)

// Triggers (metric label).
const (
	TriggerAPI    = "api"
	TriggerPolicy = "policy"
	// TriggerGxQuota: a Gx session of the subscriber used the quota (PolicyTrigger.UserCoA).
	TriggerGxQuota = "gx_quota"
)

// Result is the outcome for one session.
type Result struct {
	NAS            string `json:"nas"`
	AcctSessionID  string `json:"acctSessionId"`
	UserName       string `json:"userName,omitempty"`
	Client         string `json:"client,omitempty"`
	Target         string `json:"target,omitempty"` // address:port the request went to
	Result         string `json:"result"`
	ErrorCause     uint32 `json:"errorCause,omitempty"`
	ErrorCauseName string `json:"errorCauseName,omitempty"`
	Error          string `json:"error,omitempty"`
	Millis         int64  `json:"ms"`
}

// Sender sends CoA and Disconnect requests.
type Sender struct {
	Store session.Store
	// Clients returns the client table in force (it is reloaded at run time).
	Clients func() *nas.Table
	// Timeout is the first retransmission timer (doubling); Retries the retransmissions.
	Timeout time.Duration
	Retries int
	Log     *slog.Logger
	Metrics *Metrics // the node's (NewMetrics); required
}

// Selector names the sessions to act on: exactly one of User, IP, or NAS+ID. IP is an
// IPv4 framed address, or an IPv6 address or prefix that a session's delegated or framed
// IPv6 prefix covers (session.ParseIPQuery, longest-prefix match).
type Selector struct {
	User    string
	IP      netip.Prefix
	NAS, ID string
}

// Find returns the active sessions a selector names (none: an empty list, no error).
func (s *Sender) Find(ctx context.Context, sel Selector) ([]*session.Session, error) {
	switch {
	case sel.User != "":
		return s.Store.ByUser(ctx, sel.User)
	case sel.IP.IsValid():
		one, err := session.ByIP(ctx, s.Store, sel.IP)
		if errors.Is(err, session.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return []*session.Session{one}, nil
	case sel.NAS != "" && sel.ID != "":
		one, err := s.Store.Get(ctx, session.Key{NAS: sel.NAS, ID: sel.ID})
		if errors.Is(err, session.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return []*session.Session{one}, nil
	}
	return nil, errors.New("give one of user, IP address or prefix, or NAS and session id")
}

// Disconnect sends a Disconnect-Request for one session.
func (s *Sender) Disconnect(ctx context.Context, sess *session.Session, trigger string) Result {
	return s.send(ctx, radius.CodeDisconnectRequest, sess, nil, trigger)
}

// CoA sends a CoA-Request for one session carrying attrs (new authorisation).
func (s *Sender) CoA(ctx context.Context, sess *session.Session, attrs radius.Attributes, trigger string) Result {
	return s.send(ctx, radius.CodeCoARequest, sess, attrs, trigger)
}

// All acts on several sessions at once and returns the results in order.
func (s *Sender) All(ctx context.Context, sessions []*session.Session, fn func(context.Context, *session.Session) Result) []Result {
	out := make([]Result, len(sessions))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, x := range sessions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = fn(ctx, x)
		}()
	}
	wg.Wait()
	return out
}

func kindOf(code radius.Code) string {
	if code == radius.CodeCoARequest {
		return "coa"
	}
	return "disconnect"
}

// client finds the session's NAS in the client table: by the client name recorded with the
// session, else by its NAS-IP-Address or NAS-IPv6-Address.
func (s *Sender) client(sess *session.Session) *nas.Client {
	t := s.Clients()
	if t == nil {
		return nil
	}
	for _, c := range t.All() {
		if c.Name == sess.ClientName && (c.NASIdentifier == "" || sess.NASIdentifier == "" || c.NASIdentifier == sess.NASIdentifier) {
			return c
		}
	}
	for _, a := range []netip.Addr{sess.NASIPAddress, sess.NASIPv6Address} {
		if a.IsValid() {
			if c := t.Match(a, nil); c != nil {
				return c
			}
		}
	}
	return nil
}

// target is where the NAS listens for CoA: its NAS-IP-Address, else its NAS-IPv6-Address
// (an IPv6-only NAS), when that lies in the client's configured address range, else the
// client's address when it is a single IP.
func target(c *nas.Client, sess *session.Session) (netip.AddrPort, error) {
	port := uint16(c.CoAPort)
	if port == 0 {
		port = config.DefaultCoAPort
	}
	for _, a := range []netip.Addr{sess.NASIPAddress.Unmap(), sess.NASIPv6Address} {
		if a.IsValid() && c.Prefix.Contains(a) {
			return netip.AddrPortFrom(a, port), nil
		}
	}
	if c.Prefix.IsSingleIP() {
		return netip.AddrPortFrom(c.Prefix.Addr(), port), nil
	}
	return netip.AddrPort{}, fmt.Errorf("client %s is a range and neither the session's NAS-IP-Address %v nor its NAS-IPv6-Address %v is in it",
		c.Name, sess.NASIPAddress, sess.NASIPv6Address)
}

// identify adds the NAS and session identification attributes of RFC 5176 §3: an IPv6 NAS
// is named by NAS-IPv6-Address, a dual-stack session also by its Framed-IPv6-Prefix.
func identify(p *radius.Packet, sess *session.Session) {
	if sess.UserName != "" {
		rfc2865.UserName_SetString(p, sess.UserName)
	}
	rfc2866.AcctSessionID_SetString(p, sess.ID)
	if a := sess.NASIPAddress; a.Is4() {
		b := a.As4()
		p.Set(rfc2865.NASIPAddress_Type, b[:])
	}
	if a := sess.NASIPv6Address; a.Is6() {
		b := a.As16()
		p.Set(rfc3162.NASIPv6Address_Type, b[:])
	}
	if sess.NASIdentifier != "" {
		rfc2865.NASIdentifier_SetString(p, sess.NASIdentifier)
	}
	if sess.NASPort != 0 {
		rfc2865.NASPort_Set(p, rfc2865.NASPort(sess.NASPort))
	}
	if a := sess.FramedIP; a.Is4() {
		b := a.As4()
		p.Set(rfc2865.FramedIPAddress_Type, b[:])
	}
	if f := sess.FramedIPv6Prefix; f.IsValid() {
		if a, err := radius.NewIPv6Prefix(&net.IPNet{IP: f.Addr().AsSlice(), Mask: net.CIDRMask(f.Bits(), 128)}); err == nil {
			p.Set(rfc3162.FramedIPv6Prefix_Type, a)
		}
	}
	if sess.CallingStationID != "" {
		rfc2865.CallingStationID_SetString(p, sess.CallingStationID)
	}
	rfc2869.EventTimestamp_Set(p, time.Now())
}

func (s *Sender) send(ctx context.Context, code radius.Code, sess *session.Session, attrs radius.Attributes, trigger string) (res Result) {
	kind := kindOf(code)
	start := time.Now()
	res = Result{NAS: sess.NAS, AcctSessionID: sess.ID, UserName: sess.UserName, Client: sess.ClientName}
	defer func() {
		res.Millis = time.Since(start).Milliseconds()
		s.Metrics.requests.WithLabelValues(kind, trigger, res.Result).Inc()
		lvl := slog.LevelInfo
		if res.Result != ResultACK {
			lvl = slog.LevelWarn
		}
		s.log().Log(context.Background(), lvl, "coa: "+kind, "trigger", trigger, "nas", res.NAS, "session", res.AcctSessionID,
			"user", res.UserName, "target", res.Target, "result", res.Result, "errorCause", res.ErrorCauseName, "err", res.Error)
	}()
	c := s.client(sess)
	if c == nil {
		res.Result, res.Error = ResultNoClient, "no configured client for this session's NAS"
		return res
	}
	res.Client = c.Name
	to, err := target(c, sess)
	if err != nil {
		res.Result, res.Error = ResultNoClient, err.Error()
		return res
	}
	res.Target = to.String()
	p := radius.New(code, c.Secret)
	identify(p, sess)
	for _, a := range attrs {
		if a.Type != radiusx.TypeMessageAuthenticator {
			p.Attributes = append(p.Attributes, a)
		}
	}
	s.Metrics.transactions.WithLabelValues("coa").Inc()
	reply, err := s.exchange(ctx, p, to)
	if err != nil {
		res.Result, res.Error = ResultError, err.Error()
		if errors.Is(err, errTimeout) {
			res.Result = ResultTimeout
		}
		return res
	}
	s.Metrics.duration.WithLabelValues(kind).Observe(time.Since(start).Seconds())
	switch reply.Code {
	case radius.CodeDisconnectACK, radius.CodeCoAACK:
		res.Result = ResultACK
	default:
		res.Result = ResultNAK
		if ec, err := rfc3576.ErrorCause_Lookup(reply); err == nil {
			res.ErrorCause = uint32(ec)
			res.ErrorCauseName = ec.String()
		}
		name := res.ErrorCauseName
		if name == "" {
			name = "none"
		}
		s.Metrics.errorCauses.WithLabelValues(kind, name).Inc()
	}
	return res
}

var errTimeout = errors.New("the NAS did not answer")

// exchange sends p (signed with Message-Authenticator) and waits for a verified ACK/NAK,
// retransmitting the same datagram with a doubling timer (radclient.Exchange).
func (s *Sender) exchange(ctx context.Context, p *radius.Packet, to netip.AddrPort) (*radius.Packet, error) {
	var id [1]byte
	_, _ = rand.Read(id[:])
	p.Identifier = id[0]
	wire, err := p.MarshalBinary()
	if err != nil {
		return nil, err
	}
	wire, off := radiusx.AppendMessageAuthenticator(wire)
	radiusx.SignRequest(wire, off, p.Secret)
	reqAuth := append([]byte(nil), wire[4:20]...)
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", to.String())
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ack, nak := radius.CodeDisconnectACK, radius.CodeDisconnectNAK
	if p.Code == radius.CodeCoARequest {
		ack, nak = radius.CodeCoAACK, radius.CodeCoANAK
	}
	var reply *radius.Packet
	_, err = radclient.Exchange(ctx, conn, wire, radclient.Options{Timeout: s.Timeout, Retries: s.Retries,
		OnRetransmit: s.Metrics.retransmissions.Inc}, func(b []byte) bool {
		r, err := radiusx.ParseReply(b, wire[1], reqAuth, p.Secret, false, ack, nak)
		if err != nil {
			return false
		}
		reply = r
		return true
	})
	if errors.Is(err, radclient.ErrTimeout) {
		return nil, errTimeout
	}
	if err != nil {
		return nil, err
	}
	return reply, nil
}

func (s *Sender) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}
