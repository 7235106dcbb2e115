package gx

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"

	"github.com/openaaa/openaaa/services/policing/internal/diameter"
	"github.com/openaaa/openaaa/services/policing/internal/policy/luapolicy"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// NAS is the NAS part of a Gx session's key in the session store: Session-Id is globally
// unique (RFC 6733 §8.8), so any node in any DC finds the session by it alone, whichever
// PCEF peer or DC the CCR-U/T comes through.
const NAS = session.GxNAS

// Result-Codes of RFC 6733 / RFC 4006 used here.
const (
	resultCommandUnsupported = 3001
	resultUserUnknown        = 5030
)

// Handler serves Gx CCRs: decode → subscriber's data policy → Decide → store → CCA.
type Handler struct {
	Identity diameter.Identity
	// Node names this node among those that may share its Diameter identity (the pods of a
	// data center): a Gx session records it as the node holding the PCEF's connection, for
	// RARs (rar.go). Empty: Identity.Host.
	Node         string
	Subscribers  subscriber.Source
	Store        session.Store
	StoreTimeout time.Duration // 0: none
	// ReplicaWait is how long a CCR-U/T waits for a session the store does not show yet
	// before answering 5002 (get); 0 for a store no other node writes (embedded).
	ReplicaWait time.Duration
	Log         *slog.Logger
	Now         func() time.Time // nil: time.Now
	// Hooks are the Lua policy's gx_initial/gx_update (nil: the data policy alone decides).
	Hooks Hooks
	// Peers sends RARs (rar.go); set once the listener is up.
	Peers Peers
	// RARTimeout bounds a RAR from the session's read to its RAA, and a scheduled push's
	// store write after it (diameter.rarTimeout); 0 takes the configuration's default.
	RARTimeout time.Duration
	// sched holds the sessions watched for their policy's changes between CCRs: rule windows,
	// quotas (schedule.go).
	sched schedule
	// Throttled, when set, is called once a session of sub is switched to the throttle rule
	// (the quota used), after the store took the change and before the CCA leaves; it must
	// not block. The node sends the subscriber's RADIUS sessions a CoA-Request with the data
	// policy's throttleAttributes (app/diameter.go).
	Throttled func(sub *subscriber.Subscriber)
	// Metrics are the node's (NewMetrics); required.
	Metrics *Metrics
}

// Hooks is the Lua policy as the Gx handler uses it (luapolicy.Engine).
type Hooks interface {
	Gx(ctx context.Context, initial bool, u *session.Update, sub *subscriber.Subscriber) (luapolicy.GxDecision, bool)
}

// Result-Code of a CCR-I the Lua policy rejects (RFC 6733 §7.1.5).
const resultAuthorizationRejected = 5003

// withHook adds what the Lua hook decided to the data policy's decision.
func withHook(d Decision, l luapolicy.GxDecision) Decision {
	d.Install = append(slices.Clip(d.Install), l.Install...)
	d.Remove = append(slices.Clip(d.Remove), l.Remove...)
	return d
}

// ServeDiameter implements diameter.Handler: the CCA as a message (tests, other front ends;
// the server asks ServeWire and ServeLean). Every CCA, whatever its Result-Code, carries the
// CCR's identifiers (ccaHead).
func (h *Handler) ServeDiameter(r *diameter.Request) (*diam.Message, uint32) {
	m := r.Message
	if m.Header.CommandCode != 272 {
		return h.Identity.Answer(m, resultCommandUnsupported), resultCommandUnsupported
	}
	ccr := DecodeCCR(m)
	d, code, now, failed := h.serve(r, &ccr)
	if failed != nil {
		return failed, code
	}
	c := ccaWriter{msg: h.Identity.Answer(m, code)}
	c.cca(&ccr, d, code, now)
	return c.msg, code
}

// ServeLean implements diameter.LeanHandler: a CCR read from its bytes (its AVP tree is not
// built) when it is a plain one, with its mandatory AVPs and a CC-Request-Type of ours, its CCA
// written as bytes (no AVP objects); any other request is left to ServeDiameter, which answers
// its faults from the decoded message.
func (h *Handler) ServeLean(req *diameter.Request, avps diameter.AVPs) (diameter.Answer, uint32, bool) {
	m := req.Message
	if m.Header.CommandCode != 272 {
		return diameter.Answer{}, 0, false
	}
	known := [2]string{1: req.Peer.OriginHost}
	if sid := diameter.SessionIDAVP(m); sid != nil {
		known[0] = diameter.String(sid)
	}
	ccr := decodeLean(avps, known)
	if ccr.Missing != 0 || ccr.RequestType < Initial || ccr.RequestType > Termination {
		return diameter.Answer{}, 0, false
	}
	ans, code := h.serveWire(req, &ccr)
	return ans, code, true
}

// ServeWire implements diameter.WireHandler: ServeDiameter with the CCA written as bytes, for
// a request decoded whole (one that is not lean, or that ServeLean left).
func (h *Handler) ServeWire(req *diameter.Request) (diameter.Answer, uint32) {
	m := req.Message
	if m.Header.CommandCode != 272 {
		return diameter.Answer{Message: h.Identity.Answer(m, resultCommandUnsupported)}, resultCommandUnsupported
	}
	ccr := DecodeCCR(m)
	return h.serveWire(req, &ccr)
}

// serveWire answers the CCR r read from req, its CCA written as bytes (the answer to a CCR at
// fault is a message: serve's).
func (h *Handler) serveWire(req *diameter.Request, r *CCR) (diameter.Answer, uint32) {
	d, code, now, failed := h.serve(req, r)
	if failed != nil {
		return diameter.Answer{Message: failed}, code
	}
	c := ccaWriter{wire: true} // its Writer on this stack
	h.Identity.WriteAnswer(&c.w, req.Message, code)
	c.cca(r, d, code, now)
	return diameter.Answer{Wire: req.Wire(&c.w)}, code
}

// cca writes a CCA after the answer's head (diameter.Identity's Answer or WriteAnswer): the
// CCR's identifiers, then for a 2001 its Supported-Features (a CCR-I's) and the decision d
// taken at now.
func (c *ccaWriter) cca(r *CCR, d Decision, code uint32, now time.Time) {
	c.ccaHead(r)
	if code == diam.Success {
		if r.RequestType == Initial { // the session's first answer only (TS 29.212 §5.4.1)
			c.supportedFeatures(r)
		}
		c.decision(d, now)
	}
}

// serve decides the CCR r read from req's message (decoded whole, or its head only:
// ServeLean), within req's context: its deadline, the peer's connection, the node's shutdown.
// Its CCA is the answer of the Result-Code code with the decision d taken at now (cca), or,
// when the CCR is at fault, the whole answer failed (Failed-AVP).
func (h *Handler) serve(req *diameter.Request, r *CCR) (d Decision, code uint32, now time.Time, failed *diam.Message) {
	m, peer := req.Message, req.Peer
	if r.Missing != 0 {
		return d, diam.MissingAVP, now, h.answer(r, h.Identity.FailedAVP(m, diam.MissingAVP, r.Missing))
	}
	ctx := req.Context()
	if h.StoreTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.StoreTimeout)
		defer cancel()
	}
	now = eventTime(r, h.now())
	switch r.RequestType {
	case Initial:
		d, code = h.initial(ctx, peer, r, now)
	case Update, Termination:
		d, code = h.later(ctx, peer, r, now)
	default:
		return d, diam.InvalidAVPValue, now, h.answer(r, h.Identity.FailedAVPOf(m, diam.InvalidAVPValue, avp.CCRequestType, 0))
	}
	if code == diam.MissingAVP {
		return d, code, now, h.answer(r, h.Identity.FailedAVP(m, code, avp.SubscriptionID))
	}
	return d, code, now, nil
}

// answer completes an answer started by Identity (Session-Id, Result-Code, our identity, the
// request's Proxy-Info, its Failed-AVP): the CCR's identifiers follow.
func (h *Handler) answer(r *CCR, ans *diam.Message) *diam.Message {
	c := ccaWriter{msg: ans}
	c.ccaHead(r)
	return ans
}

// initial opens the session: the subscriber must exist; the session row records the PCEF
// (NASIdentifier) and the node holding its connection (ClientName: node()), for RAR routing.
func (h *Handler) initial(ctx context.Context, peer diameter.PeerInfo, r *CCR, now time.Time) (Decision, uint32) {
	if r.Subscriber() == "" {
		return Decision{}, diam.MissingAVP
	}
	sub, code := h.lookup(ctx, r.Subscriber())
	if code != diam.Success {
		return Decision{}, code
	}
	if lacking := unsupportedRequired(r); lacking != 0 { // served without them (features.go)
		h.Log.Debug("gx: the PCEF requires features of Feature-List-ID 1 we do not support", "sessionId", r.SessionID, "features", lacking)
	}
	p := sub.Profile.DataPolicy
	d := Decide(p, Initial, Used{Octets: sub.Profile.UsedOctets}, now, now)
	s := session.Session{Key: session.Key{NAS: NAS, ID: r.SessionID}, UserName: r.Subscriber(),
		ClientName: h.node(), NASIdentifier: peer.OriginHost, FramedIP: r.FramedIP, FramedIPv6Prefix: r.FramedIPv6Prefix,
		CalledStationID: r.APN, CallingStationID: r.MSISDN, StartTime: now, LastSeen: now, MonitoringExhausted: d.Exhausted,
		GxThrottled: d.Throttled}
	s.InterimInterval = idleSeconds(d)
	if h.Hooks != nil {
		if l, ok := h.Hooks.Gx(ctx, true, &session.Update{Kind: session.KindStart, Session: s}, sub); ok {
			if l.Reject {
				h.Log.Info("gx: session rejected by the Lua policy", "sessionId", r.SessionID, "user", s.UserName, "reason", l.Reason)
				return Decision{}, resultAuthorizationRejected
			}
			d = withHook(d, l)
		}
	}
	if err := h.apply(ctx, session.KindStart, &s); err != nil {
		h.Log.Warn("gx: session not stored", "sessionId", r.SessionID, "err", err.Error())
		return Decision{}, diameter.ResultTooBusy
	}
	if d.Throttled {
		p = nil // the throttle rule replaced the rules: no windows
	}
	h.track(r.SessionID, s.UserName, p, now, Used{Exhausted: d.Exhausted})
	return d, diam.Success
}

// later applies a CCR-U or CCR-T: usage reports add to the session's counters, rule
// reports are recorded, and the policy decides again on the new usage. The session then
// names this node as the one holding the PCEF's connection: the PCEF may have moved to it
// (failover), and a RAR must leave over a connection the PCEF still has.
func (h *Handler) later(ctx context.Context, peer diameter.PeerInfo, r *CCR, now time.Time) (Decision, uint32) {
	key := session.Key{NAS: NAS, ID: r.SessionID}
	var s session.Session
	err := h.get(ctx, key, &s)
	if errors.Is(err, session.ErrNotFound) {
		return Decision{}, diam.UnknownSessionID
	}
	if err == nil && s.State != session.Active {
		// Another DC closed it: this is the PCEF's CCR-T again, sent here after the answer
		// from there was lost or late (a node's duplicate cache is its own). Closed already.
		if r.RequestType == Termination {
			h.Metrics.retransmittedTerminations.Inc()
			return Decision{}, diam.Success
		}
		return Decision{}, diam.UnknownSessionID
	}
	if err != nil {
		h.Log.Warn("gx: session not read", "sessionId", r.SessionID, "err", err.Error())
		return Decision{}, diameter.ResultTooBusy
	}
	repeated := r.RequestType == Update && applied(&s, r)
	if repeated {
		// Answered on the session as it is, the usage not added again: the first answer's
		// decision, less rule windows that opened or closed in between (their RAR, or the first
		// CCA, carried those).
		h.Metrics.repeatedUpdates.Inc()
		r.Usage, r.RuleReports = nil, nil
	}
	sub, code := h.lookup(ctx, s.UserName)
	var p *subscriber.DataPolicy
	if code == diam.Success {
		p = sub.Profile.DataPolicy
	}
	in, out := s.InputOctets, s.OutputOctets
	keys := s.MonitoringUsage // never written into: replaced when a report adds to it
	for _, u := range r.Usage {
		h.Metrics.usageReported.Add(float64(u.Octets()))
		if ruleLevel(p, u.MonitoringKey) { // counted apart from the session's totals
			keys = maps.Clone(keys)
			if keys == nil {
				keys = map[string]uint64{}
			}
			keys[u.MonitoringKey] += u.Octets()
			continue
		}
		if u.Input+u.Output == 0 {
			out += u.Total // a total without the split counts as downlink
			continue
		}
		in, out = in+u.Input, out+u.Output
	}
	var failed []string
	for _, rep := range r.RuleReports {
		if rep.Status == 0 {
			continue
		}
		failed = append(failed, rep.Rules...)
		h.Metrics.ruleFailures.WithLabelValues(strconv.FormatUint(uint64(rep.FailureCode), 10)).Inc()
		h.Log.Warn("gx: PCEF reports rules not enforced; their fallbacks, if any, go in the answer", "sessionId", r.SessionID, "user", s.UserName,
			"rules", rep.Rules, "status", rep.Status, "failureCode", rep.FailureCode)
	}
	var d Decision
	throttled := s.GxThrottled
	used := Used{Octets: in + out, Throttled: throttled, Keys: keys, Exhausted: s.MonitoringExhausted, Failed: failed}
	if code == diam.Success {
		used.Octets += sub.Profile.UsedOctets
		d = Decide(p, r.RequestType, used, s.LastSeen, now)
	}
	kind := session.KindInterim
	if r.RequestType == Termination {
		kind = session.KindStop
	}
	elapsed := uint32(max(now.Sub(s.StartTime), 0) / time.Second)
	upd := session.Session{Key: key, InputOctets: in, OutputOctets: out, LastSeen: now,
		SessionTime: max(elapsed, s.SessionTime), ClientName: h.node(), NASIdentifier: peer.OriginHost,
		MonitoringUsage: keys, MonitoringExhausted: d.Exhausted}
	if d.Throttled && !throttled { // the session's state, set once: its next CCA changes nothing
		upd.GxThrottled = true
		h.Metrics.throttles.Inc()
	}
	if h.Hooks != nil && sub != nil {
		if kind != session.KindStop {
			view := s // the session as it will be stored, for the hook's inputs
			view.InputOctets, view.OutputOctets, view.SessionTime, view.LastSeen = in, out, upd.SessionTime, now
			if l, ok := h.Hooks.Gx(ctx, false, &session.Update{Kind: kind, Session: view}, sub); ok {
				d = withHook(d, l)
			}
		}
	}
	if repeated {
		return d, diam.Success
	}
	if err := h.apply(ctx, kind, &upd); err != nil {
		h.Log.Warn("gx: session not stored", "sessionId", r.SessionID, "err", err.Error())
		return Decision{}, diameter.ResultTooBusy
	}
	if upd.GxThrottled && h.Throttled != nil {
		h.Throttled(sub)
	}
	if kind == session.KindStop || sub == nil || d.Throttled {
		h.untrack(r.SessionID)
	} else {
		h.track(r.SessionID, s.UserName, p, now, Used{Octets: in + out, Keys: keys, Exhausted: slices.Concat(s.MonitoringExhausted, d.Exhausted)})
	}
	return d, diam.Success
}

// gxWrite is how a CCR's session is written: never to the spool (session.WriteOptions.NoSpool).
var gxWrite = session.WriteOptions{NoSpool: true}

// updates holds the Updates of CCRs' writes: given to the store through its interface, an
// Update (the size of a whole Session) would be allocated per request; no store keeps it once
// Apply returns (session.Store).
var updates = sync.Pool{New: func() any { return new(session.Update) }}

// apply writes the session fields upd of a CCR, of kind, to the store.
func (h *Handler) apply(ctx context.Context, kind session.Kind, upd *session.Session) error {
	u := updates.Get().(*session.Update)
	u.Kind, u.Session = kind, *upd
	_, err := h.Store.Apply(ctx, u, gxWrite)
	*u = session.Update{} // holds on to nothing of this request's
	updates.Put(u)
	return err
}

// ruleLevel reports whether key is one of the data policy's rule-level Monitoring-Keys, whose
// usage is counted apart; any other report (the session-level key, none) adds to the session's
// totals.
func ruleLevel(p *subscriber.DataPolicy, key string) bool {
	if p == nil || key == "" {
		return false
	}
	return slices.ContainsFunc(p.Monitoring, func(m subscriber.MonitoredKey) bool { return m.Key == key })
}

// applied reports whether the session holds the CCR already: the PCEF sent it again, to this
// node or another DC, after the first answer was lost or late (a node's duplicate cache is its
// own). CC-Request-Number is 0 for the CCR-I and rises by one per request (RFC 4006 §8.2), and
// every applied CCR merges one update into the session (session.Merge counts them, the CCR-I
// first), so a number below the count was applied. A write the store skipped (nothing changed)
// leaves the count behind, which only ever lets a request through, never holds one back. A
// CCR-U numbered 0 (the CCR-I's number: a PCEF that does not count) is always applied: its
// usage must not be lost to a guess.
func applied(s *session.Session, r *CCR) bool {
	return r.RequestNumber > 0 && r.RequestNumber < s.Updates
}

// eventTime is when the session's event happened: the CCR's Event-Timestamp when the PCEF
// sent one within the last hour (and not ahead of this clock by more than a second), else
// now. The store orders a session's writes by it, so a CCR-U that a PCEF sent again to another
// DC after a timeout, and that the first DC applies late, is older than the CCR-T that
// followed it and cannot reopen the session.
func eventTime(r *CCR, now time.Time) time.Time {
	t := r.EventTime
	if t.IsZero() || t.After(now.Add(time.Second)) || now.Sub(t) > time.Hour {
		return now
	}
	return t
}

// defaultIdleSeconds is how long a Gx session may be silent, twice over, before the store
// expires it (session.expiry: multiplier × the session's interval + grace) when the policy
// asks for no Revalidation-Time: a PCEF reports usage on thresholds and events, and a bearer
// can stay quiet for hours; RADIUS's interim interval would close it under its feet.
const defaultIdleSeconds = 24 * 60 * 60

// idleSeconds is the session's expected reporting interval, which its expiry is computed
// from: the Revalidation-Time (the PCEF must come back by then), else defaultIdleSeconds.
func idleSeconds(d Decision) uint32 {
	if d.Revalidate > 0 {
		return d.Revalidate
	}
	return defaultIdleSeconds
}

func (h *Handler) node() string {
	if h.Node != "" {
		return h.Node
	}
	return h.Identity.Host
}

// get reads a Gx session. A shared store may not show in this DC what another DC wrote (a
// DC's replicas receive the other DCs' writes asynchronously, and a DC back from an outage
// lacks what was written meanwhile) while the PCEF's request reached this DC: a session not
// found is read again from every DC's replicas (session.WideGetter) and, with backoff, for
// up to ReplicaWait before the CCR is answered 5002. A store that can return the session as a
// value (session.ValueGetter: the embedded store, no other node writes to it) spares Get's
// copy the allocation. It reads into s, which spares a copy of the session.
func (h *Handler) get(ctx context.Context, key session.Key, s *session.Session) (err error) {
	if v, ok := h.Store.(session.ValueGetter); ok && h.ReplicaWait <= 0 {
		*s, err = v.GetValue(ctx, key)
	} else {
		*s, err = h.getShared(ctx, key)
	}
	return err
}

// getShared is get's for a shared store.
func (h *Handler) getShared(ctx context.Context, key session.Key) (session.Session, error) {
	s, err := deref(h.Store.Get(ctx, key))
	if !errors.Is(err, session.ErrNotFound) || h.ReplicaWait <= 0 {
		return s, err
	}
	read := h.Store.Get
	if w, ok := h.Store.(session.WideGetter); ok {
		read = w.GetWide
	}
	deadline := time.Now().Add(h.ReplicaWait)
	for wait := time.Duration(0); time.Now().Before(deadline); wait = min(max(2*wait, 10*time.Millisecond), 200*time.Millisecond) {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				// Cancelled (shutdown, the peer gone), not timed out: the session may well
				// exist, and 5002 would end the PCEF's bearer.
				return session.Session{}, ctx.Err()
			}
			h.Metrics.replicaWaits.WithLabelValues("not_found").Inc()
			return session.Session{}, session.ErrNotFound
		case <-time.After(wait):
		}
		if x, err := read(ctx, key); !errors.Is(err, session.ErrNotFound) {
			h.Metrics.replicaWaits.WithLabelValues("found").Inc()
			return deref(x, err)
		}
	}
	h.Metrics.replicaWaits.WithLabelValues("not_found").Inc()
	return session.Session{}, session.ErrNotFound
}

func deref(s *session.Session, err error) (session.Session, error) {
	if err != nil {
		return session.Session{}, err
	}
	return *s, nil
}

func (h *Handler) lookup(ctx context.Context, user string) (*subscriber.Subscriber, uint32) {
	sub, err := h.Subscribers.Lookup(ctx, user)
	switch {
	case errors.Is(err, subscriber.ErrNotFound):
		return nil, resultUserUnknown
	case err != nil:
		h.Log.Warn("gx: subscriber source unavailable", "user", user, "err", err.Error())
		return nil, diameter.ResultTooBusy
	case sub.Disabled:
		return nil, resultUserUnknown
	}
	return sub, diam.Success
}
