// Package session defines the subscriber session record and the Store interface that the
// embedded, Cassandra and hybrid stores implement. Handlers only ever talk to Store.
package session

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"slices"
	"time"
)

// GxNAS is the NAS part of every Gx session's key (internal/gx): the Diameter Session-Id is
// globally unique on its own. The stores keep no by-NAS lookup for it: it would hold every Gx
// session under one key — in Cassandra one ever-growing partition that every CCR writes — and
// nothing closes Gx sessions by NAS (no Accounting-On/Off in Diameter).
const GxNAS = "gx"

// Key identifies a session uniquely: the NAS (its NAS-Identifier when the client is
// configured to be told apart by it, else its NAS-IP-Address / source address) and the
// Acct-Session-Id the NAS assigned.
type Key struct {
	NAS string `json:"nas"`
	ID  string `json:"acctSessionId"`
}

// State of a session.
type State string

const (
	Active  State = "active"
	Stopped State = "stopped"
)

// Session is the full row of the sessions table (about 25 columns, as in the field).
// Counters are absolute values reported by the NAS; octets already include Gigawords.
type Session struct {
	Key
	UserName           string     `json:"userName"`
	State              State      `json:"state"`
	ClientName         string     `json:"client"`
	NASIPAddress       netip.Addr `json:"nasIpAddress,omitzero"`
	NASIdentifier      string     `json:"nasIdentifier,omitempty"`
	NASPort            uint32     `json:"nasPort,omitempty"`
	NASPortID          string     `json:"nasPortId,omitempty"`
	NASPortType        uint32     `json:"nasPortType,omitempty"`
	ServiceType        uint32     `json:"serviceType,omitempty"`
	FramedProtocol     uint32     `json:"framedProtocol,omitempty"`
	FramedIP           netip.Addr `json:"framedIpAddress,omitzero"`
	CallingStationID   string     `json:"callingStationId,omitempty"`
	CalledStationID    string     `json:"calledStationId,omitempty"`
	AcctMultiSessionID string     `json:"acctMultiSessionId,omitempty"`
	Class              []byte     `json:"class,omitempty"`
	StartTime          time.Time  `json:"startTime"`
	LastSeen           time.Time  `json:"lastSeen"`
	StopTime           time.Time  `json:"stopTime,omitzero"`
	SessionTime        uint32     `json:"sessionTime"`
	InputOctets        uint64     `json:"inputOctets"`
	OutputOctets       uint64     `json:"outputOctets"`
	InputPackets       uint64     `json:"inputPackets"`
	OutputPackets      uint64     `json:"outputPackets"`
	TerminateCause     uint32     `json:"terminateCause,omitempty"`
	InterimInterval    uint32     `json:"interimInterval,omitempty"`
	Updates            uint32     `json:"updates"`
	// MonitoringUsage is a Gx session's octets per PCC-rule-level Monitoring-Key (the
	// data policy's monitoring keys), absolute like the counters; the session-level key's are
	// InputOctets/OutputOctets. Never written into: Merge replaces it, so copies may share it.
	MonitoringUsage map[string]uint64 `json:"monitoringUsage,omitempty"`
	// MonitoringExhausted are the rule-level keys whose quota was used and whose rules the
	// policy swapped: done once. Never written into, like MonitoringUsage.
	MonitoringExhausted []string `json:"monitoringExhausted,omitempty"`
	// DisconnectReason is why the policy had the session disconnected (e.g. "quota"): recorded
	// with the write (WriteOptions.DisconnectReason), never cleared. RADIUS only.
	DisconnectReason string `json:"disconnectReason,omitempty"`
	// GxThrottled: a Gx session whose data policy's quota is used, on the throttle rule in
	// place of its rules (internal/gx). Set once, never cleared. Before it, the RADIUS field
	// DisconnectReason marked it (ReadLegacy).
	GxThrottled bool `json:"gxThrottled,omitempty"`

	// The IPv6 side of a dual-stack session (RFC 3162, 4818, 6911): the prefix delegated by
	// DHCPv6-PD (the subscriber's main IPv6 identifier on a fixed BNG), the prefix and the
	// address of the access link, the interface id. Lookups by IPv6 (ipv6.go) cover all three.
	FramedIPv6Prefix    netip.Prefix `json:"framedIpv6Prefix,omitzero"`
	DelegatedIPv6Prefix netip.Prefix `json:"delegatedIpv6Prefix,omitzero"`
	FramedIPv6Address   netip.Addr   `json:"framedIpv6Address,omitzero"`
	FramedInterfaceID   string       `json:"framedInterfaceId,omitempty"` // as FreeRADIUS prints it: 0011:22ff:fe33:4455
	NASIPv6Address      netip.Addr   `json:"nasIpv6Address,omitzero"`
}

// Update is one message applied to a session: what the message said, nothing more. The
// store merges it into the row (creating the row when the Start was lost: out-of-order
// messages never fail) and never writes into it; what the write did comes back as a Result.
type Update struct {
	Kind    Kind
	Session Session // fields as carried by the message; zero values mean "not carried"
}

// WriteOptions say how a store takes an update: where its write may go, how it counts, and
// what the node decided beside the message.
type WriteOptions struct {
	// NoSpool asks for the update to be in the shared store when Apply returns, or an error:
	// never the local spool; on Cassandra a Start so is on replicas of two data centers
	// (QUORUM). A Gx CCR sets it: the PCEF's next request may reach another DC, which must
	// find the session there even if this DC is lost; a PCEF that gets an error (3004) fails
	// over instead.
	NoSpool bool
	// Push marks a change the policy server pushed to the session (a Gx RAR), not a message
	// of its client: merged like one, but not counted in Session.Updates, which counts the
	// client's requests (a Gx CCR's CC-Request-Number is checked against it).
	Push bool
	// DisconnectReason is the policy's Disconnect of the session (policy.Actions), recorded
	// in the row (Session.DisconnectReason) when set; the Disconnect-Request itself is the
	// step after the store's.
	DisconnectReason string
}

// Result is what a store's write did.
type Result struct {
	// Created: the update created its session (a Start, or an Interim whose Start was lost);
	// false when it merged into a stored one, went to the history only (a late message of a
	// stopped session), or was queued rather than applied (a spool: not known yet).
	Created bool
}

// Kind of accounting update.
type Kind uint8

const (
	KindStart Kind = iota + 1
	KindInterim
	KindStop
)

func (k Kind) String() string {
	switch k {
	case KindStart:
		return "start"
	case KindInterim:
		return "interim"
	case KindStop:
		return "stop"
	}
	return "unknown"
}

// ErrNotFound is returned by lookups of a single session that does not exist.
var ErrNotFound = errors.New("session not found")

// Store keeps sessions. Every write returns only after the store has durably accepted it
// (the Accounting-Response depends on that). Implementations must be safe for concurrent use.
type Store interface {
	// Apply merges an accounting update into the session it names, as o says, and returns
	// what it did; u is only read, and is the caller's to reuse once Apply returns (gx does).
	// Start and Interim leave the session active (creating it if needed); Stop closes it: it
	// leaves the active set and the lookups (framed IP and IPv6 prefixes freed) and goes to
	// the history.
	Apply(ctx context.Context, u *Update, o WriteOptions) (Result, error)
	// CloseNAS closes every active session of a NAS (Accounting-On/Off) and returns how many.
	CloseNAS(ctx context.Context, nas string, at time.Time, cause uint32) (int, error)
	// Get returns an active session by key, or ErrNotFound.
	Get(ctx context.Context, k Key) (*Session, error)
	// ByUser returns the active sessions of a user.
	ByUser(ctx context.Context, user string) ([]*Session, error)
	// ByFramedIP returns the active session holding a framed IP, or ErrNotFound.
	ByFramedIP(ctx context.Context, ip netip.Addr) (*Session, error)
	// ByIPv6 returns the active session whose IPv6 claim (Delegated-IPv6-Prefix,
	// Framed-IPv6-Prefix, Framed-IPv6-Address as a /128) is the longest covering q: an
	// address is q with all 128 bits. When several sessions hold that claim (the NAS gave it
	// out again before the old Stop arrived), the one seen last. ErrNotFound if none covers q.
	ByIPv6(ctx context.Context, q netip.Prefix) (*Session, error)
	// ByCallingStation returns the active sessions whose Calling-Station-Id is id: a mobile
	// subscriber's MSISDN (RADIUS from a GGSN/PGW, TS 29.061; a Gx session's MSISDN), a
	// Wi-Fi client's MAC address.
	ByCallingStation(ctx context.Context, id string) ([]*Session, error)
	// ByNAS returns the active sessions of a NAS (none for GxNAS: see there).
	ByNAS(ctx context.Context, nas string) ([]*Session, error)
	// History returns the most recent closed sessions of a user, newest first (limit <= 0: all kept).
	History(ctx context.Context, user string, limit int) ([]*Session, error)
	// Ready reports whether the store can take writes now (for /readyz).
	Ready(ctx context.Context) error
	// Close flushes and releases the store.
	Close(ctx context.Context) error
}

// mergeUsage is a new map of the larger count per key (counts are absolute: an old
// retransmission never rolls one back).
func mergeUsage(old, in map[string]uint64) map[string]uint64 {
	out := maps.Clone(old)
	if out == nil {
		out = make(map[string]uint64, len(in))
	}
	for k, v := range in {
		out[k] = max(out[k], v)
	}
	return out
}

// union is a new sorted slice of the elements of a and b.
func union(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// Merge applies the non-zero fields of u onto s, the kind's state change, and what o adds. It
// is the one definition of merge semantics, shared by every store implementation.
func Merge(s *Session, u *Update, o WriteOptions, now time.Time) {
	in := &u.Session
	if s.NAS == "" {
		s.Key = in.Key
	}
	setStr(&s.UserName, in.UserName)
	setStr(&s.ClientName, in.ClientName)
	if in.NASIPAddress.IsValid() {
		s.NASIPAddress = in.NASIPAddress
	}
	setStr(&s.NASIdentifier, in.NASIdentifier)
	setU32(&s.NASPort, in.NASPort)
	setStr(&s.NASPortID, in.NASPortID)
	setU32(&s.NASPortType, in.NASPortType)
	setU32(&s.ServiceType, in.ServiceType)
	setU32(&s.FramedProtocol, in.FramedProtocol)
	if in.FramedIP.IsValid() {
		s.FramedIP = in.FramedIP
	}
	if in.FramedIPv6Prefix.IsValid() {
		s.FramedIPv6Prefix = in.FramedIPv6Prefix
	}
	if in.DelegatedIPv6Prefix.IsValid() {
		s.DelegatedIPv6Prefix = in.DelegatedIPv6Prefix
	}
	if in.FramedIPv6Address.IsValid() {
		s.FramedIPv6Address = in.FramedIPv6Address
	}
	setStr(&s.FramedInterfaceID, in.FramedInterfaceID)
	if in.NASIPv6Address.IsValid() {
		s.NASIPv6Address = in.NASIPv6Address
	}
	setStr(&s.CallingStationID, in.CallingStationID)
	setStr(&s.CalledStationID, in.CalledStationID)
	setStr(&s.AcctMultiSessionID, in.AcctMultiSessionID)
	if len(in.Class) > 0 {
		s.Class = append(s.Class[:0], in.Class...)
	}
	// Counters are absolute; a NAS never reports lower values for the same session except
	// when the message is an old retransmission, which must not roll the row back.
	if in.SessionTime >= s.SessionTime {
		s.SessionTime = in.SessionTime
		s.InputOctets = max(s.InputOctets, in.InputOctets)
		s.OutputOctets = max(s.OutputOctets, in.OutputOctets)
		s.InputPackets = max(s.InputPackets, in.InputPackets)
		s.OutputPackets = max(s.OutputPackets, in.OutputPackets)
	}
	if len(in.MonitoringUsage) > 0 {
		s.MonitoringUsage = mergeUsage(s.MonitoringUsage, in.MonitoringUsage)
	}
	if len(in.MonitoringExhausted) > 0 {
		s.MonitoringExhausted = union(s.MonitoringExhausted, in.MonitoringExhausted)
	}
	setU32(&s.InterimInterval, in.InterimInterval)
	if in.GxThrottled {
		s.GxThrottled = true
	}
	setStr(&s.DisconnectReason, o.DisconnectReason) // the policy's, not the message's
	at := u.At(now)
	if s.StartTime.IsZero() {
		// Without a Start the best estimate is now minus the reported session time.
		s.StartTime = at.Add(-time.Duration(s.SessionTime) * time.Second)
	}
	if u.Kind == KindStart && !in.StartTime.IsZero() {
		s.StartTime = in.StartTime
	}
	if at.After(s.LastSeen) { // an old retransmission must not move it back (expiry uses it)
		s.LastSeen = at
	}
	if !o.Push {
		s.Updates++
	}
	switch u.Kind {
	case KindStop:
		s.State = Stopped
		s.StopTime = at
		setU32(&s.TerminateCause, in.TerminateCause)
	default:
		s.State = Active
	}
}

// legacyGxThrottled is how a Gx session on the throttle rule was marked before GxThrottled:
// DisconnectReason "quota" (policy.QuotaReason), a RADIUS field.
const legacyGxThrottled = "quota"

// ReadLegacy brings a session that an older version kept to today's fields; the stores call it
// on every session they read back from where it outlives the process (Cassandra's rows, the
// embedded store's snapshot). A Gx session marked throttled the old way is GxThrottled; its
// next write stores the mark in its own field.
func ReadLegacy(s *Session) {
	if s.NAS == GxNAS && s.DisconnectReason == legacyGxThrottled {
		s.GxThrottled, s.DisconnectReason = true, ""
	}
}

// At is when the update's event happened: the time the message carries (Event-Timestamp, or
// arrival less Acct-Delay-Time), else now.
func (u *Update) At(now time.Time) time.Time {
	if u.Session.LastSeen.IsZero() {
		return now
	}
	return u.Session.LastSeen
}

// Reopens reports whether u, arriving for a session stopped at stopTime (the Stop's event
// time, Session.StopTime), opens a new session
// under the same key; every store applies this one rule. Only a Start whose event is later
// than the Stop does: the NAS reused its Acct-Session-Id. Anything else belongs to the
// stopped session and must not revive it — an Interim or Stop that arrives late, or a Start
// no later than the Stop (replayed from a spool, or retransmitted): it is acknowledged and
// goes to the history only. Decided by event time, never by arrival order, so a record
// replayed in one DC after the Stop was written in another gives the same answer.
func Reopens(stopTime time.Time, u *Update, now time.Time) bool {
	return u.Kind == KindStart && u.At(now).After(stopTime)
}

func setStr(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

func setU32(dst *uint32, v uint32) {
	if v != 0 {
		*dst = v
	}
}

// AuthRecord is one Access-Request's outcome, for the auth log.
type AuthRecord struct {
	UserName         string
	NAS              string // the NAS key (as in session keys)
	CallingStationID string
	Result           string // accept, reject
	Reason           string // why a reject (empty for an accept)
	At               time.Time
}

// ValueGetter is implemented by the stores that can return an active session as a value,
// without the allocation Get's copy costs (the embedded store): a Gx CCR-U reads its session
// on every request. Like Get's copy, the value is the caller's; it shares MonitoringUsage and
// MonitoringExhausted with the store, which never writes into them.
type ValueGetter interface {
	GetValue(ctx context.Context, k Key) (Session, error)
}

// FramedIPMatcher is implemented by stores that can pick, among the active sessions holding a
// framed IP, those a predicate selects, without copying them (the embedded store). Closing
// stale sessions asks on every Start (and on an Interim that created its session); through
// ByUser each ask copies the user's sessions. match runs under the store's lock on the live session and must only read it.
// At most max keys are returned.
type FramedIPMatcher interface {
	MatchFramedIP(ip netip.Addr, max int, match func(*Session) bool) []Key
}

// AuthLogger is implemented by the stores that keep an auth log (Cassandra, hybrid). It is
// optional: the auth handler writes to it asynchronously when the store has it.
type AuthLogger interface {
	LogAuth(ctx context.Context, r AuthRecord) error
}
