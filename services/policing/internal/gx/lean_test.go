package gx

import (
	"bytes"
	"encoding/binary"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"

	"github.com/openaaa/openaaa/services/policing/internal/diameter"
)

// leanSamples are CCRs with every AVP the CCR's decoding reads, in the types a PCEF sends and
// in others the dictionary gives their codes.
func leanSamples() []*diam.Message {
	features := func(flags uint8, list uint32) *diam.AVP {
		return diam.NewAVP(avp.SupportedFeatures, flags, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
			diam.NewAVP(avp.VendorID, avp.Mbit, 0, datatype.Unsigned32(Vendor3GPP)),
			diam.NewAVP(avp.FeatureListID, avp.Vbit, Vendor3GPP, datatype.Unsigned32(featureListGx)),
			diam.NewAVP(avp.FeatureList, avp.Vbit, Vendor3GPP, datatype.Unsigned32(list)),
		}})
	}
	report := diam.NewAVP(1018, mv, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(avp.ChargingRuleName, mv, Vendor3GPP, datatype.OctetString("internet")),
		diam.NewAVP(avp.ChargingRuleBaseName, mv, Vendor3GPP, datatype.UTF8String("base")),
		diam.NewAVP(1019, mv, Vendor3GPP, datatype.Enumerated(1)),
		diam.NewAVP(1031, mv, Vendor3GPP, datatype.Enumerated(1)),
	}})
	split := diam.NewAVP(avp.UsageMonitoringInformation, mv, Vendor3GPP, &diam.GroupedAVP{AVP: []*diam.AVP{
		diam.NewAVP(avp.MonitoringKey, mv, Vendor3GPP, datatype.OctetString("mk2")),
		diam.NewAVP(avp.UsedServiceUnit, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
			diam.NewAVP(avp.CCInputOctets, avp.Mbit, 0, datatype.Unsigned64(1<<33)),
			diam.NewAVP(avp.CCOutputOctets, avp.Mbit, 0, datatype.Unsigned64(7)),
		}}),
	}})
	return []*diam.Message{
		ccr("pgw.test;1;i", Initial, 0, append(initialAVPs(), features(avp.Mbit|avp.Vbit, 3), features(avp.Vbit, 1<<5),
			diam.NewAVP(avp.SubscriptionID, avp.Mbit, 0, &diam.GroupedAVP{AVP: []*diam.AVP{
				diam.NewAVP(avp.SubscriptionIDType, avp.Mbit, 0, datatype.Enumerated(subscriptionE164)),
				diam.NewAVP(avp.SubscriptionIDData, avp.Mbit, 0, datatype.UTF8String("15551234567")),
			}}),
			diam.NewAVP(avp.FramedIPv6Prefix, avp.Mbit, 0, datatype.OctetString([]byte{0, 64, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 7})),
			diam.NewAVP(avp.EventTimestamp, avp.Mbit, 0, datatype.Time(time.Unix(1800000000, 0))),
			diam.NewAVP(avp.EventTrigger, mv, Vendor3GPP, datatype.Enumerated(13)),
			diam.NewAVP(avp.EventTrigger, mv, Vendor3GPP, datatype.Enumerated(26)),
		)...),
		ccr("pgw.test;1;u", Update, 70000, usedOctets(1<<20), split, report,
			diam.NewAVP(avp.EventTimestamp, avp.Mbit, 0, datatype.Time(time.Unix(2200000000, 0))), // past 2036
			diam.NewAVP(avp.DestinationHost, avp.Mbit, 0, datatype.DiameterIdentity("pcrf.test"))),
		ccr("pgw.test;1;t", Termination, 3, diam.NewAVP(avp.FramedIPAddress, avp.Mbit, 0, datatype.Address(net.IPv4(10, 1, 2, 3)))),
		ccr("pgw.test;1;x", 9, 1),
	}
}

// leanFrame is a Gx CCR's frame with the AVPs body (nil when its length is not a whole frame's).
func leanFrame(body []byte) []byte {
	frame := make([]byte, diam.HeaderLength, diam.HeaderLength+len(body))
	frame = append(frame, body...)
	if len(frame)%4 != 0 || len(frame) > 1<<20 {
		return nil
	}
	binary.BigEndian.PutUint32(frame[0:4], uint32(len(frame)))
	frame[0] = 1
	binary.BigEndian.PutUint32(frame[4:8], 272)
	frame[4] = diam.RequestFlag | diam.ProxiableFlag
	binary.BigEndian.PutUint32(frame[8:12], diameter.GxApplicationID)
	binary.BigEndian.PutUint32(frame[12:16], 7)
	binary.BigEndian.PutUint32(frame[16:20], 7)
	return frame
}

// FuzzDecodeLean: a CCR served from its bytes (diameter.DecodeLean, decodeLean) reads as the
// same CCR as the message go-diameter decodes from them (DecodeCCR, the path of any other
// request), its values taken from the head as from the bytes.
func FuzzDecodeLean(f *testing.F) {
	if err := LoadDictionary(); err != nil {
		f.Fatal(err)
	}
	for _, m := range leanSamples() {
		b, err := m.Serialize()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[diam.HeaderLength:])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		frame := leanFrame(body)
		if frame == nil {
			return
		}
		head, avps := diameter.DecodeLean(frame, nil)
		if head == nil {
			return
		}
		full, err := diam.ReadMessage(bytes.NewReader(frame), dict.Default)
		if err != nil || full.DecodeErr != nil {
			t.Fatalf("DecodeLean took a request go-diameter refuses (%v %v)", err, full.DecodeErr)
		}
		known := [2]string{1: "pgw.test"}
		if sid := diameter.SessionIDAVP(head); sid != nil {
			known[0] = diameter.String(sid)
		}
		got, want := decodeLean(avps, known), DecodeCCR(full)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("from the bytes %+v\nfrom the message %+v", got, want)
		}
	})
}

// TestDecodeLeanSamples: the samples are lean requests, and read as their messages say.
func TestDecodeLeanSamples(t *testing.T) {
	if err := LoadDictionary(); err != nil {
		t.Fatal(err)
	}
	var got []CCR
	for _, m := range leanSamples() {
		b, _ := m.Serialize()
		head, avps := diameter.DecodeLean(b, nil)
		if head == nil {
			t.Fatalf("%s: not lean", m)
		}
		got = append(got, decodeLean(avps, [2]string{}))
	}
	i, u, x := got[0], got[1], got[3] // got[2]: an Address where the dictionary has an OctetString
	if i.IMSI != "001010000000001" || i.MSISDN != "15551234567" || i.FramedIP.String() != "10.0.0.7" ||
		i.FramedIPv6Prefix.String() != "2001:db8:0:7::/64" || i.APN != "internet.apn" || !i.EventTime.Equal(time.Unix(1800000000, 0)) ||
		!reflect.DeepEqual(i.EventTriggers, []uint32{13, 26}) || i.Features != 3|1<<5 || i.FeaturesRequired != 3 {
		t.Errorf("CCR-I %+v", i)
	}
	if u.RequestNumber != 70000 || len(u.Usage) != 2 || u.Usage[0].Total != 1<<20 || u.Usage[1] != (Usage{MonitoringKey: "mk2", Input: 1 << 33, Output: 7}) ||
		!reflect.DeepEqual(u.RuleReports, []RuleReport{{Rules: []string{"internet", "base"}, Status: 1, FailureCode: 1}}) ||
		!u.EventTime.Equal(time.Unix(2200000000, 0)) {
		t.Errorf("CCR-U %+v", u)
	}
	if x.RequestType != 9 || x.Missing != 0 {
		t.Errorf("CCR of type 9: %+v", x)
	}
}
