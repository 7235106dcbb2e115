package diameter

import (
	"encoding/binary"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"
)

// Result-Codes as RFC 6733 §7.1 numbers them, written here from the RFC's text rather than
// taken from our constants or go-diameter's.
const (
	rfcSuccess             = 2001 // §7.1.2 DIAMETER_SUCCESS
	rfcCommandUnsupported  = 3001 // §7.1.3
	rfcUnableToDeliver     = 3002 // §7.1.3
	rfcRealmNotServed      = 3003 // §7.1.3
	rfcApplicationUnsupp   = 3007 // §7.1.3
	rfcInvalidHdrBits      = 3008 // §7.1.3
	rfcAVPUnsupported      = 5001 // §7.1.5
	rfcInvalidAVPValue     = 5004 // §7.1.5
	rfcMissingAVP          = 5005 // §7.1.5
	rfcInvalidAVPLength    = 5014 // §7.1.5
	rfcErrorBit            = 0x20 // §3: the E bit of the command flags
	codeSessionID          = 263  // §8.8
	codeProxyInfo          = 284  // §6.7.2
	codeProxyHost          = 280  // §6.7.3
	codeProxyState         = 33   // §6.7.4
	codeFailedAVP          = 279  // §7.5
	codeCCRequestNumber    = 415  // RFC 4006 §8.2
	codeVendorID           = 266  // §5.3.3
	codeDestinationHost    = 293  // §6.5
	codeDestinationRealm   = 283  // §6.6
	mandatoryBit           = 0x40 // §4.1 the M bit
	vendorBit              = 0x80 // §4.1 the V bit
	headerLength           = 20   // §3
	ourHost, ourRealm      = "pcrf.test", "test"
	otherHost, otherRealm  = "pcrf.elsewhere", "elsewhere"
	servedHost             = "pcrf.dc2.test"
	gxApp                  = 16777238 // TS 29.212 §5.1
	ccrCode                = 272      // RFC 4006 §3.1
	unknownCode            = 16777000 // no dictionary has it
	unknownCodeOtherVendor = 424242
)

func sessionRequest(sid string, avps ...*diam.AVP) *diam.Message {
	m := diam.NewRequest(ccrCode, gxApp, dict.Default)
	m.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String(sid))
	m.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity("pcef.test"))
	m.NewAVP(avp.OriginRealm, avp.Mbit, 0, datatype.DiameterIdentity("test"))
	for _, a := range avps {
		m.AddAVP(a)
	}
	return m
}

// rawRequest is a request frame whose AVPs are raw bytes (lengths as the test wants them).
func rawRequest(hopByHop uint32, avps ...[]byte) []byte {
	var body []byte
	for _, a := range avps {
		body = append(body, a...)
	}
	frame := make([]byte, headerLength, headerLength+len(body))
	frame = append(frame, body...)
	binary.BigEndian.PutUint32(frame[0:4], uint32(len(frame)))
	frame[0] = 1
	binary.BigEndian.PutUint32(frame[4:8], ccrCode)
	frame[4] = diam.RequestFlag
	binary.BigEndian.PutUint32(frame[8:12], gxApp)
	binary.BigEndian.PutUint32(frame[12:16], hopByHop)
	binary.BigEndian.PutUint32(frame[16:20], hopByHop+1)
	return frame
}

// rawAVP is one AVP, vendor 0, with the length field given (padding added to 4 octets).
func rawAVP(code uint32, flags byte, length int, payload []byte) []byte {
	b := make([]byte, 8, 8+len(payload)+3)
	binary.BigEndian.PutUint32(b[0:4], code)
	b[4] = flags
	b[5], b[6], b[7] = byte(length>>16), byte(length>>8), byte(length)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func sessionIDAVP(sid string) []byte {
	return rawAVP(codeSessionID, mandatoryBit, 8+len(sid), []byte(sid))
}

func originAVPs() [][]byte {
	return [][]byte{rawAVP(264, mandatoryBit, 8+9, []byte("pcef.test")), rawAVP(296, mandatoryBit, 8+4, []byte("test"))}
}

func sendRaw(t *testing.T, c net.Conn, frame []byte) *diam.Message {
	t.Helper()
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	a, err := diam.ReadMessage(c, dict.Default)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if a.Header.HopByHopID != binary.BigEndian.Uint32(frame[12:16]) {
		t.Fatalf("answer to hop-by-hop %d, want %d", a.Header.HopByHopID, binary.BigEndian.Uint32(frame[12:16]))
	}
	return a
}

// failedAVPs are the AVPs inside the answer's Failed-AVP.
func failedAVPs(a *diam.Message) []*diam.AVP {
	f, err := a.FindAVP(codeFailedAVP, 0)
	if err != nil || f == nil {
		return nil
	}
	if g, ok := f.Data.(*diam.GroupedAVP); ok {
		return g.AVP
	}
	return nil
}

func wantSessionID(t *testing.T, a *diam.Message, sid string) {
	t.Helper()
	got, err := a.FindAVP(codeSessionID, 0)
	if err != nil || got == nil || string(got.Data.(datatype.UTF8String)) != sid {
		t.Errorf("answer without the request's Session-Id %q (RFC 6733 §6.2): %s", sid, a)
	}
}

func openPeer(t *testing.T) (*Server, net.Conn) {
	t.Helper()
	s, _ := startServer(t)
	c := dialPeer(t, s)
	if code := resultCode(t, exchange(t, c, cer("pcef.test", GxApplicationID))); code != rfcSuccess {
		t.Fatalf("CEA %d", code)
	}
	return s, c
}

// RFC 6733 §6.2: an answer carries the request's Proxy-Info AVPs, in their order, and its
// Session-Id — error answers too.
func TestProxyInfoAndSessionIdInAnswers(t *testing.T) {
	_, c := openPeer(t)
	proxy := func(host, state string) *diam.AVP {
		return diam.NewAVP(codeProxyInfo, mandatoryBit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
			diam.NewAVP(codeProxyHost, mandatoryBit, 0, datatype.DiameterIdentity(host)),
			diam.NewAVP(codeProxyState, mandatoryBit, 0, datatype.OctetString(state)),
		}})
	}
	for _, tc := range []struct {
		name string
		req  *diam.Message
		want uint32
	}{
		{"2001", sessionRequest("s;proxy;1", proxy("dra1.test", "a1"), proxy("dra2.test", "b2")), rfcSuccess},
		{"3007", func() *diam.Message {
			m := diam.NewRequest(ccrCode, 4, dict.Default) // DCCA, not served
			m.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String("s;proxy;1"))
			m.NewAVP(avp.OriginHost, avp.Mbit, 0, datatype.DiameterIdentity("pcef.test"))
			m.AddAVP(proxy("dra1.test", "a1"))
			m.AddAVP(proxy("dra2.test", "b2"))
			return m
		}(), rfcApplicationUnsupp},
	} {
		a := exchange(t, c, tc.req)
		if code := resultCode(t, a); code != tc.want {
			t.Fatalf("%s: answer %d", tc.name, code)
		}
		wantSessionID(t, a, "s;proxy;1")
		var got []string
		for _, p := range a.AVP {
			if p.Code != codeProxyInfo {
				continue
			}
			for _, in := range p.Data.(*diam.GroupedAVP).AVP {
				if in.Code == codeProxyState {
					got = append(got, string(in.Data.(datatype.OctetString)))
				}
			}
		}
		if len(got) != 2 || got[0] != "a1" || got[1] != "b2" {
			t.Errorf("%s: Proxy-Info states echoed %v, want [a1 b2] (RFC 6733 §6.2)", tc.name, got)
		}
	}
}

// RFC 6733 §7.1.5: an AVP whose length overruns the message, or a fixed-size AVP of another
// length, is 5014 DIAMETER_INVALID_AVP_LENGTH with the AVP in Failed-AVP; the answer keeps
// the Session-Id; the connection stays up.
func TestInvalidAVPLength(t *testing.T) {
	_, c := openPeer(t)
	sid := "s;len;1"
	for _, tc := range []struct {
		name     string
		frame    []byte
		failCode uint32
	}{
		// CC-Request-Number (Unsigned32) of 3 octets.
		{"3-octet Unsigned32", rawRequest(101, sessionIDAVP(sid), originAVPs()[0], originAVPs()[1],
			rawAVP(codeCCRequestNumber, mandatoryBit, 8+3, []byte{0, 0, 7})), codeCCRequestNumber},
		// CC-Request-Number (Unsigned32) of 8 octets.
		{"8-octet Unsigned32", rawRequest(102, sessionIDAVP(sid), originAVPs()[0], originAVPs()[1],
			rawAVP(codeCCRequestNumber, mandatoryBit, 8+8, make([]byte, 8))), codeCCRequestNumber},
		// The last AVP says 200 octets; the message ends after 12.
		{"overrun", rawRequest(103, sessionIDAVP(sid), originAVPs()[0], originAVPs()[1],
			rawAVP(codeCCRequestNumber, mandatoryBit, 200, []byte{0, 0, 0, 1})), codeCCRequestNumber},
		// An AVP length below its header.
		{"under the header", rawRequest(104, sessionIDAVP(sid), originAVPs()[0], originAVPs()[1],
			rawAVP(codeCCRequestNumber, mandatoryBit, 4, []byte{0, 0, 0, 1})), codeCCRequestNumber},
	} {
		a := sendRaw(t, c, tc.frame)
		if code := resultCode(t, a); code != rfcInvalidAVPLength {
			t.Errorf("%s: answer %d, want 5014 (RFC 6733 §7.1.5)", tc.name, code)
			continue
		}
		wantSessionID(t, a, sid)
		if f := failedAVPs(a); len(f) != 1 || f[0].Code != tc.failCode {
			t.Errorf("%s: Failed-AVP %v, want the AVP %d", tc.name, f, tc.failCode)
		}
	}
	if got := resultCode(t, exchange(t, c, request(cmdDWR, 0, "pcef.test"))); got != rfcSuccess {
		t.Fatalf("connection unusable after the bad lengths: DWA %d", got)
	}
}

// RFC 6733 §4.1: an AVP the receiver does not support, with the M bit, rejects the request
// with 5001 DIAMETER_AVP_UNSUPPORTED naming it in Failed-AVP; without the M bit it is
// ignored.
func TestUnknownMandatoryAVP(t *testing.T) {
	_, c := openPeer(t)
	a := exchange(t, c, sessionRequest("s;unknown;1", diam.NewAVP(unknownCode, mandatoryBit, 0, datatype.OctetString("x"))))
	if code := resultCode(t, a); code != rfcAVPUnsupported {
		t.Fatalf("unknown AVP with M: %d, want 5001", code)
	}
	wantSessionID(t, a, "s;unknown;1")
	if f := failedAVPs(a); len(f) != 1 || f[0].Code != unknownCode {
		t.Fatalf("Failed-AVP %v, want the unknown AVP", f)
	}
	inGroup := sessionRequest("s;unknown;2", diam.NewAVP(codeProxyInfo, mandatoryBit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(codeProxyHost, mandatoryBit, 0, datatype.DiameterIdentity("dra.test")),
		diam.NewAVP(codeProxyState, mandatoryBit, 0, datatype.OctetString("s")),
		diam.NewAVP(unknownCodeOtherVendor, mandatoryBit|vendorBit, 99, datatype.OctetString("x")),
	}}))
	if code := resultCode(t, exchange(t, c, inGroup)); code != rfcAVPUnsupported {
		t.Fatalf("unknown AVP with M inside a grouped AVP: %d, want 5001", code)
	}
	if code := resultCode(t, exchange(t, c, sessionRequest("s;unknown;3", diam.NewAVP(unknownCode, 0, 0, datatype.OctetString("x"))))); code != rfcSuccess {
		t.Fatalf("unknown AVP without M: %d, want 2001", code)
	}
}

// RFC 6733 §3 and §7.1.3: a request with the E bit is answered 3008
// DIAMETER_INVALID_HDR_BITS (an answer with the E bit, as every 3xxx answer).
func TestRequestWithErrorBit(t *testing.T) {
	_, c := openPeer(t)
	m := sessionRequest("s;ebit;1")
	m.Header.CommandFlags |= rfcErrorBit
	a := exchange(t, c, m)
	if code := resultCode(t, a); code != rfcInvalidHdrBits {
		t.Fatalf("request with the E bit: %d, want 3008", code)
	}
	if a.Header.CommandFlags&diam.RequestFlag != 0 || a.Header.CommandFlags&rfcErrorBit == 0 {
		t.Fatalf("answer flags %08b", a.Header.CommandFlags)
	}
	// A 2001 never carries the E bit.
	a = exchange(t, c, sessionRequest("s;ebit;2"))
	if code := resultCode(t, a); code != rfcSuccess || a.Header.CommandFlags&rfcErrorBit != 0 {
		t.Fatalf("answer %d with flags %08b", code, a.Header.CommandFlags)
	}
}

// RFC 6733 §6.1.4 with our design (any node serves any session of the realm): a request for
// our realm is served whatever node of it is named, when Destination-Host is ours (any
// case) or one of the served hosts (the other data centers' identities); another host of
// our realm is 3002 DIAMETER_UNABLE_TO_DELIVER, another realm 3003
// DIAMETER_REALM_NOT_SERVED.
func TestDestination(t *testing.T) {
	calls := 0
	s, err := Listen("127.0.0.1:0", Options{OriginHost: ourHost, OriginRealm: ourRealm, ServedHosts: []string{servedHost},
		Peers: []Peer{{OriginHost: "PCEF.Test"}}, // DiameterIdentity is an FQDN: case-insensitive
		Apps: map[uint32]Handler{GxApplicationID: handlerFunc(func(_ PeerInfo, m *diam.Message) (*diam.Message, uint32) {
			calls++
			return Identity{Host: ourHost, Realm: ourRealm}.Answer(m, rfcSuccess), rfcSuccess
		})}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	c := dialPeer(t, s)
	if code := resultCode(t, exchange(t, c, cer("pcef.test", GxApplicationID))); code != rfcSuccess {
		t.Fatalf("CER from pcef.test against the peer PCEF.Test: %d, want 2001 (case-insensitive)", code)
	}
	dest := func(host, realm string) *diam.Message {
		var avps []*diam.AVP
		if realm != "" {
			avps = append(avps, diam.NewAVP(codeDestinationRealm, mandatoryBit, 0, datatype.DiameterIdentity(realm)))
		}
		if host != "" {
			avps = append(avps, diam.NewAVP(codeDestinationHost, mandatoryBit, 0, datatype.DiameterIdentity(host)))
		}
		return sessionRequest("s;dest", avps...)
	}
	for _, tc := range []struct {
		host, realm string
		want        uint32
	}{
		{"", ourRealm, rfcSuccess},
		{"", "TEST", rfcSuccess},
		{ourHost, ourRealm, rfcSuccess},
		{"PCRF.Test", ourRealm, rfcSuccess},
		{servedHost, ourRealm, rfcSuccess},
		{"pcrf.other.test", ourRealm, rfcUnableToDeliver},
		{"", otherRealm, rfcRealmNotServed},
		{otherHost, otherRealm, rfcRealmNotServed},
	} {
		a := exchange(t, c, dest(tc.host, tc.realm))
		if code := resultCode(t, a); code != tc.want {
			t.Errorf("Destination-Host %q Destination-Realm %q: %d, want %d", tc.host, tc.realm, code, tc.want)
		}
	}
	if calls != 5 {
		t.Errorf("%d requests reached the application, want the 5 served", calls)
	}
}

type handlerFunc func(PeerInfo, *diam.Message) (*diam.Message, uint32)

func (f handlerFunc) ServeDiameter(r *Request) (*diam.Message, uint32) { return f(r.Peer, r.Message) }

// RFC 6733 §5.3.3: the CEA's Vendor-Id is the enterprise number of the Diameter software's
// vendor, and "a Vendor-Id value of zero in the CER or CEA message is reserved and indicates
// that this field is ignored". OpenAAA has no enterprise number of its own: without
// diameter.vendorId the CEA carries 0, the RFC's value for that (freeDiameter's own CER
// does too), as the one AVP §5.3.2 requires, and the node does not warn about it; a
// configured number is sent instead.
func TestCEAVendorID(t *testing.T) {
	for _, tc := range []struct {
		configured, want uint32
	}{{0, 0}, {99999, 99999}} {
		var log strings.Builder
		s, err := Listen("127.0.0.1:0", Options{OriginHost: ourHost, OriginRealm: ourRealm, VendorID: tc.configured,
			Peers: []Peer{{OriginHost: "pcef.test"}}, Apps: map[uint32]Handler{GxApplicationID: echoApp{new(atomic.Int64)}},
			Log: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			t.Fatal(err)
		}
		a := exchange(t, dialPeer(t, s), cer("pcef.test", GxApplicationID))
		_ = s.Close()
		var got []*diam.AVP
		for _, x := range a.AVP {
			if x.Code == codeVendorID {
				got = append(got, x)
			}
		}
		if len(got) != 1 || uint32(got[0].Data.(datatype.Unsigned32)) != tc.want || got[0].Flags != avp.Mbit {
			t.Errorf("vendorId %d configured: the CEA's Vendor-Id AVPs are %v, want one, %d, with the M bit only", tc.configured, got, tc.want)
		}
		if log.Len() > 0 {
			t.Errorf("vendorId %d configured: Listen warned: %s", tc.configured, log.String())
		}
	}
}
