package cassandra

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// sessionCols are the columns of a session row after the key (nas, acct_session_id),
// shared by sessions, acct_history and sessions_closed_by_user.
var sessionCols = []string{
	"user_name", "state", "client_name", "nas_ip_address", "nas_identifier", "nas_port",
	"nas_port_id", "nas_port_type", "service_type", "framed_protocol", "framed_ip",
	"framed_ipv6_prefix", "calling_station_id", "called_station_id", "acct_multi_session_id",
	"class", "start_time", "last_seen", "stop_time", "session_time", "input_octets",
	"output_octets", "input_packets", "output_packets", "terminate_cause", "interim_interval",
	"updates", "disconnect_reason",
	"delegated_ipv6_prefix", "framed_ipv6_address", "framed_interface_id", "nas_ipv6_address",
	"monitoring", "gx_throttled",
}

func colList(extra ...string) string {
	return strings.Join(append(extra, sessionCols...), ", ")
}

func marks(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func ipOrNil(a netip.Addr) any {
	if !a.IsValid() {
		return nil
	}
	return net.IP(a.AsSlice())
}

func ipFrom(ip net.IP) netip.Addr {
	if ip == nil {
		return netip.Addr{}
	}
	if v4 := ip.To4(); v4 != nil {
		a, _ := netip.AddrFromSlice(v4)
		return a
	}
	a, _ := netip.AddrFromSlice(ip)
	return a
}

// Zero values are bound as "unset": the column is left as it is (no null written, no
// tombstone). Merge never clears a field, so this writes the same row as a full write —
// and when another DC wrote the row a moment ago and this DC's read did not see it yet,
// Cassandra's per-cell merge keeps what that write set.
var unset any = gocql.UnsetValue

func uStr(v string) any {
	if v == "" {
		return unset
	}
	return v
}

func uInt[T uint32 | uint64](v T) any {
	if v == 0 {
		return unset
	}
	return int64(v)
}

func uIP(a netip.Addr) any {
	if !a.IsValid() {
		return unset
	}
	return net.IP(a.AsSlice())
}

// uPrefix binds a prefix as text ("2001:db8:1::/48"): FreeRADIUS's and the admin API's
// form, readable in cqlsh.
func uPrefix(p netip.Prefix) any {
	if !p.IsValid() {
		return unset
	}
	return p.String()
}

func prefixFrom(s string) netip.Prefix {
	p, _ := netip.ParsePrefix(s) // a value we wrote; anything else reads as none
	return p
}

func uTime(t time.Time) any {
	if t.IsZero() {
		return unset
	}
	return t
}

func uBool(v bool) any {
	if !v {
		return unset
	}
	return true
}

func uBytes(b []byte) any {
	if len(b) == 0 {
		return unset
	}
	return b
}

// values returns the bind values of sessionCols for s.
func values(s *session.Session) []any {
	return []any{
		uStr(s.UserName), uStr(string(s.State)), uStr(s.ClientName), uIP(s.NASIPAddress), uStr(s.NASIdentifier),
		uInt(s.NASPort), uStr(s.NASPortID), uInt(s.NASPortType), uInt(s.ServiceType),
		uInt(s.FramedProtocol), uIP(s.FramedIP), uPrefix(s.FramedIPv6Prefix), uStr(s.CallingStationID),
		uStr(s.CalledStationID), uStr(s.AcctMultiSessionID), uBytes(s.Class), uTime(s.StartTime),
		uTime(s.LastSeen), uTime(s.StopTime), uInt(s.SessionTime),
		uInt(s.InputOctets), uInt(s.OutputOctets), uInt(s.InputPackets),
		uInt(s.OutputPackets), uInt(s.TerminateCause), uInt(s.InterimInterval),
		uInt(s.Updates), uStr(s.DisconnectReason),
		uPrefix(s.DelegatedIPv6Prefix), uIP(s.FramedIPv6Address), uStr(s.FramedInterfaceID), uIP(s.NASIPv6Address),
		uMonitoring(s), uBool(s.GxThrottled),
	}
}

// monitoring is a Gx session's state per rule-level Monitoring-Key, as one text cell (JSON):
// one cell, last write wins like the counters, where a map column would write a tombstone
// with every full write.
type monitoring struct {
	Usage     map[string]uint64 `json:"usage,omitempty"`
	Exhausted []string          `json:"exhausted,omitempty"`
}

func uMonitoring(s *session.Session) any {
	if len(s.MonitoringUsage) == 0 && len(s.MonitoringExhausted) == 0 {
		return unset
	}
	b, _ := json.Marshal(monitoring{s.MonitoringUsage, s.MonitoringExhausted}) // always encodes
	return string(b)
}

func monitoringFrom(text string, s *session.Session) {
	var m monitoring
	if text == "" || json.Unmarshal([]byte(text), &m) != nil {
		return // written by us: a bad cell cannot happen but by hand
	}
	s.MonitoringUsage, s.MonitoringExhausted = m.Usage, m.Exhausted
}

// row receives a scanned session row.
type row struct {
	s                                                       session.Session
	state                                                   string
	nasIP, framedIP, framedIPv6, nasIPv6                    net.IP
	framedIPv6Prefix, delegatedIPv6Prefix, monitoring       string
	nasPort, nasPortType, serviceType, framedProto, sessTim int64
	inOct, outOct, inPkt, outPkt, cause, interim, updates   int64
}

// dest returns the scan destinations of sessionCols.
func (r *row) dest() []any {
	s := &r.s
	return []any{
		&s.UserName, &r.state, &s.ClientName, &r.nasIP, &s.NASIdentifier, &r.nasPort,
		&s.NASPortID, &r.nasPortType, &r.serviceType, &r.framedProto, &r.framedIP,
		&r.framedIPv6Prefix, &s.CallingStationID, &s.CalledStationID, &s.AcctMultiSessionID,
		&s.Class, &s.StartTime, &s.LastSeen, &s.StopTime, &r.sessTim, &r.inOct, &r.outOct,
		&r.inPkt, &r.outPkt, &r.cause, &r.interim, &r.updates, &s.DisconnectReason,
		&r.delegatedIPv6Prefix, &r.framedIPv6, &s.FramedInterfaceID, &r.nasIPv6,
		&r.monitoring, &s.GxThrottled,
	}
}

// session is the row's session, of key k.
func (r *row) session(k session.Key) *session.Session {
	s := r.s
	s.Key = k
	s.State = session.State(r.state)
	s.NASIPAddress = ipFrom(r.nasIP)
	s.FramedIP = ipFrom(r.framedIP)
	s.FramedIPv6Prefix = prefixFrom(r.framedIPv6Prefix)
	s.DelegatedIPv6Prefix = prefixFrom(r.delegatedIPv6Prefix)
	s.FramedIPv6Address = ipFrom(r.framedIPv6)
	s.NASIPv6Address = ipFrom(r.nasIPv6)
	s.NASPort = uint32(r.nasPort)
	s.NASPortType = uint32(r.nasPortType)
	s.ServiceType = uint32(r.serviceType)
	s.FramedProtocol = uint32(r.framedProto)
	s.SessionTime = uint32(r.sessTim)
	s.InputOctets = uint64(r.inOct)
	s.OutputOctets = uint64(r.outOct)
	s.InputPackets = uint64(r.inPkt)
	s.OutputPackets = uint64(r.outPkt)
	s.TerminateCause = uint32(r.cause)
	s.InterimInterval = uint32(r.interim)
	s.Updates = uint32(r.updates)
	monitoringFrom(r.monitoring, &s)
	s.StartTime = utc(s.StartTime)
	s.LastSeen = utc(s.LastSeen)
	s.StopTime = utc(s.StopTime)
	if len(s.Class) == 0 {
		s.Class = nil
	}
	session.ReadLegacy(&s) // a Gx row written before gx_throttled (migration 0012)
	return &s
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

// historyID is a record's id in acct_history, made of its content: every copy of a record (a
// NAS's retransmission to any DC, a replay of a spooled write that landed though it timed
// out) names the same history row, so writing it again stores nothing twice and fills in a
// copy whose first write was lost. Its time is the event's; Event-Timestamp has whole
// seconds, so within one a session's records sort Start, Interims by session time, Stop.
func historyID(k session.Kind, s *session.Session) gocql.UUID {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d\x00%d\x00%d\x00%d\x00%d\x00%d\x00%d", s.Key.NAS, s.Key.ID, k,
		s.LastSeen.UnixNano(), s.SessionTime, s.InputOctets, s.OutputOctets, s.InputPackets,
		s.OutputPackets, s.TerminateCause)
	sum := h.Sum64()
	at := s.LastSeen
	if at.Nanosecond() == 0 {
		const tick = 100 * time.Nanosecond // a UUID's time unit
		at = at.Add(time.Duration(k-1)*300*time.Millisecond + time.Duration(min(s.SessionTime, 2_999_999))*tick)
	}
	const uuidEpoch = 0x01B21DD213814000 // 1582-10-15 to 1970-01-01 in 100 ns
	var node [8]byte
	binary.BigEndian.PutUint64(node[:], sum)
	return gocql.TimeUUIDWith(at.UnixNano()/100+uuidEpoch, uint32(sum>>48), node[2:])
}

// historyRow is what acct_history keeps of a record: the session it belongs to, as merged
// (for what the record does not repeat: user, Class, framed IP, start time), with the
// record's own time, counters and state. An older record replayed after later ones keeps
// its own counters, not theirs (billing reads them, and a copy must write the same row); a
// record without counters (Accounting-On's Stops, a NAS that sends none) shows the last known.
func historyRow(k session.Kind, in, s *session.Session) *session.Session {
	h := *s
	h.LastSeen = in.LastSeen
	if k == session.KindStart || in.SessionTime != 0 || in.InputOctets != 0 || in.OutputOctets != 0 {
		h.SessionTime, h.InputOctets, h.OutputOctets = in.SessionTime, in.InputOctets, in.OutputOctets
		h.InputPackets, h.OutputPackets = in.InputPackets, in.OutputPackets
	}
	if len(in.MonitoringUsage) > 0 {
		h.MonitoringUsage = in.MonitoringUsage
	}
	h.State, h.StopTime, h.TerminateCause = session.Active, time.Time{}, 0
	if k == session.KindStop {
		h.State, h.StopTime, h.TerminateCause = session.Stopped, in.LastSeen, s.TerminateCause
		if in.TerminateCause != 0 {
			h.TerminateCause = in.TerminateCause
		}
	}
	return &h
}

// sameRow reports whether two rows hold the same values (times at Cassandra's millisecond
// precision), i.e. whether writing b over a would change nothing.
func sameRow(a, b *session.Session) bool {
	ms := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixMilli()
	}
	return a.Key == b.Key && a.UserName == b.UserName && a.State == b.State &&
		a.ClientName == b.ClientName && a.NASIPAddress == b.NASIPAddress &&
		a.NASIdentifier == b.NASIdentifier && a.NASPort == b.NASPort &&
		a.NASPortID == b.NASPortID && a.NASPortType == b.NASPortType &&
		a.ServiceType == b.ServiceType && a.FramedProtocol == b.FramedProtocol &&
		a.FramedIP == b.FramedIP && a.FramedIPv6Prefix == b.FramedIPv6Prefix &&
		a.CallingStationID == b.CallingStationID && a.CalledStationID == b.CalledStationID &&
		a.AcctMultiSessionID == b.AcctMultiSessionID && string(a.Class) == string(b.Class) &&
		ms(a.StartTime) == ms(b.StartTime) && ms(a.LastSeen) == ms(b.LastSeen) &&
		ms(a.StopTime) == ms(b.StopTime) && a.SessionTime == b.SessionTime &&
		a.InputOctets == b.InputOctets && a.OutputOctets == b.OutputOctets &&
		a.InputPackets == b.InputPackets && a.OutputPackets == b.OutputPackets &&
		a.TerminateCause == b.TerminateCause && a.InterimInterval == b.InterimInterval &&
		a.DisconnectReason == b.DisconnectReason && a.DelegatedIPv6Prefix == b.DelegatedIPv6Prefix &&
		a.FramedIPv6Address == b.FramedIPv6Address && a.FramedInterfaceID == b.FramedInterfaceID &&
		a.NASIPv6Address == b.NASIPv6Address && maps.Equal(a.MonitoringUsage, b.MonitoringUsage) &&
		slices.Equal(a.MonitoringExhausted, b.MonitoringExhausted) && a.GxThrottled == b.GxThrottled
}
