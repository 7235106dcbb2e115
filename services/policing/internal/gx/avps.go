package gx

import (
	"fmt"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
)

// AVPSpec is one AVP as its specification's table defines it: code, vendor, data type and
// the flag rules ("must" and "must not" of the M and V bits), with the enumeration of an
// Enumerated AVP. Every AVP the Gx server sends is built from this table (avpOf), and a test
// checks every AVP of every answer against it (avps_test.go); tshark checks it again with
// Wireshark's own dictionary.
type AVPSpec struct {
	Name    string
	Code    uint32
	Vendor  uint32
	Type    datatype.TypeID
	Must    uint8 // flags that must be set (avp.Mbit, avp.Vbit); avpOf sets these
	May     uint8 // flags the table leaves to the sender ("may"): avpOf leaves them clear
	MustNot uint8 // flags that must not be set
	// Enum is the specification's enumeration (Enumerated AVPs): value → name.
	Enum map[uint32]string
	// Ref is where the row was transcribed from.
	Ref string
}

type avpKey struct{ code, vendor uint32 }

// Specs is the table, transcribed once from the specifications' AVP tables:
// RFC 6733 §4.5 (base), RFC 4006 §8 table (credit control), TS 29.212 Table 5.3.1 (Gx),
// TS 29.214 Table 5.3.1 and TS 29.229 Table 6.3.1 (Rx and Cx AVPs Gx reuses), for every AVP
// the policy server sends.
var Specs = specTable(
	// RFC 6733 §4.5: base AVPs. Every one "M" must, "V" must not, except Product-Name,
	// Firmware-Revision and Error-Message (M must not).
	AVPSpec{Name: "Session-Id", Code: 263, Type: datatype.UTF8StringType, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 6733 §8.8"},
	AVPSpec{Name: "Origin-Host", Code: 264, Type: datatype.DiameterIdentityType, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 6733 §6.3"},
	AVPSpec{Name: "Origin-Realm", Code: 296, Type: datatype.DiameterIdentityType, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 6733 §6.4"},
	AVPSpec{Name: "Destination-Host", Code: 293, Type: datatype.DiameterIdentityType, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 6733 §6.5"},
	AVPSpec{Name: "Destination-Realm", Code: 283, Type: datatype.DiameterIdentityType, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 6733 §6.6"},
	AVPSpec{Name: "Result-Code", Code: 268, Type: datatype.Unsigned32Type, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 6733 §7.1"},
	AVPSpec{Name: "Failed-AVP", Code: 279, Type: datatype.GroupedType, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 6733 §7.5"},
	AVPSpec{Name: "Error-Message", Code: 281, Type: datatype.UTF8StringType, MustNot: avp.Mbit | avp.Vbit, Ref: "RFC 6733 §7.3"},
	AVPSpec{Name: "Proxy-Info", Code: 284, Type: datatype.GroupedType, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 6733 §6.7.2"},
	AVPSpec{Name: "Proxy-Host", Code: 280, Type: datatype.DiameterIdentityType, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 6733 §6.7.3"},
	AVPSpec{Name: "Proxy-State", Code: 33, Type: datatype.OctetStringType, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 6733 §6.7.4"},
	AVPSpec{Name: "Auth-Application-Id", Code: 258, Type: datatype.Unsigned32Type, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 6733 §6.8"},
	AVPSpec{Name: "Re-Auth-Request-Type", Code: 285, Type: datatype.EnumeratedType, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 6733 §8.12",
		Enum: map[uint32]string{0: "AUTHORIZE_ONLY", 1: "AUTHORIZE_AUTHENTICATE"}},
	AVPSpec{Name: "Host-IP-Address", Code: 257, Type: datatype.AddressType, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 6733 §5.3.5"},
	AVPSpec{Name: "Vendor-Id", Code: 266, Type: datatype.Unsigned32Type, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 6733 §5.3.3"},
	AVPSpec{Name: "Product-Name", Code: 269, Type: datatype.UTF8StringType, MustNot: avp.Mbit | avp.Vbit, Ref: "RFC 6733 §5.3.7"},
	AVPSpec{Name: "Supported-Vendor-Id", Code: 265, Type: datatype.Unsigned32Type, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 6733 §5.3.6"},
	AVPSpec{Name: "Vendor-Specific-Application-Id", Code: 260, Type: datatype.GroupedType, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 6733 §6.11"},

	// TS 29.229 Table 6.3.1 (re-used by Gx, TS 29.212 Table 5.4.0.1, flags kept): Supported-Features
	// V, M may (we send it clear); Feature-List-ID and Feature-List V, M must not.
	AVPSpec{Name: "Supported-Features", Code: 628, Vendor: Vendor3GPP, Type: datatype.GroupedType, Must: avp.Vbit, May: avp.Mbit, Ref: "TS 29.229 §6.3.29"},
	AVPSpec{Name: "Feature-List-ID", Code: 629, Vendor: Vendor3GPP, Type: datatype.Unsigned32Type, Must: avp.Vbit, MustNot: avp.Mbit, Ref: "TS 29.229 §6.3.30"},
	AVPSpec{Name: "Feature-List", Code: 630, Vendor: Vendor3GPP, Type: datatype.Unsigned32Type, Must: avp.Vbit, MustNot: avp.Mbit, Ref: "TS 29.229 §6.3.31"},

	// RFC 4006 §8 (AVP table): M must, V must not.
	AVPSpec{Name: "CC-Request-Number", Code: 415, Type: datatype.Unsigned32Type, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 4006 §8.2"},
	AVPSpec{Name: "CC-Request-Type", Code: 416, Type: datatype.EnumeratedType, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 4006 §8.3",
		Enum: map[uint32]string{1: "INITIAL_REQUEST", 2: "UPDATE_REQUEST", 3: "TERMINATION_REQUEST", 4: "EVENT_REQUEST"}},
	AVPSpec{Name: "CC-Total-Octets", Code: 421, Type: datatype.Unsigned64Type, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 4006 §8.14"},
	AVPSpec{Name: "Granted-Service-Unit", Code: 431, Type: datatype.GroupedType, Must: avp.Mbit, MustNot: avp.Vbit, Ref: "RFC 4006 §8.17"},

	// TS 29.214 Table 5.3.1 (Rx AVPs used in Gx): M,V must.
	AVPSpec{Name: "Flow-Description", Code: 507, Vendor: Vendor3GPP, Type: datatype.IPFilterRuleType, Must: avp.Mbit | avp.Vbit, Ref: "TS 29.214 §5.3.8"},
	AVPSpec{Name: "Max-Requested-Bandwidth-DL", Code: 515, Vendor: Vendor3GPP, Type: datatype.Unsigned32Type, Must: avp.Mbit | avp.Vbit, Ref: "TS 29.214 §5.3.14"},
	AVPSpec{Name: "Max-Requested-Bandwidth-UL", Code: 516, Vendor: Vendor3GPP, Type: datatype.Unsigned32Type, Must: avp.Mbit | avp.Vbit, Ref: "TS 29.214 §5.3.15"},

	// TS 29.212 Table 5.3.1: the Rel-8 Gx AVPs are M,V; those added since (and the QoS
	// AVPs shared with S6a/S9: ARP, Priority-Level, Pre-emption-*, Default-EPS-Bearer-QoS,
	// APN-AMBR) and the usage monitoring AVPs are V, with M must not.
	AVPSpec{Name: "Charging-Rule-Install", Code: 1001, Vendor: Vendor3GPP, Type: datatype.GroupedType, Must: avp.Mbit | avp.Vbit, Ref: "TS 29.212 §5.3.2"},
	AVPSpec{Name: "Charging-Rule-Remove", Code: 1002, Vendor: Vendor3GPP, Type: datatype.GroupedType, Must: avp.Mbit | avp.Vbit, Ref: "TS 29.212 §5.3.3"},
	AVPSpec{Name: "Charging-Rule-Definition", Code: 1003, Vendor: Vendor3GPP, Type: datatype.GroupedType, Must: avp.Mbit | avp.Vbit, Ref: "TS 29.212 §5.3.4"},
	AVPSpec{Name: "Charging-Rule-Base-Name", Code: 1004, Vendor: Vendor3GPP, Type: datatype.UTF8StringType, Must: avp.Mbit | avp.Vbit, Ref: "TS 29.212 §5.3.5"},
	AVPSpec{Name: "Charging-Rule-Name", Code: 1005, Vendor: Vendor3GPP, Type: datatype.OctetStringType, Must: avp.Mbit | avp.Vbit, Ref: "TS 29.212 §5.3.6"},
	AVPSpec{Name: "Event-Trigger", Code: 1006, Vendor: Vendor3GPP, Type: datatype.EnumeratedType, Must: avp.Mbit | avp.Vbit, Ref: "TS 29.212 §5.3.7",
		Enum: eventTriggers},
	AVPSpec{Name: "Precedence", Code: 1010, Vendor: Vendor3GPP, Type: datatype.Unsigned32Type, Must: avp.Mbit | avp.Vbit, Ref: "TS 29.212 §5.3.11"},
	AVPSpec{Name: "QoS-Information", Code: 1016, Vendor: Vendor3GPP, Type: datatype.GroupedType, Must: avp.Mbit | avp.Vbit, Ref: "TS 29.212 §5.3.16"},
	AVPSpec{Name: "Guaranteed-Bitrate-DL", Code: 1025, Vendor: Vendor3GPP, Type: datatype.Unsigned32Type, Must: avp.Mbit | avp.Vbit, Ref: "TS 29.212 §5.3.25"},
	AVPSpec{Name: "Guaranteed-Bitrate-UL", Code: 1026, Vendor: Vendor3GPP, Type: datatype.Unsigned32Type, Must: avp.Mbit | avp.Vbit, Ref: "TS 29.212 §5.3.26"},
	AVPSpec{Name: "QoS-Class-Identifier", Code: 1028, Vendor: Vendor3GPP, Type: datatype.EnumeratedType, Must: avp.Mbit | avp.Vbit, Ref: "TS 29.212 §5.3.17",
		Enum: qciValues},
	AVPSpec{Name: "Allocation-Retention-Priority", Code: 1034, Vendor: Vendor3GPP, Type: datatype.GroupedType, Must: avp.Vbit, MustNot: avp.Mbit, Ref: "TS 29.212 §5.3.32"},
	AVPSpec{Name: "APN-Aggregate-Max-Bitrate-DL", Code: 1040, Vendor: Vendor3GPP, Type: datatype.Unsigned32Type, Must: avp.Vbit, MustNot: avp.Mbit, Ref: "TS 29.212 §5.3.39"},
	AVPSpec{Name: "APN-Aggregate-Max-Bitrate-UL", Code: 1041, Vendor: Vendor3GPP, Type: datatype.Unsigned32Type, Must: avp.Vbit, MustNot: avp.Mbit, Ref: "TS 29.212 §5.3.40"},
	AVPSpec{Name: "Revalidation-Time", Code: 1042, Vendor: Vendor3GPP, Type: datatype.TimeType, Must: avp.Mbit | avp.Vbit, Ref: "TS 29.212 §5.3.41"},
	AVPSpec{Name: "Priority-Level", Code: 1046, Vendor: Vendor3GPP, Type: datatype.Unsigned32Type, Must: avp.Vbit, MustNot: avp.Mbit, Ref: "TS 29.212 §5.3.45"},
	AVPSpec{Name: "Pre-emption-Capability", Code: 1047, Vendor: Vendor3GPP, Type: datatype.EnumeratedType, Must: avp.Vbit, MustNot: avp.Mbit, Ref: "TS 29.212 §5.3.46",
		Enum: map[uint32]string{0: "PRE-EMPTION_CAPABILITY_ENABLED", 1: "PRE-EMPTION_CAPABILITY_DISABLED"}},
	AVPSpec{Name: "Pre-emption-Vulnerability", Code: 1048, Vendor: Vendor3GPP, Type: datatype.EnumeratedType, Must: avp.Vbit, MustNot: avp.Mbit, Ref: "TS 29.212 §5.3.47",
		Enum: map[uint32]string{0: "PRE-EMPTION_VULNERABILITY_ENABLED", 1: "PRE-EMPTION_VULNERABILITY_DISABLED"}},
	AVPSpec{Name: "Default-EPS-Bearer-QoS", Code: 1049, Vendor: Vendor3GPP, Type: datatype.GroupedType, Must: avp.Vbit, MustNot: avp.Mbit, Ref: "TS 29.212 §5.3.48"},
	AVPSpec{Name: "Flow-Information", Code: 1058, Vendor: Vendor3GPP, Type: datatype.GroupedType, Must: avp.Vbit, MustNot: avp.Mbit, Ref: "TS 29.212 §5.3.53"},
	AVPSpec{Name: "Monitoring-Key", Code: 1066, Vendor: Vendor3GPP, Type: datatype.OctetStringType, Must: avp.Vbit, MustNot: avp.Mbit, Ref: "TS 29.212 §5.3.59"},
	AVPSpec{Name: "Usage-Monitoring-Information", Code: 1067, Vendor: Vendor3GPP, Type: datatype.GroupedType, Must: avp.Vbit, MustNot: avp.Mbit, Ref: "TS 29.212 §5.3.60"},
	AVPSpec{Name: "Usage-Monitoring-Level", Code: 1068, Vendor: Vendor3GPP, Type: datatype.EnumeratedType, Must: avp.Vbit, MustNot: avp.Mbit, Ref: "TS 29.212 §5.3.61",
		Enum: map[uint32]string{0: "SESSION_LEVEL", 1: "PCC_RULE_LEVEL", 2: "ADC_RULE_LEVEL"}},
)

// eventTriggers is the Event-Trigger enumeration of TS 29.212 §5.3.7 (the values a PCRF may
// subscribe to in Gx; 8–10 are not used since Rel-8).
var eventTriggers = map[uint32]string{
	0: "SGSN_CHANGE", 1: "QOS_CHANGE", 2: "RAT_CHANGE", 3: "TFT_CHANGE", 4: "PLMN_CHANGE",
	5: "LOSS_OF_BEARER", 6: "RECOVERY_OF_BEARER", 7: "IP-CAN_CHANGE",
	11: "QOS_CHANGE_EXCEEDING_AUTHORIZATION", 12: "RAI_CHANGE", 13: "USER_LOCATION_CHANGE",
	14: "NO_EVENT_TRIGGERS", 15: "OUT_OF_CREDIT", 16: "REALLOCATION_OF_CREDIT",
	17: "REVALIDATION_TIMEOUT", 18: "UE_IP_ADDRESS_ALLOCATE", 19: "UE_IP_ADDRESS_RELEASE",
	20: "DEFAULT_EPS_BEARER_QOS_CHANGE", 21: "AN_GW_CHANGE", 22: "SUCCESSFUL_RESOURCE_ALLOCATION",
	23: "RESOURCE_MODIFICATION_REQUEST", 24: "PGW_TRACE_CONTROL", 25: "UE_TIME_ZONE_CHANGE",
	26: "TAI_CHANGE", 27: "ECGI_CHANGE", 28: "CHARGING_CORRELATION_EXCHANGE",
	29: "APN-AMBR_MODIFICATION_FAILURE", 30: "USER_CSG_INFORMATION_CHANGE",
	33: "USAGE_REPORT", 34: "DEFAULT-EPS-BEARER-QOS_MODIFICATION_FAILURE",
	35: "USER_CSG_HYBRID_SUBSCRIBED_INFORMATION_CHANGE", 36: "USER_CSG_HYBRID_UNSUBSCRIBED_INFORMATION_CHANGE",
	37: "ROUTING_RULE_CHANGE", 38: "MAX_MBR_APN_AMBR_CHANGE", 39: "APPLICATION_START", 40: "APPLICATION_STOP",
	41: "ADC_REVALIDATION_TIMEOUT", 42: "CS_TO_PS_HANDOVER", 43: "UE_LOCAL_IP_ADDRESS_CHANGE", 44: "HENB_LOCAL_IP_ADDRESS_CHANGE",
	45: "ACCESS_NETWORK_INFO_REPORT", 46: "CREDIT_MANAGEMENT_SESSION_FAILURE",
	47: "DEFAULT_QOS_CHANGE", 48: "CHANGE_OF_UE_PRESENCE_IN_PRESENCE_REPORTING_AREA_REPORT",
}

// qciValues is the QoS-Class-Identifier enumeration of TS 29.212 §5.3.17 (TS 23.203
// Table 6.1.7: the standardized QCIs).
var qciValues = map[uint32]string{
	1: "QCI_1", 2: "QCI_2", 3: "QCI_3", 4: "QCI_4", 5: "QCI_5", 6: "QCI_6", 7: "QCI_7", 8: "QCI_8", 9: "QCI_9",
	65: "QCI_65", 66: "QCI_66", 67: "QCI_67", 69: "QCI_69", 70: "QCI_70", 71: "QCI_71", 72: "QCI_72",
	73: "QCI_73", 74: "QCI_74", 75: "QCI_75", 76: "QCI_76", 79: "QCI_79", 80: "QCI_80", 82: "QCI_82",
	83: "QCI_83", 84: "QCI_84", 85: "QCI_85",
}

func specTable(rows ...AVPSpec) map[avpKey]AVPSpec {
	m := make(map[avpKey]AVPSpec, len(rows))
	for _, r := range rows {
		k := avpKey{r.Code, r.Vendor}
		if _, dup := m[k]; dup {
			panic(fmt.Sprintf("gx: AVP %s twice in the table", r.Name))
		}
		m[k] = r
	}
	return m
}

// avpOf builds an AVP with the flags of its row in Specs (vendor 0 first, then 3GPP): the
// only way the Gx server builds one, so that no flag is written twice. An AVP missing from
// the table is a programming error.
func avpOf(code uint32, data datatype.Type) *diam.AVP {
	r := rowOf(code)
	return diam.NewAVP(code, r.flags, r.vendor, data)
}

// rowOf is the row of code in the table (vendor 0 first, then 3GPP): what avpOf and
// ccaWriter write an AVP of that code with. An AVP missing from the table is a programming
// error.
func rowOf(code uint32) row {
	if code < uint32(len(byCode)) && byCode[code].known {
		return byCode[code]
	}
	panic(fmt.Sprintf("gx: AVP %d is not in the table (avps.go)", code))
}

type row struct {
	known  bool
	flags  uint8 // the V bit with a vendor, as diam.NewAVP sets it
	typ    datatype.TypeID
	vendor uint32
}

// byCode is Specs by code (vendor 0 first, then 3GPP), for rowOf on every answer: an index,
// not a map lookup (those were 5% of a CCR-U's CPU).
var byCode = func() (t [2048]row) {
	for _, vendor := range []uint32{Vendor3GPP, 0} {
		for k, s := range Specs {
			if k.vendor == vendor && k.code < uint32(len(t)) {
				t[k.code] = row{known: true, flags: s.Must, typ: s.Type, vendor: s.Vendor}
				if s.Vendor != 0 {
					t[k.code].flags |= avp.Vbit
				}
			}
		}
	}
	return t
}()

// group is a Grouped AVP of the table.
func group(code uint32, children ...*diam.AVP) *diam.AVP {
	return avpOf(code, &diam.GroupedAVP{AVP: children})
}
