package diameter

import (
	"bytes"
	"net"
	"testing"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// FuzzDecode feeds arbitrary bytes to the decode path a peer's message takes (our framing,
// go-diameter's decoder, then what the base protocol reads from it): nothing may panic.
func FuzzDecode(f *testing.F) {
	for _, m := range []*diam.Message{cer("pcef.test", GxApplicationID), request(cmdDWR, 0, "p"), request(272, GxApplicationID, "p")} {
		b, _ := m.Serialize()
		f.Add(b)
	}
	s := &Server{opt: Options{Apps: map[uint32]Handler{GxApplicationID: nil}, Metrics: NewMetrics(metrics.Factory{}, metrics.New(metrics.Factory{}))}}
	f.Fuzz(func(t *testing.T, b []byte) {
		frame, err := readFrame(bytes.NewReader(b))
		if err != nil {
			return
		}
		m, code, _ := decode(frame)
		if code != 0 {
			return
		}
		host, realm := identity(m)
		_ = allowed([]Peer{{OriginHost: host}}, host, realm, net.IPv4(127, 0, 0, 1))
		_ = s.sharesApp(m)
		_ = commandName(m)
	})
}

// FuzzHostileRequest feeds well-framed requests (a sound header: Gx CCR, R bit; then the
// fuzzer's AVP bytes, the first a Session-Id) to the decode path and checks the answer
// against RFC 6733 rather than only "no panic": the Result-Code is one of §7.1's for the
// case — 5014 (a length), 5001 (an unknown AVP with M), 5004 (a value) — or the request is
// usable and its AVPs all decode; 5014 and 5001 name the AVP in Failed-AVP; the answer
// serializes, decodes, is an answer (no R bit) to the same Hop-by-Hop-Id without the E bit
// (no 3xxx), and carries the request's Session-Id (a 5004's Failed-AVP, a copy of an AVP that
// does not decode, aside).
func FuzzHostileRequest(f *testing.F) {
	sid := sessionIDAVP("pcef.test;1;1")
	f.Add(bytes.Join(originAVPs(), nil))
	f.Add(rawAVP(codeCCRequestNumber, mandatoryBit, 8+3, []byte{0, 0, 7}))
	f.Add(rawAVP(codeCCRequestNumber, mandatoryBit, 200, []byte{0, 0, 0, 1}))
	f.Add(rawAVP(unknownCode, mandatoryBit, 9, []byte{1}))
	f.Add(rawAVP(codeProxyInfo, mandatoryBit, 8+12, rawAVP(codeProxyHost, mandatoryBit, 30, []byte("dra"))))
	f.Add(rawAVP(257, mandatoryBit, 11, []byte{0, 1, 2}))
	id := Identity{Host: ourHost, Realm: ourRealm}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 4096 {
			return
		}
		frame := rawRequest(4242, sid, body)
		if len(frame)%4 != 0 {
			return // not well framed: readFrame refuses it, the connection closes
		}
		m, code, failed := decode(frame)
		switch code {
		case 0:
			if m == nil || m.Header.HopByHopID != 4242 {
				t.Fatal("usable request lost")
			}
			return
		case rfcInvalidAVPLength, rfcAVPUnsupported:
			if failed == nil {
				t.Fatalf("%d without the AVP for Failed-AVP", code)
			}
		case rfcInvalidAVPValue:
		default:
			t.Fatalf("Result-Code %d for a well-framed Gx request", code)
		}
		ans := id.undecodableAnswer(frame, code, failed)
		if failed != nil && code == rfcInvalidAVPValue {
			// §7.5: a 5004's Failed-AVP is a copy of the offending AVP, which by definition
			// does not decode: the rest of the answer is checked without it.
			if f, err := ans.FindAVP(codeFailedAVP, 0); err != nil || f == nil {
				t.Fatal("5004 without its Failed-AVP")
			}
			ans.DeleteAVP(codeFailedAVP, 0)
		}
		b, err := ans.Serialize()
		if err != nil {
			t.Fatalf("answer %d not serialized: %v", code, err)
		}
		a, err := diam.ReadMessage(bytes.NewReader(b), dict.Default)
		if err != nil {
			t.Fatalf("answer %d does not decode: %v", code, err)
		}
		if a.Header.HopByHopID != 4242 || a.Header.CommandFlags&(diam.RequestFlag|rfcErrorBit) != 0 {
			t.Fatalf("answer header %+v", a.Header)
		}
		rc, err := a.FindAVP(avp.ResultCode, 0)
		if err != nil || uint32(rc.Data.(datatype.Unsigned32)) != code {
			t.Fatalf("answer Result-Code %v, want %d", rc, code)
		}
		if s, err := a.FindAVP(codeSessionID, 0); err != nil || string(s.Data.(datatype.UTF8String)) != "pcef.test;1;1" {
			t.Fatalf("answer %d without the request's Session-Id", code)
		}
	})
}
