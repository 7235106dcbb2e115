package diameter

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// FuzzCodec: decodeChecked (codec.go) builds, for every request checkAVPs lets through, what
// go-diameter's decoding builds — the same AVPs, fields, data types and values — or gives the
// request up to it; DecodeLean (lean.go) takes only requests decodeChecked builds, with their
// header and Session-Id; and serialize writes what go-diameter's Serialize writes.
func FuzzCodec(f *testing.F) {
	sid := sessionIDAVP("pcef.test;1;1")
	f.Add(bytes.Join(originAVPs(), nil))
	f.Add(rawAVP(codeCCRequestNumber, mandatoryBit, 12, []byte{0, 0, 0, 7}))
	f.Add(rawAVP(codeProxyInfo, mandatoryBit, 8+12, rawAVP(codeProxyHost, mandatoryBit, 11, []byte("dra"))))
	f.Add(rawAVP(257, mandatoryBit, 14, []byte{0, 1, 127, 0, 0, 1}))
	f.Add(rawAVP(unknownCode, 0, 9, []byte{1}))
	for _, m := range codecSamples() {
		b, _ := m.Serialize()
		f.Add(b[diam.HeaderLength:])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 4096 {
			return
		}
		frame := rawRequest(4242, sid, body)
		if len(frame)%4 != 0 {
			return
		}
		h, err := diam.DecodeHeader(frame[:diam.HeaderLength])
		if err != nil || !noFault(frame[diam.HeaderLength:], h.ApplicationID, dict.Default) {
			return
		}
		fast := decodeChecked(h, frame, dict.Default)
		if head, _ := DecodeLean(frame, nil); head != nil {
			// A lean request (lean.go) is one decodeChecked decodes, and its head is the
			// decoded message's header and Session-Id AVPs.
			if fast == nil {
				t.Fatal("DecodeLean took a request decodeChecked gives up")
			}
			var sids []*diam.AVP
			for _, a := range fast.AVP {
				if a.Code == avp.SessionID {
					sids = append(sids, a)
				}
			}
			sameAVPs(t, "head", head.AVP, sids)
			if *head.Header != *fast.Header {
				t.Fatalf("head's header %+v, decoded %+v", head.Header, fast.Header)
			}
		}
		if fast == nil {
			return
		}
		slow, err := diam.ReadMessage(bytes.NewReader(frame), dict.Default)
		if err != nil || slow.DecodeErr != nil {
			t.Fatalf("decodeChecked took a request go-diameter refuses (%v %v)", err, slow.DecodeErr)
		}
		sameAVPs(t, "", fast.AVP, slow.AVP)
		if *fast.Header != *slow.Header {
			t.Fatalf("header %+v, go-diameter %+v", fast.Header, slow.Header)
		}
		sameBytes(t, fast)
	})
}

func sameAVPs(t *testing.T, at string, got, want []*diam.AVP) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d AVPs, go-diameter %d", at, len(got), len(want))
	}
	for i, g := range got {
		w := want[i]
		where := fmt.Sprintf("%s/%d(%d)", at, i, w.Code)
		if g.Code != w.Code || g.Flags != w.Flags || g.Length != w.Length || g.VendorID != w.VendorID {
			t.Fatalf("%s: %+v, go-diameter %+v", where, g, w)
		}
		if fmt.Sprintf("%T", g.Data) != fmt.Sprintf("%T", w.Data) {
			t.Fatalf("%s: %T, go-diameter %T", where, g.Data, w.Data)
		}
		if gg, ok := g.Data.(*diam.GroupedAVP); ok {
			sameAVPs(t, where, gg.AVP, w.Data.(*diam.GroupedAVP).AVP)
			continue
		}
		if !bytes.Equal(g.Data.Serialize(), w.Data.Serialize()) || g.Data.String() != w.Data.String() {
			t.Fatalf("%s: %v, go-diameter %v", where, g.Data, w.Data)
		}
	}
}

// sameBytes: serialize(m) is m.Serialize().
func sameBytes(t *testing.T, m *diam.Message) {
	t.Helper()
	want, err := m.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	if got := serialize(m); !bytes.Equal(got, want) {
		t.Fatalf("serialize:\n%x\ngo-diameter:\n%x", got, want)
	}
}

// codecSamples are requests and answers of every shape the server reads and writes: a CER
// and its CEA, a CCR with grouped, vendor-specific, Time, Address, Unsigned64 and padded
// AVPs, error answers with Failed-AVP.
func codecSamples() []*diam.Message {
	ccr := request(272, GxApplicationID, "pcef.test")
	ccr.NewAVP(avp.SessionID, avp.Mbit, 0, datatype.UTF8String("pcef.test;1;odd-length"))
	ccr.NewAVP(avp.CCRequestType, avp.Mbit, 0, datatype.Enumerated(2))
	ccr.NewAVP(avp.CCRequestNumber, avp.Mbit, 0, datatype.Unsigned32(70000))
	ccr.NewAVP(avp.EventTimestamp, avp.Mbit, 0, datatype.Time(time.Unix(1800000000, 0)))
	ccr.NewAVP(avp.FramedIPAddress, avp.Mbit, 0, datatype.OctetString([]byte{10, 0, 0, 7}))
	ccr.NewAVP(avp.SubscriptionID, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(avp.SubscriptionIDType, avp.Mbit, 0, datatype.Enumerated(1)),
		diam.NewAVP(avp.SubscriptionIDData, avp.Mbit, 0, datatype.UTF8String("001010000000001")),
	}})
	ccr.NewAVP(avp.UsageMonitoringInformation, avp.Vbit, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(avp.MonitoringKey, avp.Vbit, Vendor3GPP, datatype.OctetString("mk1")),
		diam.NewAVP(avp.UsedServiceUnit, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
			diam.NewAVP(avp.CCTotalOctets, avp.Mbit, 0, datatype.Unsigned64(1<<40)),
		}}),
	}})
	ccr.NewAVP(avp.ProxyInfo, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(avp.ProxyHost, avp.Mbit, 0, datatype.DiameterIdentity("dra.test")),
		diam.NewAVP(avp.ProxyState, avp.Mbit, 0, datatype.OctetString("st")),
	}})
	id := Identity{Host: ourHost, Realm: ourRealm}
	s := &Server{opt: Options{VendorID: 1, ProductName: "OpenAAA", Apps: map[uint32]Handler{GxApplicationID: nil}, Metrics: NewMetrics(metrics.Factory{}, metrics.New(metrics.Factory{}))}, id: id, hostIP: net.IPv4(127, 0, 0, 1)}
	return []*diam.Message{cer("pcef.test", GxApplicationID), ccr, id.Answer(ccr, 2001), s.cea(cer("pcef.test", GxApplicationID), 2001),
		id.FailedAVP(ccr, diam.MissingAVP, avp.CCRequestNumber), id.FailedAVPOf(ccr, diam.InvalidAVPValue, avp.CCRequestType, 0)}
}

func TestCodecSamples(t *testing.T) {
	for _, m := range codecSamples() {
		sameBytes(t, m)
		if m.Header.CommandFlags&diam.RequestFlag == 0 {
			continue
		}
		b, _ := m.Serialize()
		h, _ := diam.DecodeHeader(b[:diam.HeaderLength])
		fast := decodeChecked(h, b, dict.Default)
		if fast == nil {
			t.Fatalf("command %d: not decoded by decodeChecked", m.Header.CommandCode)
		}
		slow, _ := diam.ReadMessage(bytes.NewReader(b), dict.Default)
		sameAVPs(t, "", fast.AVP, slow.AVP)
	}
}
