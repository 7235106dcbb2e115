package aaa

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"
	"layeh.com/radius/rfc2869"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/radiusd"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// Acct answers Accounting-Requests. The Accounting-Response goes out only after the store
// accepted the write; when it did not, no reply is sent and the NAS retransmits
// (RFC 2866 §2: a server that cannot record a request must not acknowledge it).
type Acct struct {
	Store       session.Store
	Subscribers subscriber.Source
	Policy      policy.Policy
	Log         *slog.Logger
	// StoreTimeout bounds one store write; 0: none (a store in the process never waits).
	StoreTimeout time.Duration
	// Now is the clock (tests).
	Now func() time.Time
	// Forward, when set, passes the request on after local processing succeeded (the
	// accounting proxy, docs/proxy.md); an error means the NAS gets no reply.
	Forward func(ctx context.Context, r *radiusd.Request) error
	// Stored, when set, is the step after a Start, Interim or Stop the store accepted: it
	// carries out the policy's actions (Disconnect, CoA: coa.PolicyTrigger); it must not
	// block the reply.
	Stored func(u *session.Update, a policy.Actions)
	// SupersedeStale closes the stale sessions a Start, or an Interim that created its
	// session, replaces once it is stored (supersede.go).
	SupersedeStale bool
	// Metrics are the node's (NewMetrics); required.
	Metrics *Metrics
}

// Acct-Status-Type values (RFC 2866 §5.1).
const (
	statusStart   = 1
	statusStop    = 2
	statusInterim = 3
	statusOn      = 7
	statusOff     = 8
)

var statusNames = map[uint32]string{statusStart: "Start", statusStop: "Stop", statusInterim: "Interim-Update",
	statusOn: "Accounting-On", statusOff: "Accounting-Off"}

// Acct-Terminate-Cause recorded when Accounting-On/Off closes the sessions of a NAS.
const (
	causeNASReboot  = 11
	causeNASRequest = 10
)

func (h *Acct) ServeRADIUS(w radiusd.ResponseWriter, r *radiusd.Request) {
	status, err := rfc2866.AcctStatusType_Lookup(r.Packet)
	name := statusNames[uint32(status)]
	if name == "" {
		name = "other"
	}
	if err != nil {
		h.fail(r, metrics.DropMalformed, errors.New("no Acct-Status-Type"))
		return
	}
	ctx, cancel := withTimeout(r.Context(), h.StoreTimeout)
	defer cancel()
	nasKey := NASKey(r)
	switch uint32(status) {
	case statusStart, statusInterim, statusStop:
		u, err := h.decode(r, uint32(status), nasKey)
		if err != nil {
			h.fail(r, metrics.DropMalformed, err)
			return
		}
		// One way: the message (u) → the policy's actions → the store → the steps after it.
		var acts policy.Actions
		if sub := h.subscriber(ctx, u.Session.UserName); sub != nil {
			acts = h.Policy.Accounting(ctx, r.Packet, u, sub)
		}
		res, err := h.Store.Apply(ctx, u, session.WriteOptions{DisconnectReason: acts.Disconnect})
		if err != nil {
			h.fail(r, metrics.DropStoreError, err)
			return
		}
		// Once stored, a Start closes its line's stale sessions; an Interim only when it is the
		// first message of its own session (its Start was lost), which the store says: the
		// Interims of a stored session — most messages — cost no lookup.
		if h.SupersedeStale && (u.Kind == session.KindStart || u.Kind == session.KindInterim && res.Created) {
			h.supersede(ctx, u)
		}
		if h.Stored != nil {
			h.Stored(u, acts)
		}
	case statusOn, statusOff:
		cause := uint32(causeNASReboot)
		if status == statusOff {
			cause = causeNASRequest
		}
		n, err := h.Store.CloseNAS(ctx, nasKey, h.now(), cause)
		if err != nil {
			h.fail(r, metrics.DropStoreError, err)
			return
		}
		h.Log.Info("NAS sessions closed", "client", r.Client.Name, "nas", nasKey, "status", name, "sessions", n)
	default:
		// Other types (e.g. Failed, 15) are acknowledged and counted but not stored.
	}
	if h.Forward != nil {
		if err := h.Forward(r.Context(), r); err != nil {
			h.fail(r, metrics.DropProxyError, err)
			return
		}
	}
	result := "ok"
	if err := w.Write(r.Response(radius.CodeAccountingResponse)); err != nil {
		result = "error"
	}
	h.Metrics.shared.AccountingRequests.WithLabelValues(name).Inc()
	h.Metrics.acct.count(r, result)
}

// subscriber finds the profile for the policy. A source that may wait on a remote system
// (LDAP) is asked through its cache only: accounting never waits for LDAP.
func (h *Acct) subscriber(ctx context.Context, user string) *subscriber.Subscriber {
	if c, ok := h.Subscribers.(subscriber.CachedSource); ok {
		sub, _ := c.CachedLookup(user)
		return sub
	}
	sub, err := h.Subscribers.Lookup(ctx, user)
	if err != nil {
		return nil
	}
	return sub
}

func (h *Acct) fail(r *radiusd.Request, reason string, err error) {
	h.Metrics.shared.Dropped.WithLabelValues(reason).Inc()
	h.Metrics.acct.result("error").Inc()
	h.Log.Warn("accounting request not acknowledged", "client", r.Client.Name, "reason", reason, "err", err)
}

func (h *Acct) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// NASKey names the NAS in session keys: its NAS-Identifier when the client is told apart by
// it (several NAS behind one address), else NAS-IP-Address, else the source address.
//
// A NAS-IP-Address is taken as it is only when it is the client's own (nas.Client.Owns: a
// request from that address would be this client's). Any other (a NAS behind NAT or a proxy,
// or one naming another client's address) is qualified by the client's name,
// "<address>@<client>": a client's sessions, its Accounting-On/Off included, stay its own,
// and no NAS can close or overwrite another client's sessions by naming its address.
func NASKey(r *radiusd.Request) string {
	if r.Client.NASIdentifier != "" {
		return r.Client.NASIdentifier
	}
	if ip, err := rfc2865.NASIPAddress_Lookup(r.Packet); err == nil {
		a, _ := netip.AddrFromSlice(ip.To4())
		if r.Client.Owns(a) {
			return a.String()
		}
		return a.String() + "@" + r.Client.Name
	}
	return r.RemoteAddr.Addr().Unmap().String()
}

// decode extracts the session fields an accounting request carries.
func (h *Acct) decode(r *radiusd.Request, status uint32, nasKey string) (*session.Update, error) {
	p := r.Packet
	id := rfc2866.AcctSessionID_GetString(p)
	if id == "" {
		return nil, errors.New("no Acct-Session-Id")
	}
	u := &session.Update{}
	switch status {
	case statusStart:
		u.Kind = session.KindStart
	case statusInterim:
		u.Kind = session.KindInterim
	default:
		u.Kind = session.KindStop
	}
	s := &u.Session
	s.Key = session.Key{NAS: nasKey, ID: id}
	s.ClientName = r.Client.Name
	s.UserName = rfc2865.UserName_GetString(p)
	if ip, err := rfc2865.NASIPAddress_Lookup(p); err == nil {
		s.NASIPAddress, _ = netip.AddrFromSlice(ip.To4())
	}
	s.NASIdentifier = rfc2865.NASIdentifier_GetString(p)
	s.NASPort = u32(p, rfc2865.NASPort_Type)
	s.NASPortID = rfc2869.NASPortID_GetString(p)
	s.NASPortType = u32(p, rfc2865.NASPortType_Type)
	s.ServiceType = u32(p, rfc2865.ServiceType_Type)
	s.FramedProtocol = u32(p, rfc2865.FramedProtocol_Type)
	if ip, err := rfc2865.FramedIPAddress_Lookup(p); err == nil {
		s.FramedIP, _ = netip.AddrFromSlice(ip.To4())
	}
	decodeIPv6(p, s, h.Metrics.shared.InvalidAttributes)
	s.CallingStationID = rfc2865.CallingStationID_GetString(p)
	s.CalledStationID = rfc2865.CalledStationID_GetString(p)
	s.AcctMultiSessionID = rfc2866.AcctMultiSessionID_GetString(p)
	s.Class = rfc2865.Class_Get(p)
	s.SessionTime = u32(p, rfc2866.AcctSessionTime_Type)
	s.InputOctets = uint64(u32(p, rfc2869.AcctInputGigawords_Type))<<32 | uint64(u32(p, rfc2866.AcctInputOctets_Type))
	s.OutputOctets = uint64(u32(p, rfc2869.AcctOutputGigawords_Type))<<32 | uint64(u32(p, rfc2866.AcctOutputOctets_Type))
	s.InputPackets = uint64(u32(p, rfc2866.AcctInputPackets_Type))
	s.OutputPackets = uint64(u32(p, rfc2866.AcctOutputPackets_Type))
	s.TerminateCause = u32(p, rfc2866.AcctTerminateCause_Type)
	// When the event happened: Event-Timestamp if sent (RFC 2869 §5.3: the time of the event
	// on the NAS, already exact), else the arrival time less Acct-Delay-Time (RFC 2866 §5.2).
	var at time.Time
	if ts := u32(p, rfc2869.EventTimestamp_Type); ts != 0 {
		at = time.Unix(int64(ts), 0)
	} else {
		at = r.Received.Add(-acctDelay(p, h.Metrics.shared.AcctDelayClamped))
	}
	s.LastSeen = at
	if u.Kind == session.KindStart {
		s.StartTime = at
	}
	return u, nil
}

// maxAcctDelay bounds Acct-Delay-Time. A NAS that has tried for longer than a day is rare;
// a larger value is a bug or a forgery, and taken as it is it would date the event days or
// decades back (before its session's start, past every expiry).
const maxAcctDelay = 24 * time.Hour

// acctDelay is the Acct-Delay-Time (RFC 2866 §5.2), clamped to maxAcctDelay and counted
// when it was larger.
func acctDelay(p *radius.Packet, clamped prometheus.Counter) time.Duration {
	d := time.Duration(u32(p, rfc2866.AcctDelayTime_Type)) * time.Second
	if d > maxAcctDelay {
		clamped.Inc()
		return maxAcctDelay
	}
	return d
}

// u32 reads an integer attribute, 0 when absent or malformed.
func u32(p *radius.Packet, t radius.Type) uint32 {
	v, ok := p.Lookup(t)
	if !ok || len(v) != 4 {
		return 0
	}
	return binary.BigEndian.Uint32(v)
}
